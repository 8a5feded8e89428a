"""The recorder's core, torch-free: roles from windows and graph events, the strongest role of each
call, the call stack through exceptions and generators, imports, and both backends
(``sys.monitoring`` on Python >= 3.12, ``sys.setprofile`` everywhere)."""

from __future__ import annotations

import sys
import textwrap

import pytest

from graphlint.dynamic.recorder import Recorder

BACKENDS = ["profile", *(["monitoring"] if hasattr(sys, "monitoring") else [])]


@pytest.fixture
def engine(tmp_path, monkeypatch):
    """A module of the project (its file is the only source) that the tests drive."""
    (tmp_path / "rec_engine.py").write_text(textwrap.dedent("""\
        def layer(x):
            return x + 1

        def forward(x):
            for _ in range(2):
                x = layer(x)
            return x

        def stage(x):
            return [x]

        def tokens(n):
            for i in range(n):
                yield layer(i)

        def failing(x):
            layer(x)
            raise ValueError(x)

        def lazy():
            import rec_lazy
            return rec_lazy.helper()
        """))
    (tmp_path / "rec_lazy.py").write_text("def helper():\n    return 1\n\nhelper()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("rec_engine", None)
    sys.modules.pop("rec_lazy", None)
    import rec_engine

    yield rec_engine, str(tmp_path)
    sys.modules.pop("rec_engine", None)
    sys.modules.pop("rec_lazy", None)


def by_name(recorder: Recorder) -> dict[str, dict[str, int]]:
    return {recorder.codes[cid].co_name: dict(roles) for cid, roles in recorder.roles().items()}


@pytest.mark.parametrize("backend", BACKENDS)
def test_windows_give_roles_and_the_strongest_wins(engine, backend):
    module, root = engine
    rec = Recorder(lambda f: f.startswith(root), backend=backend)
    with rec.recording():
        with rec.window("host"):
            module.stage(1)
        with rec.window("eager"):
            module.forward(1)
            with rec.window("captured"):
                module.forward(2)
        module.layer(3)  # outside every window: no role
    assert rec.backend == backend
    assert by_name(rec) == {"stage": {"host": 1}, "forward": {"eager": 1, "captured": 1},
                            "layer": {"eager": 2, "captured": 2}}


@pytest.mark.parametrize("backend", BACKENDS)
def test_captures_and_replays(engine, backend):
    module, root = engine
    rec = Recorder(lambda f: f.startswith(root), backend=backend)
    with rec.recording():
        rec.capture_begin()
        rec.capture_begin()  # torch.cuda.graph calling capture_begin: one capture
        module.forward(0)
        rec.capture_end()
        rec.capture_end()
        for step in range(3):
            module.stage(step)
            rec.replay("a")
            rec.replay("b")  # another graph, replayed right after: nothing runs between its replays... but a's
        module.stage(9)  # after the last replay: no role
    assert by_name(rec) == {"forward": {"captured": 1}, "layer": {"captured": 2}, "stage": {"host": 2}}
    assert (rec.captures, rec.replays) == (1, 6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_stack_survives_exceptions_and_generators(engine, backend):
    module, root = engine
    rec = Recorder(lambda f: f.startswith(root), detect_steps=True, backend=backend)
    with rec.recording():
        with pytest.raises(ValueError):
            module.failing(1)
        assert list(module.tokens(3)) == [1, 2, 3]
        with rec.window("eager"):
            module.forward(1)
    assert rec.steps.stacks and all(stack == [] for stack in rec.steps.stacks)
    assert by_name(rec)["layer"] == {"eager": 2}
    assert [rec.codes[cid].co_name for cid in rec.log].count("tokens") == 1  # resumed three times, started once


@pytest.mark.parametrize("backend", BACKENDS)
def test_import_time_code_is_no_decode_step(engine, backend):
    module, root = engine
    rec = Recorder(lambda f: f.startswith(root), backend=backend)
    with rec.recording(), rec.window("eager"):
        assert module.lazy() == 1
    found = by_name(rec)
    assert found["lazy"] == {"eager": 1} and found["helper"] == {"eager": 1}  # the call after the import
    assert "<module>" not in found


def test_the_recorder_leaves_no_hook_behind(engine):
    import builtins

    module, root = engine
    before = (sys.getprofile(), builtins.__import__)
    for backend in BACKENDS:
        rec = Recorder(lambda f: f.startswith(root), detect_steps=True, backend=backend)
        with rec.recording():
            module.forward(1)
        assert (sys.getprofile(), builtins.__import__) == before
        if backend == "monitoring":
            assert all(sys.monitoring.get_tool(tool) is None for tool in (2, 3, 4))
