"""A field that only ever holds an imported module's attribute (a compiled extension's function looked
up with ``getattr``, ``F.gelu``) is no library model: calling it runs none of the code the program
installed into library classes (:mod:`graphlint.static.libfields`); a field holding what a library
loader returned still may (:mod:`graphlint.static.installed`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from static_helpers import assert_marked, check_fixture, summarize

from graphlint.static.libfields import library_fields

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "libfields"


@pytest.mark.parametrize("name", ["kernel_engine.py", "model_engine.py"])
def test_only_a_field_that_may_hold_a_model_runs_installed_code(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result, FIXTURES, name)


def test_which_fields_hold_an_imported_attribute():
    src = '''
        import torch.nn.functional as F
        from lib import loader

        class A:
            def __init__(self, fn, kind):
                import ext
                self.act = F.gelu
                self.kernel = getattr(ext, "k", None)
                self.passed = fn
                self.model = loader.load(kind)
                self.mixed = F.relu
                self.a, self.b = fn, fn

        class B:
            def __init__(self):
                self.mixed = self.make()
    '''
    (summary,) = summarize({"m.py": src})
    assert library_fields([summary.data]) == {"act", "kernel"}
