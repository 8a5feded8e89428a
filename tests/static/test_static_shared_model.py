"""A model shared by a serving step loop (a graph per batch size, replayed by a scheduler) and an
eager generate loop keeps both roles: captured where the serving engine captures it, eager where
the generate loop runs it -- also when both reach it through one helper that calls what it is
handed (:mod:`graphlint.static.passedcalls`: a parameter's call resolved per call site)."""

from __future__ import annotations

from pathlib import Path

from graphlint.static.link import link
from static_helpers import analyze, builtin_rules, options, summarize

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "shared_model"


def fixture_files() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(FIXTURE.glob("*.py"))}


def roles(files: dict[str, str]) -> tuple[dict[str, list[str]], list]:
    rules = builtin_rules()
    contexts, entries = [], []
    link(summarize(files), rules, options(rules), contexts_out=contexts, entries_out=entries)
    found: dict[str, set[str]] = {}
    for context, chains in contexts[0].placement.chains.items():
        for (_, qual) in chains:
            found.setdefault(qual, set()).add(context)
    return {q: sorted(c) for q, c in found.items()}, entries


def test_the_shared_model_is_captured_and_eager():
    found, entries = roles(fixture_files())
    assert found["Block.forward"] == ["eager", "graph"]
    assert found["ToyLM.forward"] == ["eager", "graph"]
    assert found["Runner.run"] == ["host"] and found["Scheduler.step"] == ["host"]
    eager = [(e.function[1], e.reason) for e in entries if e.context == "eager"]
    assert eager == [("ToyLM.generate", "per-token loop calling ToyLM.forward")]


def test_a_sync_in_the_shared_layer_is_an_eager_error():
    files = fixture_files()
    files["model.py"] = files["model.py"].replace("return torch.relu(self.proj(x))",
                                                  "x.sum().item()\n        return torch.relu(self.proj(x))")
    found = [(f.path, f.rule, f.severity) for f in analyze(files) if f.rule == "GL101"]
    assert found == [("model.py", "GL101", "error")]


def test_a_caller_passing_what_the_call_graph_cannot_resolve_keeps_the_helper_context_insensitive():
    files = fixture_files()
    files["main.py"] += "\n\ndef extra(fn_table, x):\n    from model import forward_step\n    return forward_step(fn_table[0], x)\n"
    found, _ = roles(files)
    # one caller hands over something unknown: the helper's own edges stay, both callers share them
    # (the generate loop then leads to the replay too, as before this mechanism)
    assert "host" in found["forward_step"]


def test_a_helper_that_rebinds_its_parameter_is_not_specialised():
    files = fixture_files()
    files["model.py"] = files["model.py"].replace('    return fn(x)', '    fn = getattr(fn, "inner", fn)\n    return fn(x)')
    found, entries = roles(files)
    assert not any(e.context == "eager" and e.function[1] == "ToyLM.generate" for e in entries)
