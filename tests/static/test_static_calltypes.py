"""A parameter is what its callers pass, over what its annotation says (issue 19 precision): ``n:
Tensor`` every caller passes a Python int tests nothing on the device; ``ids: list[int]`` every
caller passes a device tensor indexes without a copy. The annotation stands where some caller is
unseen: a call passing something else or nothing known, a function handed on as a value."""

from __future__ import annotations

from pathlib import Path

from graphlint.check import run
from graphlint.check_settings import resolve
from graphlint.config_file import load_config

from test_static_fixture import expected, load

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fixtures" / "static" / "calltypes"


def _findings(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    settings = resolve(load_config(cwd=tmp_path), paths=[str(PACKAGE.relative_to(ROOT))], jobs=1, use_cache=False)
    return {(f.path, f.line, f.rule) for f in run(settings).findings if f.rule in ("GL105", "GL208")}


def test_callers_overrule_annotations_only_when_every_caller_is_seen(monkeypatch, tmp_path):
    assert _findings(monkeypatch, tmp_path) == expected(load(PACKAGE))


def test_facts_say_which_parameters_the_callers_overrule():
    from graphlint.static.valueflow import value_facts_of
    from static_helpers import summarize

    facts = value_facts_of(summarize(load(PACKAGE)))
    helpers, engine = facts["fixtures/static/calltypes/helpers.py"], facts["fixtures/static/calltypes/engine.py"]
    assert "param:pad_front:n_pad=number" in helpers  # ``n_pad = int(...)`` then ``pad_front(x, n_pad, 0)``
    assert "param:PrefixCache.keep_rows:rows=tensor" in helpers
    assert not any(f.startswith(("param:trim_front:", "param:skip_front:", "param:drop_front:")) for f in helpers)  # disagree; handed on; registered
    # calls the resolution cannot follow (``self.target.cache.take``), and a model method of the same
    # name handing its parameter on, all pass the tensor: what every call spelled ``take`` passes
    assert "param:StaticRows.take:rows=tensor" in engine
    assert not any(f.startswith("param:StaticRows.drop:") for f in engine)


