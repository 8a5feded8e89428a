"""``graphlint zoo``: the runner survives architectures that crash or hang, rows say what blocks each
architecture, the scores count lines once, and on the CPU three real architectures run end to end.

The runner's robustness is tested with stand-in arch processes (a script that crashes, one that
hangs and leaves a child behind, one that writes a result): what the zoo promises is a row per
architecture whatever happens, and no process left running. What the GPU shows is the H200 run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from graphlint.dynamic import zoo as runner
from graphlint.finding import Finding
from graphlint.inventory import DeviceResult, Inventory, ProbeOutcome
from graphlint.rules import runtime_rules
from graphlint.zoo import build_rows, distinct_blockers, first_blocker, score

RULES = runtime_rules()


def _finding(rule: str, path: str, line: int, message: str = "", region: str = "decode") -> Finding:
    return Finding.from_rule(RULES[rule], path, line, message=message or RULES[rule].message, device="cuda:0",
                             region=region, source="dynamic", function="fn", line_text="x = y")


def _run(arch: str, findings=(), capture=None, probes=None, status="done", meta=None, cuda=True, timing=None) -> dict:
    dev = DeviceResult("cuda:0" if cuda else "cpu", findings=list(findings),
                       capture=capture if capture is not None else {"decode": {"status": "captured", "detail": ""}},
                       probes=probes if probes is not None else [ProbeOutcome("capture", "ran"),
                                                                 ProbeOutcome("replay", "ran", "identical")],
                       meta=meta or {"gpu": "NVIDIA H200"}, timing=timing or {"eager_s": 0.004, "graph_s": 0.0006})
    inv = Inventory("graphlint.targets.hf:make_target", "", "today", "2.11", cuda, [dev])
    return {"arch": arch, "status": status, "seconds": 12.0, "detail": "",
            "result": {"arch": arch, "inventory": inv.to_dict(), "ran": [], "cache_layout": "StaticCache: StaticLayer x2",
                       "cache_note": "", "source": f"{arch}: its config's defaults shrunk (2 layers), random weights"}}


MOE = "/venv/site-packages/transformers/integrations/moe.py"
MASK = "/venv/site-packages/transformers/masking_utils.py"


def test_the_first_blocker_is_the_capture_then_the_replay_then_any_error():
    failed = _run("mixtral", [_finding("GL191", MOE, 300), _finding("GL590", MOE, 332, "capture failed: Cannot copy")],
                  capture={"decode": {"status": "failed", "detail": "Cannot copy between CPU and CUDA"}})
    stale = _run("gemma2", [_finding("GL393", MASK, 510), _finding("GL391", MASK, 510, "replay differs: max 0.32")])
    tracer = _run("llama", [_finding("GL290", MASK, 20), _finding("GL394", MASK, 40)])
    clean = _run("qwen3", [_finding("GL290", MASK, 20)])
    assert (first_blocker(failed).rule, first_blocker(failed).line, first_blocker(failed).kind) == ("GL590", 332, "capture")
    assert (first_blocker(stale).rule, first_blocker(stale).kind) == ("GL391", "replay")
    assert first_blocker(tracer).rule == "GL394" and first_blocker(clean) is None
    rows = build_rows([failed, stale, tracer, clean], {"dtype": "bfloat16"}, False, cross=False)
    assert [r.verdict for r in rows] == ["capture fails", "captures, replays stale", "captures; GL394",
                                         "captures, replays like eager"]
    assert rows[0].blocker.where == "transformers/integrations/moe.py:332"
    assert rows[3].captures == "yes" and rows[3].replay == "identical" and rows[3].eager_s == 0.004
    assert rows[0].command == ("graphlint inventory --target graphlint.targets.hf:make_target --option arch=mixtral "
                               "--option dtype=bfloat16")


def test_architectures_that_did_not_run_are_rows_with_why():
    build = _run("dots1", probes=[ProbeOutcome("tracer", "error", "TargetError: no cache works", "x.py:3")],
                 meta={"target_error": "no cache works with this model"}, capture={})
    hung = {"arch": "zamba", "status": "timed out", "seconds": 300.0, "detail": "killed after 300 s at soak step 9/64",
            "result": {}}
    rows = build_rows([build, hung], {}, False, cross=False)
    assert [r.verdict for r in rows] == ["target not built", "timed out"]
    assert rows[0].blocker.kind == "build" and "no cache works" in rows[0].blocker.reason
    assert rows[1].blocker.reason.endswith("soak step 9/64")
    assert distinct_blockers(rows) == {"build: no cache works with this model": [rows[0]]}  # not-run rows are not blockers


def test_a_cpu_run_says_capture_was_skipped_and_names_what_would_block_it():
    row = build_rows([_run("gemma2", [_finding("GL393", MASK, 530)], capture={}, cuda=False,
                           probes=[ProbeOutcome("tracer", "ran"), ProbeOutcome("capture", "skipped", "--cpu")])],
                     {}, True, cross=False)[0]
    assert (row.captures, row.verdict) == ("skipped (no CUDA)", "tracer: GL393 would block capture")
    assert row.command.endswith("--option arch=gemma2 --cpu")


def test_scores_count_each_line_once_across_architectures():
    def row(arch, findings, static_only):
        r = build_rows([_run(arch)], {}, False, cross=False)[0]
        r.xref, r.static = "checked", "x"
        r.findings, r.static_only = findings, static_only
        return r

    both = {"rule": "GL191", "path": MOE, "line": 332, "severity": "error", "bucket": "confirmed by both",
            "static_rules": ["GL104"]}
    miss = {"rule": "GL393", "path": MASK, "line": 510, "severity": "error", "bucket": "dynamic only (static miss)",
            "static_rules": []}
    only = {"rule": "GL108", "path": MASK, "line": 99, "severity": "error"}
    warn = {"rule": "GL201", "path": MASK, "line": 98, "severity": "warning"}
    rows = [row("mixtral", [both, miss], [only, warn]), row("qwen3_moe", [both], [only])]
    s = score(rows)
    assert (s["dynamic_lines"], s["static_lines"], s["confirmed"], s["static_miss"], s["static_only"]) == (2, 2, 1, 1, 1)
    assert (s["recall"], s["precision"]) == (0.5, 0.5)
    assert s["misses"] == ["transformers/masking_utils.py:510"]
    assert score(rows, ("error", "warning"))["static_lines"] == 3


def _alive(pid: int) -> bool:
    """Running (a killed child whose parent died is a zombie until a reaper collects it)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


FAKE = textwrap.dedent("""
    import json, os, sys, time
    job = json.load(open(sys.argv[1]))
    with open(job["progress"], "a") as fh:
        fh.write("cuda:0\\tsoak\\t3\\t64\\n")
    if job["arch"] == "crash":
        os._exit(3)
    if job["arch"] == "hang":
        import subprocess
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        open(os.environ["CHILD_PID_FILE"], "w").write(str(child.pid))
        time.sleep(60)
    json.dump({"arch": job["arch"], "inventory": None, "seconds": 0.1}, open(sys.argv[2], "w"))
""")


@pytest.mark.slow
def test_a_crash_and_a_hang_are_rows_and_the_hang_is_killed_with_its_children(tmp_path, monkeypatch):
    script = tmp_path / "fake_arch.py"
    script.write_text(FAKE)
    pid_file = tmp_path / "child.pid"
    monkeypatch.setenv("CHILD_PID_FILE", str(pid_file))
    monkeypatch.setattr(runner, "arch_command", lambda job, result: [sys.executable, str(script), job, result])
    events = []
    started = time.monotonic()
    runs = runner.run_zoo(runner.ZooRequest(["ok", "crash", "hang"], jobs=3, timeout=3, cpu=True),
                          on_event=lambda arch, what, payload: events.append((arch, what)))
    assert time.monotonic() - started < 20
    by = {r.arch: r for r in runs}
    assert by["ok"].status == "done" and by["ok"].result["arch"] == "ok"
    assert by["crash"].status == "crashed" and "exit code 3" in by["crash"].detail and "soak step 3/64" in by["crash"].detail
    assert by["hang"].status == "timed out" and "--timeout 3 s" in by["hang"].detail
    child = int(pid_file.read_text())
    time.sleep(0.3)
    assert not _alive(child)  # the whole session went, not only the arch process
    assert {(a, w) for a, w in events} >= {("ok", "start"), ("ok", "done"), ("crash", "step"), ("hang", "done")}


@pytest.mark.slow
def test_a_budget_that_ran_out_leaves_the_rest_not_run(tmp_path, monkeypatch):
    script = tmp_path / "fake_arch.py"
    script.write_text(FAKE)
    monkeypatch.setenv("CHILD_PID_FILE", str(tmp_path / "child.pid"))
    monkeypatch.setattr(runner, "arch_command", lambda job, result: [sys.executable, str(script), job, result])
    monkeypatch.setattr(runner, "BUDGET_MARGIN", 2.0)  # (45 s by default: no start that could not finish)
    runs = runner.run_zoo(runner.ZooRequest(["hang", "ok"], jobs=1, timeout=60, budget=7, cpu=True))
    by = {r.arch: r for r in runs}
    assert by["hang"].status == "timed out" and "--budget" in by["hang"].detail
    assert by["ok"].status == "not run" and "budget" in by["ok"].detail


def test_architectures_run_in_priority_order_then_alphabetically():
    assert runner.ordered(["zamba", "gemma2", "llama", "afmoe", "mixtral"]) == ["llama", "mixtral", "gemma2", "afmoe",
                                                                               "zamba"]
    assert runner.default_jobs(cpu=False, cpus=16) == 6 and runner.default_jobs(cpu=True, cpus=2) == 2


@pytest.mark.slow
def test_the_zoo_on_three_architectures_with_the_tracer_only(tmp_path):
    """The README's CPU example: llama, mixtral and gemma2 in bf16, tracer only, report and drafts."""
    pytest.importorskip("transformers", reason="graphlint zoo needs the [hf] extra")
    report = tmp_path / "zoo.md"
    run = subprocess.run([sys.executable, "-m", "graphlint", "zoo", "--arch", "llama,mixtral,gemma2", "--cpu",
                          "-o", str(report), "--drafts", str(tmp_path / "drafts"), "--jobs", "2"],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    lines = [ln for ln in run.stderr.splitlines() if ln.startswith("graphlint zoo [")]
    assert len(lines) == 3 and any("gemma2: tracer: GL393 would block capture" in ln for ln in lines), run.stderr
    data = json.loads(report.with_suffix(".json").read_text())
    rows = {r["arch"]: r for r in data["rows"]}
    assert set(rows) == {"llama", "mixtral", "gemma2"} and all(r["status"] == "done" for r in rows.values())
    assert rows["mixtral"]["config"].startswith("2 layers") and "4 experts (2 per token)" in rows["mixtral"]["config"]
    assert "StaticSlidingWindowLayer" in rows["gemma2"]["cache"]
    blocker = rows["gemma2"]["blocker"]
    assert blocker["rule"] == "GL393" and blocker["where"].startswith("transformers/masking_utils.py:")
    assert "q_offset" in blocker["line_text"]  # the query's Python int position, frozen into a graph
    assert rows["llama"]["blocker"] is None and rows["llama"]["captures"] == "skipped (no CUDA)"
    assert rows["gemma2"]["static"].startswith(("confirmed by both", "static miss"))
    assert data["scores"][0]["architectures"] == 3 and data["scores"][0]["dynamic_lines"] >= 1
    text = report.read_text()
    assert "## Distinct blockers" in text and "--option arch=gemma2" in text
    drafts = list((tmp_path / "drafts").iterdir())
    assert len(drafts) == 1 and "q_offset" in drafts[0].read_text()
    again = subprocess.run([sys.executable, "-m", "graphlint", "zoo", "--from", str(report.with_suffix(".json")),
                            "-o", str(tmp_path / "again.md")], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert json.loads((tmp_path / "again.json").read_text())["rows"] == data["rows"]
    other = {**data, "zoo": {**data["zoo"], "transformers": "5.17.0"}}  # a GPU run's JSON, rendered here
    (tmp_path / "other.json").write_text(json.dumps(other))
    kept = subprocess.run([sys.executable, "-m", "graphlint", "zoo", "--from", str(tmp_path / "other.json"), "-o",
                           str(tmp_path / "kept.md"), "--drafts", str(tmp_path / "drafts2")],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert kept.returncode == 0 and "its own cross-reference is kept" in kept.stderr, kept.stderr
    kept_json = json.loads((tmp_path / "kept.json").read_text())
    assert kept_json["rows"] == data["rows"] and kept_json["scores"] == data["scores"]
    assert len(list((tmp_path / "drafts2").iterdir())) == 1


@pytest.mark.slow
def test_unknown_architectures_are_a_usage_error(tmp_path):
    pytest.importorskip("transformers", reason="graphlint zoo needs the [hf] extra")
    run = subprocess.run([sys.executable, "-m", "graphlint", "zoo", "--arch", "llama,lama2", "--cpu"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 2 and "lama2" in run.stderr and "graphlint zoo --list" in run.stderr


def test_from_moves_another_machines_library_paths_here():
    """``graphlint zoo --from`` cross-references a GPU run on this machine: its transformers paths
    (also inside ``path:Qual.name`` entries) become this interpreter's."""
    transformers = pytest.importorskip("transformers", reason="graphlint zoo needs the [hf] extra")
    from pathlib import Path

    from graphlint.dynamic.zoo_command import _unlocalize, localize

    here = Path(transformers.__file__).parent / "masking_utils.py"
    gpu = "/usr/local/lib/python3.12/site-packages/transformers/masking_utils.py"
    moved = localize({"ran": [f"{gpu}:sdpa_mask"], "findings": [{"path": gpu, "line": 510}],
                      "other": ["x.py", "/opt/site-packages/no_such_library/a.py", 3], "reason": f"KeyError: 'x' (at {gpu}:81)"})
    assert moved["ran"] == [f"{here}:sdpa_mask"] and moved["findings"][0] == {"path": str(here), "line": 510}
    assert moved["other"] == ["x.py", "/opt/site-packages/no_such_library/a.py", 3]
    assert moved["reason"] == f"KeyError: 'x' (at {gpu}:81)"  # a message naming a path is not a path
    roots: dict[str, str] = {}  # and back, for what the report renders: the run's paths, not this machine's
    localize({"ran": [f"{gpu}:sdpa_mask"]}, roots)
    assert roots == {str(here.parent.parent) + os.sep: "/usr/local/lib/python3.12/site-packages/"}
    assert _unlocalize({"reason": [f"ValueError (at {here}:12)"]}, roots) == {"reason": [f"ValueError (at {gpu}:12)"]}


@pytest.mark.slow
def test_rows_of_emulated_gpu_inventories_tell_a_stale_sliding_window_from_a_clean_llama(monkeypatch, tmp_path):
    """The inventory's process layout on a pretended GPU (the CPU graph emulator, workers in this
    process, as tests/dynamic/test_run_flow.py does), then the zoo's rows: gemma2's sliding-window
    mask replays stale (its Python int offset was recorded at capture), llama replays like eager."""
    pytest.importorskip("transformers", reason="graphlint zoo needs the [hf] extra")
    import threading

    import torch

    import graph_emulator
    from dynamic_helpers import standby_aware
    from graphlint.dynamic import run as run_module
    from graphlint.dynamic.worker import run_phase

    graph_emulator.install(monkeypatch)
    monkeypatch.chdir(tmp_path)  # this test's frames (the fake worker's) are then no project's: transformers' win
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    one_at_a_time = threading.Lock()

    def in_process(job, workers=None, env=None):
        with one_at_a_time:
            return run_phase({**job, "devices": ["cpu"]})

    monkeypatch.setattr(run_module, "_worker", standby_aware(in_process))
    from concurrent.futures import ThreadPoolExecutor

    runs = []
    for arch in ("llama", "gemma2"):
        request = run_module.Request(target=runner.TARGET, soak_steps=16, options={"arch": arch, "max_len": 32})
        with ThreadPoolExecutor(1) as pool:  # nor the test function's frame on the stack
            inv = pool.submit(run_module.run_inventory, request).result()
        runs.append({"arch": arch, "status": "done", "seconds": 1.0, "detail": "",
                     "result": {"arch": arch, "inventory": inv.to_dict(), "ran": []}})
    llama, gemma2 = build_rows(runs, {}, False, cross=False)
    assert (llama.captures, llama.replay, llama.verdict) == ("yes", "identical", "captures, replays like eager")
    assert llama.blocker is None
    assert gemma2.verdict == "captures, replays stale" and gemma2.replay.startswith("differs")
    assert gemma2.blocker.rule == "GL391" and gemma2.blocker.where.startswith("transformers/masking_utils.py:")


def test_a_stale_replay_located_only_at_its_region_is_pinned_on_the_growing_cache_line():
    """MiniMax on the H200: its own cache (a DynamicLayer) grows every step; the mismatch fell back on
    the target's ``_decode`` until the tracer's GL394 in the same region pinned it in transformers."""
    from graphlint.dynamic.combine import combine
    from graphlint.dynamic.verdicts import REGION_ONLY

    cache = "/venv/site-packages/transformers/cache_utils.py"
    grows = _finding("GL394", cache, 146, f"{RULES['GL394'].message}: aten.cat.default turned the keys [1, 1, 1, 16] "
                     "it made at step 1 into [1, 1, 2, 16] at step 2")
    region_only = _finding("GL391", "graphlint/targets/hf.py", 220, f"{RULES['GL391'].message}: step 2: max 0.03; {REGION_ONLY}")
    blocker = first_blocker(_run("minimax", [grows, region_only]))
    assert (blocker.rule, blocker.where, blocker.kind) == ("GL391", "transformers/cache_utils.py:146", "replay")
    assert "not capturable as is: its own state grows every step (aten.cat.default turned the keys" in blocker.reason
    assert REGION_ONLY not in blocker.reason
    located = _finding("GL391", MASK, 510, "replay differs: aten.add.Tensor got 1 at step 1 and 2 at step 2")
    assert first_blocker(_run("gemma2", [grows, located])).where == "transformers/masking_utils.py:510"  # a line: kept
    elsewhere = _finding("GL394", cache, 146, region="prefill")
    assert first_blocker(_run("other", [elsewhere, region_only])).where == "graphlint/targets/hf.py:220"  # another region
    tracer, graph = DeviceResult("cuda:0", findings=[grows]), DeviceResult("cuda:0", findings=[region_only])
    assert [(f.rule, f.line) for f in combine([tracer, graph]).findings] == [("GL391", 146), ("GL394", 146)]


def test_done_lines_from_worker_threads_never_interleave(monkeypatch):
    """Workers report from their own threads; each done line must reach stderr whole, on its own line."""
    import io
    import threading

    from graphlint.dynamic import zoo_command

    class SlowStream(io.StringIO):
        def write(self, text: str) -> int:  # a pause inside each write invites the other thread in
            time.sleep(0.001)
            return super().write(text)

    stream = SlowStream()
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setattr(zoo_command, "_done_line", lambda done, total, payload: f"graphlint zoo [{done}/{total}] {payload['arch']}")
    progress = zoo_command._Progress(40, no_progress=True)
    threads = [threading.Thread(target=progress.event, args=(f"a{i}", "done", {"arch": f"a{i}"})) for i in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 40 and all(line.startswith("graphlint zoo [") and line.count("graphlint zoo") == 1 for line in lines)
