"""A model picked from a registry at load, captured through a wrapper that takes it as a parameter,
and the server's host step reached from an RPC handler (``fixtures/static/callgraph/registry_load``).

Twenty architectures each pass their model class to a shared engine (``super().__init__(name,
model_cls=ArchNN)``), which builds it and hands it on with ``super(CausalEngine, self).__init__``;
a graph cache holds ``self.model`` and a static ``trace(model, batch_size)`` captures
``model.forward``. The engine's ``forward`` swaps the graph cache in for the model, so the step
above it (``generate_token``: sampling, the read-back) is the host step; the service's handlers,
which nothing checked calls and which loop over nothing, are not."""

from __future__ import annotations

from pathlib import Path

from graphlint.static.link import link
from static_helpers import analyze, builtin_rules, options, summarize

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "callgraph" / "registry_load"


def files() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(FIXTURE.glob("*.py"))}


def test_a_model_picked_at_load_is_captured_code_and_a_class_no_engine_names_is_not():
    errors = sorted((f.path, f.line, f.rule) for f in analyze(files()) if f.severity == "error")
    assert errors == [("arch.py", 76, "GL101")]  # Arch07.forward; DraftHead.forward's .item() stays out


def test_the_step_the_handler_calls_is_a_host_step_and_the_handlers_are_not():
    rules = builtin_rules()
    entries = []
    findings = link(summarize(files(), rules), rules, options(rules), entries_out=entries)
    host = sorted(e.function[1] for e in entries if e.context == "host")
    assert host == ["CausalEngine.forward", "CausalEngine.generate_token", "GraphCache.forward", "GraphRunner.forward"]
    reads = sorted((f.line, f.rule, f.severity) for f in findings if f.path == "engine.py")
    assert reads == [(39, "GL102", "info"), (40, "GL102", "warning")]  # the step's read-back, then a second one
    assert not [f for f in findings if f.path == "server.py"]  # Batch.from_request: per request, not per step


def test_a_handler_with_a_step_loop_of_its_own_stays_a_host_step():
    """The handlers are left out for calling once per something unchecked; a loop says per step."""
    changed = files()
    changed["server.py"] = changed["server.py"].replace(
        "    async def Decode(self, request):\n        batch = self.batches.pop(request.id)\n"
        "        tokens = self.engine.generate_token(batch)\n",
        "    async def Decode(self, request):\n        batch = self.batches.pop(request.id)\n"
        "        while batch.ids is not None:\n            tokens = self.engine.generate_token(batch)\n")
    assert "while batch.ids" in changed["server.py"]
    rules = builtin_rules()
    entries = []
    link(summarize(changed, rules), rules, options(rules), entries_out=entries)
    assert ("server.py", "Service.Decode") in {e.function for e in entries if e.context == "host"}


def test_super_of_the_enclosing_class_is_super_and_of_another_class_stays_open(tmp_path):
    from test_static_callgraph import call_graph, edges
    (tmp_path / "m.py").write_text(
        "class Base:\n"
        "    def __init__(self, x):\n"
        "        self.x = x\n\n"
        "class Mid(Base):\n"
        "    def __init__(self, x):\n"
        "        super(Mid, self).__init__(x)\n\n"
        "class Leaf(Mid):\n"
        "    def __init__(self, x):\n"
        "        super(Mid, self).__init__(x)\n"  # skips Mid: not the enclosing class, left unresolved
    )
    graph, infos = call_graph(tmp_path)
    found = edges(graph, infos)
    assert found["m.py:Mid.__init__"] == ["m.py:Base.__init__"]
    assert found["m.py:Leaf.__init__"] == []


def test_a_handler_named_like_decode_code_stays_a_host_step():
    """``hot-names`` say what nothing checked calls per step (lightllm's ``ModelRpcServer.decode``)."""
    changed = files()
    changed["server.py"] = changed["server.py"].replace("async def Decode(", "async def decode(")
    rules = builtin_rules()
    entries = []
    link(summarize(changed, rules), rules, options(rules), entries_out=entries)
    assert ("server.py", "Service.decode") in {e.function for e in entries if e.context == "host"}
