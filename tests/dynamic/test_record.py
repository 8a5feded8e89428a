"""``graphlint record``: eager decode loops, captures and replays (emulated on the CPU), the command
forms (script, ``-m``, entry point), exit codes, and the file it writes."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

import graph_emulator
from graphlint.cli import main
from graphlint.decode_path_file import load

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "record"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A copy of fixtures/record as the working directory; the modules it imports are forgotten after."""
    for name in ("engine.py", "run.py", "graphed.py"):
        shutil.copy(FIXTURE / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if str(tmp_path) in str(getattr(sys.modules[name], "__file__", "") or ""):
            del sys.modules[name]


def record(*argv: str, output: str = "decode-path.json") -> tuple[int, dict]:
    rc = main(["record", "-o", output, "--", *argv])
    path = Path(output)
    return rc, (json.loads(path.read_text()) if path.exists() else {})


def roles(data: dict) -> dict[str, dict[str, int]]:
    return {f"{f['path']}:{f['function']}": f["roles"] for f in data["functions"]}


def test_an_eager_decode_loop_is_the_step_and_what_runs_between_its_calls_is_the_loop(project):
    rc, data = record("python", "run.py", "6")
    assert rc == 0
    assert roles(data) == {
        "engine.py:TinyLM.forward": {"eager": 6},  # the step: called from one site, its cache handed back
        "engine.py:mix_scaled": {"eager": 6},  # reached through globals()[...], which no analysis resolves
        "engine.py:sample": {"loop": 5},  # between two steps (the sixth sample comes after the last step)
        "engine.py:generate": {"loop": 1},  # the loop's owner
    }
    assert data["steps"] == [{"loop": "engine.py:generate", "step": "engine.py:TinyLM.forward", "kind": "eager",
                              "calls": 6}]
    assert data["command"] == "python run.py 6"


def test_the_file_is_sorted_one_function_per_line_and_holds_no_absolute_path(project):
    record("run.py", "4")
    text = Path("decode-path.json").read_text()
    rows = [line for line in text.splitlines() if line.strip().startswith('{"path"')]
    assert len(rows) == 4 and rows == sorted(rows)
    assert str(project) not in text and "/tmp" not in text
    assert load("decode-path.json").functions[0].line == text.splitlines().index(rows[0]) + 1
    record("run.py", "4", output="again.json")
    assert Path("again.json").read_text() == text  # the same command writes the same file


def test_a_loop_whose_output_does_not_feed_the_next_call_is_no_decode_loop(project):
    Path("bench.py").write_text(textwrap.dedent("""\
        import torch
        from engine import TinyLM

        def bench(model, n):
            for _ in range(n):
                model(torch.tensor([1]), [])  # the same input each time: a benchmark, not decoding

        bench(TinyLM(), 5)
        """))
    rc, data = record("bench.py")
    assert rc == 0 and data["functions"] == [] and data["steps"] == []


def test_captured_and_host_roles_come_from_the_engines_own_capture_and_replays(project, monkeypatch):
    graph_emulator.emulate_cuda_graph_api(monkeypatch)
    rc, data = record("graphed.py")
    assert rc == 0
    assert roles(data) == {
        "graphed.py:Model.forward": {"captured": 1},
        "graphed.py:Block.forward": {"captured": 2},
        "graphed.py:GraphRunner.step": {"host": 5},  # between replays 1-2, ..., 5-6
        "graphed.py:GraphRunner.stage": {"host": 5},
        "graphed.py:pick": {"host": 5},
        "graphed.py:generate": {"host": 1},  # owns the loop whose step replays
    }
    assert data["steps"] == [{"loop": "graphed.py:generate", "step": "graphed.py:GraphRunner.step", "kind": "host",
                              "calls": 6}]


def test_the_graph_hooks_are_removed_after_the_run(project, monkeypatch):
    graph_emulator.emulate_cuda_graph_api(monkeypatch)
    import torch

    before = (torch.compile, torch.cuda.CUDAGraph.__dict__["replay"], torch.cuda.graph.__dict__["__enter__"])
    record("graphed.py")
    assert (torch.compile, torch.cuda.CUDAGraph.__dict__["replay"], torch.cuda.graph.__dict__["__enter__"]) == before


@pytest.mark.parametrize("tail, status", [("sys.exit(3)", 3), ("raise RuntimeError('boom at step 5')", 1),
                                          ("sys.exit('fatal: no model')", 1), ("sys.exit(True)", 1)])
def test_the_commands_exit_status_is_ours_and_the_record_survives_it(project, capsys, tail, status):
    Path("dies.py").write_text(textwrap.dedent(f"""\
        import sys
        import torch
        from engine import TinyLM, generate

        generate(TinyLM(), torch.tensor([3]), 4)
        {tail}
        """))
    rc, data = record("dies.py")
    assert rc == status
    assert "engine.py:TinyLM.forward" in roles(data)
    err = capsys.readouterr().err
    assert ("boom at step 5" in err and "Traceback" in err) if status == 1 and "raise" in tail else True
    assert "graphlint: recorded 4 functions" in err


def test_module_and_entry_point_commands(project, monkeypatch):
    Path("pkg").mkdir()
    Path("pkg/__init__.py").write_text("")
    Path("pkg/cli.py").write_text(textwrap.dedent("""\
        import sys
        import torch
        from engine import TinyLM, generate

        def main():
            generate(TinyLM(), torch.tensor([3]), int(sys.argv[1]))
            return 0

        if __name__ == "__main__":
            sys.exit(main())
        """))
    rc, data = record("-m", "pkg.cli", "3")
    assert rc == 0 and roles(data)["engine.py:TinyLM.forward"] == {"eager": 3}
    dist = project / "tinylm_cli-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tinylm-cli\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[console_scripts]\ntinylm = pkg.cli:main\n")
    monkeypatch.syspath_prepend(str(project))
    rc, data = record("tinylm", "4", output="ep.json")
    assert rc == 0 and roles(data)["engine.py:TinyLM.forward"] == {"eager": 4}
    assert data["command"] == "tinylm 4"
    rc, data = record("python", "-c", "import torch; from engine import TinyLM, generate; "
                      "generate(TinyLM(), torch.tensor([3]), 3)", output="c.json")
    assert rc == 0 and roles(data)["engine.py:TinyLM.forward"] == {"eager": 3}


def test_usage_errors_write_nothing(project, capsys):
    assert main(["record"]) == 2
    assert main(["record", "--", "no-such-command-anywhere"]) == 2
    assert "no installed distribution has a console entry point" in capsys.readouterr().err
    assert main(["record", "--source", "missing", "--", "run.py"]) == 2
    assert not Path("decode-path.json").exists()


def test_only_the_sources_count(project, tmp_path_factory):
    """``--source`` (default: the working directory) decides; an installed package inside it (a
    ``.venv`` in the checkout) never counts."""
    site = project / ".venv" / "lib" / "site-packages"
    site.mkdir(parents=True)
    (site / "vendored.py").write_text("def double(x):\n    return x * 2\n")
    Path("calls_vendored.py").write_text(textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(site)!r})
        import torch
        import vendored
        from engine import TinyLM, sample

        def loop(model, token, cache):
            for _ in range(4):
                logits, cache = model(token, cache)
                token = vendored.double(sample(logits)) % 32

        loop(TinyLM(), torch.tensor([3]), [])
        """))
    rc, data = record("calls_vendored.py")
    assert rc == 0 and "calls_vendored.py:loop" in roles(data)
    assert not any("vendored.py:" in name and "calls" not in name for name in roles(data))
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    assert main(["record", "--source", str(elsewhere), "--", "run.py", "3"]) == 0
    assert json.loads(Path("decode-path.json").read_text())["functions"] == []


@pytest.mark.slow
def test_inventory_record_writes_the_protocols_roles(tmp_path):
    """On the CPU the tracer's first step is recorded: stage() is host, the capturable region captured."""
    target = ROOT / "fixtures" / "targets" / "plain_module.py"
    output = tmp_path / "decode-path.json"
    rc = main(["inventory", "--target", f"{target}:make_target", "--no-soak", "--no-progress",
               "--record", str(output), "-o", str(tmp_path / "inventory.md")])
    assert rc == 0
    assert roles(json.loads(output.read_text())) == {"targets/plain_module.py:TinyDecoder.forward": {"captured": 1},
                                                     "targets/plain_module.py:make_target.feed": {"host": 1}}


@pytest.mark.slow
def test_the_graph_probe_records_its_capture_step(monkeypatch, tmp_path):
    """The capturing worker (here with the CPU emulator) records the same roles as the tracer."""
    import torch

    from graphlint.dynamic import declared
    from graphlint.dynamic.graph_probe import run_graph_phase
    from graphlint.dynamic.target import load_factory
    from graphlint.rules import runtime_rules

    graph_emulator.install(monkeypatch)
    monkeypatch.chdir(ROOT)
    declared.begin()
    options = {"decoder": "ab-graph", "n_layers": 2, "compress_ratios": (0, 4), "max_seq_len": 16}
    run_graph_phase(load_factory("dsv4.target:make_target"), [torch.device("cpu")], options, runtime_rules(), "cpu")
    declared.finish(str(tmp_path / "raw.json"))
    found = roles(json.loads((tmp_path / "raw.json").read_text()))
    assert found["dsv4/ab_graph.py:ABGraphDecoder._graph_a_fn.graph_a_step"] == {"captured": 2}
    assert found["dsv4/ab_graph.py:ABGraphDecoder._attention_fn.attention"] == {"eager": 2}  # capturable=False
    assert found["dsv4/graph.py:GraphDecoder.stage"] == {"host": 1}
    assert found["dsv4/model.py:Block.post_attention"] == {"captured": 2}
    assert "dsv4/engine.py:EagerDecoder.step" not in found  # only the recorded step's code


def test_paths_are_relative_to_the_record_wherever_it_is_written(tmp_path):
    from graphlint.dynamic.record_command import relative_path

    project, site = tmp_path / "proj", tmp_path / "venv" / "lib" / "site-packages"
    (project / "reports" / "h200").mkdir(parents=True)
    (project / "dsv4").mkdir()
    (site / "transformers").mkdir(parents=True)
    engine, lib = str(project / "dsv4" / "engine.py"), str(site / "transformers" / "generation.py")
    assert relative_path(engine, str(project), [str(project)]) == "dsv4/engine.py"
    assert relative_path(engine, str(project / "reports" / "h200"), [str(project)]) == "../../dsv4/engine.py"
    assert relative_path(engine, str(tmp_path / "elsewhere"), [str(project)]) == "proj/dsv4/engine.py"
    assert relative_path(lib, str(project), [str(project), str(site / "transformers")]) == "transformers/generation.py"


@pytest.mark.slow
def test_torch_compile_with_cuda_graphs_marks_its_function_captured(project):
    """``torch.compile(mode="reduce-overhead")`` runs its function in a graph tree: its own frame is
    all the recorder sees, and it is graph code. Nothing is compiled here (only the wrapping)."""
    import torch

    from graphlint.dynamic.graph_hooks import GraphHooks
    from graphlint.dynamic.recorder import Recorder
    from graphlint.dynamic.record_command import Sources

    Path("compiled.py").write_text(textwrap.dedent("""\
        import torch

        def step(x):
            return x + 1

        def plain(x):
            return x * 2

        class Head(torch.nn.Module):
            def forward(self, x):
                return x - 1
        """))
    sys.path.insert(0, str(project))
    try:
        import compiled
    finally:
        sys.path.remove(str(project))
    rec = Recorder(Sources([str(project)], str(project)))
    with GraphHooks(rec):
        torch.compile(compiled.step, mode="reduce-overhead")
        torch.compile(options={"triton.cudagraphs": True})(compiled.Head())
        torch.compile(compiled.plain, backend="eager")  # no CUDA graphs: an ordinary compiled function
        with rec.recording(), rec.window("host"):
            compiled.step(torch.ones(1))
            compiled.Head()(torch.ones(1))
            compiled.plain(torch.ones(1))
    assert torch.compile.__name__ == "compile" and not hasattr(torch.compile, "__wrapped__")
    assert {rec.codes[cid].co_name: dict(roles) for cid, roles in rec.roles().items()} == {
        "step": {"captured": 1}, "forward": {"captured": 1}, "plain": {"host": 1}}
