"""Code a library runs for the project, each a mechanism with fixtures of its own (branch ``libloop``).

- A project model a library's ``generate`` drives (:mod:`graphlint.static.libloops`): its
  ``forward`` and ``prepare_inputs_for_generation`` are eager entries, the model step of a loop
  outside the checked paths; a model whose ``generate`` is the project's own is not.
- A layer stored in a field of a project subclass of a library block that keeps the library's
  forward (:mod:`graphlint.static.libblocks`): calling the block runs it; a block with a forward
  of its own runs that forward only.
- A method of host data handed a tensor computes on it (``pos_table.emb(where)`` of an optional
  parameter): no Python value written into a tensor (GL306)."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_static_fixture import assert_marked, load
from static_helpers import analyze, check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "libloop"


@pytest.mark.parametrize("name", ["genloop", "libblock", "optmodule"])
def test_each_flow_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))


def test_a_library_generate_loop_makes_the_model_forward_an_eager_entry(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "genloop")
    rated = {(Path(f.path).name, f.line, f.rule): f.severity for f in result.findings}
    assert rated == {("talker.py", 20, "GL204"): "error"}  # not Planner.forward's upload (its own generate)


MODEL = """
import torch
from lib import {base}

class Talker({base}):
{hook}
    def forward(self, ids):
        return torch.tensor([ids.shape[1]], device="cuda")

def speak(ids):
    return Talker().generate(ids)
"""
HOOK = "    def prepare_inputs_for_generation(self, ids, **kw):\n        return {'ids': ids}\n"


@pytest.mark.parametrize(("base", "hook", "found"), [
    ("MyPreTrainedModel", "", True),  # a base named like a generation mixin
    ("GenerationMixin", "", True),
    ("LibModule", HOOK, True),  # the hook only a generation loop calls
    ("LibModule", "", False),  # neither: nothing says the library's generate decodes with it
])
def test_which_library_bases_carry_a_generation_loop(base, hook, found):
    findings = analyze({"m.py": MODEL.format(base=base, hook=hook)})
    assert any(f.rule == "GL204" and f.severity == "error" for f in findings) is found
