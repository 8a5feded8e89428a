"""What values are across functions (issue 19 recall): a 0-dim device tensor returned in a tuple and
passed on as a parameter, a tensor returned by an unannotated helper, a pageable host tensor built
by a helper; and where nothing is known (callers or returns that disagree: unknown wins)."""

from __future__ import annotations

from pathlib import Path

from graphlint.check import run
from graphlint.check_settings import resolve
from graphlint.config_file import load_config

from test_static_fixture import expected, load

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fixtures" / "static" / "valueflow"


def _findings(monkeypatch, tmp_path, package=PACKAGE):
    monkeypatch.chdir(ROOT)
    settings = resolve(load_config(cwd=tmp_path), paths=[str(package.relative_to(ROOT))], jobs=1, use_cache=False)
    return {(f.path, f.line, f.rule) for f in run(settings).findings if f.category != "meta"}


def _ours(findings):
    """The rules this flow changes (a step's own allocations are other rules' business)."""
    return {f for f in findings if f[2] in ("GL105", "GL111", "GL303", "GL420")}


def test_returns_tuple_elements_and_parameters_carry_what_values_are(monkeypatch, tmp_path):
    assert _ours(_findings(monkeypatch, tmp_path)) == expected(load(PACKAGE))


def _rounds(files: dict[str, bytes], rounds: int) -> dict[str, frozenset[str]]:
    """The value facts after ``rounds`` rounds of the cross-file pass (as ``check._add_cross_file_facts``)."""
    from graphlint.static.summarize import summarize_file
    from graphlint.static.valueflow import value_facts_of
    from static_helpers import builtin_rules, options, summarize

    summaries = {s.path: s for s in summarize(files)}
    plan: dict[str, frozenset[str]] = {}
    for _ in range(rounds):
        plan = value_facts_of(list(summaries.values()))
        for path, names in plan.items():
            summaries[path] = summarize_file(path, files[path], builtin_rules(), options(), names)
    return plan


def test_each_round_learns_what_the_last_one_made_known():
    first = _rounds(load(PACKAGE), 1)
    loop, speculate = first["fixtures/static/valueflow/loop.py"], first["fixtures/static/valueflow/speculate.py"]
    assert "ret:verify=(scalar,scalar)" in loop and "ret:staged_ids=host" in loop and "ret:band_mask=tensor" in loop
    assert "ret:commit=(tensor,)" in loop  # what ``commit`` returns second is known once ``kept`` is
    assert "param:commit:kept=scalar" in speculate  # through the tuple element ``verify`` returned
    assert not any(f.startswith(("ret:plan=", "ret:SpeculativeDecoder|self.pick=")) for f in loop)  # walked above
    assert not any(f.startswith("ret:either=") for f in loop)  # its returns disagree
    assert not any(f.startswith("param:clip:count=") for f in speculate)  # an int from warm_up: unknown wins
    assert "ret:commit=(tensor,scalar)" in _rounds(load(PACKAGE), 2)["fixtures/static/valueflow/loop.py"]


def test_a_parameter_called_from_somewhere_unresolved_learns_nothing():
    from graphlint.static.valueflow import value_facts_of
    from static_helpers import summarize

    files = {
        "pkg/__init__.py": "",
        "pkg/ops.py": """
            def trim(x, n):
                return x[:, :n]
        """,
        "pkg/step.py": """
            import torch
            from .ops import trim

            def run(x: torch.Tensor, registry):
                a = trim(x, x.max())
                b = registry.trim(x, 3)  # another object's ``trim``: maybe this one
                return a, b
        """,
    }
    plan = value_facts_of(summarize(files))
    assert not any(f.startswith("param:trim:") for f in plan.get("pkg/ops.py", ()))
    del files["pkg/step.py"]
    files["pkg/step.py"] = """
        import torch
        from .ops import trim

        def run(x: torch.Tensor):
            return trim(x, x.max())
    """
    assert "param:trim:n=scalar" in value_facts_of(summarize(files))["pkg/ops.py"]
