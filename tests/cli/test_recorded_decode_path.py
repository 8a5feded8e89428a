"""``graphlint check --decode-path`` / ``decode-path = "..."``: a recorded run as the decode step.

The records here are written by hand, as ``graphlint record`` writes them (tests/dynamic/test_record.py
records real runs); the check itself never imports torch.
"""

from __future__ import annotations

import json
import subprocess
import sys

from graphlint.decode_path_file import RecordedDecodePath, RecordedFunction, RecordedStep, dumps

ENGINE = """\
import torch


def mix_plain(x: torch.Tensor) -> torch.Tensor:
    return x * 0.5


def mix_scaled(x: torch.Tensor) -> torch.Tensor:
    scale = x.abs().max().item()
    return x / (scale + 1.0)


class TinyLM(torch.nn.Module):
    def forward(self, token: torch.Tensor, cache: list):
        x = self.embed(token)
        x = globals()["mix_" + self.kind](x)
        cache.append(x)
        return self.head(x), cache


def sample(logits: torch.Tensor) -> torch.Tensor:
    return logits.argmax(-1)


def generate(model, token, steps: int):
    cache = []
    for _ in range(steps):
        logits, cache = model(token, cache)
        token = sample(logits)
    return token
"""

RECORD = RecordedDecodePath(
    [RecordedFunction("src/engine.py", "TinyLM.forward", (("eager", 8),)),
     RecordedFunction("src/engine.py", "mix_scaled", (("eager", 8),)),
     RecordedFunction("src/engine.py", "sample", (("loop", 7),)),
     RecordedFunction("src/engine.py", "generate", (("loop", 1),))],
    [RecordedStep("src/engine.py:generate", "src/engine.py:TinyLM.forward", "eager", 8)],
    "python run.py")


def write_record(project, record: RecordedDecodePath = RECORD, name: str = "decode-path.json"):
    return project.write(name, dumps(record))


def hazard_lines(findings, rule=None):
    return [(f["path"], f["line"], f["rule"]) for f in findings if rule is None or f["rule"] == rule]


def test_a_hazard_reached_only_at_run_time_is_missed_without_the_record_and_reported_with_it(project):
    project.write("src/engine.py", ENGINE)
    code = project.item_code()
    assert hazard_lines(project.findings("src"), code) == []  # globals()["mix_" + kind]: no analysis resolves it
    write_record(project)
    found = project.findings("src", "--decode-path", "decode-path.json")
    assert hazard_lines(found, code) == [("src/engine.py", 9, code)]
    assert next(f for f in found if f["rule"] == code)["severity"] == "error"
    project.config('decode-path = "decode-path.json"\n')  # the same from the configuration
    assert hazard_lines(project.findings("src"), code) == [("src/engine.py", 9, code)]


def test_each_role_gets_its_context(project):
    """captured: strict; host: at most a warning; loop: the loop's host logic (a branch on a value
    read back is not reported there, as in any per-token loop's own code); eager: strict."""
    project.write("src/roles.py", """\
        import torch


        def in_graph(x: torch.Tensor):
            return x.sum().item()


        def in_host(x: torch.Tensor):
            return x.sum().item()


        def in_loop(x: torch.Tensor):
            n = x.sum().item()
            if n > 3:
                return x
            return x + 1


        def in_step(x: torch.Tensor):
            n = x.sum().item()
            if n > 3:
                return x
            return x + 1
        """)
    record = RecordedDecodePath([RecordedFunction("src/roles.py", "in_graph", (("captured", 1),)),
                         RecordedFunction("src/roles.py", "in_host", (("host", 4),)),
                         RecordedFunction("src/roles.py", "in_loop", (("loop", 4),)),
                         RecordedFunction("src/roles.py", "in_step", (("eager", 4),))])
    write_record(project, record)
    found = project.findings("src", "--decode-path", "decode-path.json")
    by_function = {}
    for f in found:
        by_function.setdefault(f["function"], set()).add((f["rule"], f["severity"]))
    item = project.item_code()
    assert by_function["in_graph"] == {(item, "error")}
    assert by_function["in_host"] == {(item, "warning")}
    assert (item, "error") in by_function["in_loop"] and len(by_function["in_loop"]) == 1
    assert (item, "error") in by_function["in_step"] and len(by_function["in_step"]) == 2  # and the branch


def test_the_call_graph_extends_the_record_to_code_it_has_not_seen(project):
    project.write("src/engine.py", ENGINE.replace("    return x * 0.5\n", "    return helper(x)\n")
                  + "\n\ndef helper(x: torch.Tensor):\n    return x.sum().item()\n")
    record = RecordedDecodePath([RecordedFunction("src/engine.py", "mix_plain", (("captured", 1),))])
    write_record(project, record)
    found = project.findings("src", "--decode-path", "decode-path.json", "--show-chain")
    helper = [f for f in found if f["function"] == "helper"]
    assert helper and helper[0]["severity"] == "error"
    assert helper[0]["chain"] == ["src/engine.py:mix_plain", "src/engine.py:helper"]


def test_a_stale_record_is_a_warning_where_the_function_went_missing(project):
    project.write("src/engine.py", ENGINE.replace("def sample(", "def pick_token("))
    project.write("src/gone.py", "def decode_step(x):\n    return x\n")
    record = RecordedDecodePath([*RECORD.functions, RecordedFunction("src/gone.py", "decode_step", (("eager", 2),)),
                         RecordedFunction("src/deleted.py", "step", (("host", 2),))])
    path = write_record(project, record)
    (project.root / "src/gone.py").unlink()
    result = project.run("src", "--decode-path", "decode-path.json", "--format", "json")
    stale = [(f["path"], f["line"], f["severity"]) for f in result.json()["findings"] if f["rule"] == "GL004"]
    lines = path.read_text().splitlines()
    row = next(i for i, line in enumerate(lines, 1) if '"src/deleted.py"' in line)
    gone = next(i for i, line in enumerate(lines, 1) if '"src/gone.py"' in line)
    assert stale == [("decode-path.json", row, "warning"), ("decode-path.json", gone, "warning"),
                     ("src/engine.py", 1, "warning")]
    message = next(f["message"] for f in result.json()["findings"] if f["path"] == "src/engine.py" and f["rule"] == "GL004")
    assert "sample" in message and "no longer defines" in message and "graphlint record" in message
    assert project.run("src", "--decode-path", "decode-path.json", "--ignore", "GL004", "--format", "json"
                       ).json()["summary"]["by_rule"].get("GL004") is None


def test_precommit_passes_some_files_and_the_record_still_loads(project):
    """The hook passes only the changed files: the recorded ones still join the call graph."""
    project.write("src/engine.py", ENGINE)
    project.write("src/other.py", "def unrelated():\n    return 1\n")
    write_record(project)
    project.config('decode-path = "decode-path.json"\n')
    only_other = project.run("--format", "json", "src/other.py")
    assert only_other.rc == 0 and only_other.json()["findings"] == []
    only_engine = project.findings("src/engine.py")
    assert hazard_lines(only_engine, project.item_code()) == [("src/engine.py", 9, project.item_code())]


def test_a_library_recorded_with_source_is_matched_by_path_suffix(project):
    project.write("vendor/lib/tinylm/engine.py", ENGINE)
    record = RecordedDecodePath([RecordedFunction("tinylm/engine.py", "mix_scaled", (("eager", 8),))])
    write_record(project, record)
    found = project.findings("vendor", "--decode-path", "decode-path.json")
    assert hazard_lines(found, project.item_code()) == [("vendor/lib/tinylm/engine.py", 9, project.item_code())]
    assert [f for f in found if f["rule"] == "GL004"] == []  # not the project's own path: never judged stale


def test_entries_say_what_was_recorded(project):
    project.write("src/engine.py", ENGINE)
    write_record(project)
    result = project.run("--raw", "entries", "src", "--decode-path", "decode-path.json", "--format", "json")
    rows = {(r["function"], r["context"]): r for r in json.loads(result.out)["entries"]}
    assert rows[("mix_scaled", "eager")]["reason"].startswith("recorded: ran inside an eager decode step")
    assert rows[("generate", "eager")]["loop_only"] is True  # only the loop that calls the step


def test_a_bad_record_is_a_configuration_error(project):
    project.write("src/engine.py", ENGINE)
    missing = project.run("src", "--decode-path", "nope.json")
    assert missing.rc == 2 and "decode path nope.json does not exist" in missing.err
    project.write("broken.json", "{not json")
    assert "not valid JSON" in project.run("src", "--decode-path", "broken.json").err
    project.write("role.json", json.dumps({"version": 1, "functions": [
        {"path": "src/engine.py", "function": "generate", "roles": {"prefill": 1}}]}))
    bad = project.run("src", "--decode-path", "role.json")
    assert bad.rc == 2 and "unknown role 'prefill'" in bad.err
    project.write("new.json", json.dumps({"version": 99, "functions": []}))
    assert "written by a newer graphlint" in project.run("src", "--decode-path", "new.json").err
    project.config('decode-path = 3\n')
    assert "decode-path: expected a file name" in project.run("src").err


def test_check_with_a_decode_path_never_imports_torch(project, tmp_path):
    project.write("src/engine.py", ENGINE)
    write_record(project)
    script = ("import sys; from graphlint.cli import main; "
              "rc = main(['check', '--no-cache', '--exit-zero', '--decode-path', 'decode-path.json', 'src']); "
              "assert 'torch' not in sys.modules, 'torch was imported'; sys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", script], cwd=project.root, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "GL101" in proc.stdout or "host-sync" in proc.stdout


def test_recorded_files_that_match_nothing_are_named_in_a_warning(project):
    project.write("src/engine.py", ENGINE)
    record = RecordedDecodePath([RecordedFunction("elsewhere/engine.py", "mix_scaled", (("eager", 8),))])
    write_record(project, record)
    result = project.run("src", "--decode-path", "decode-path.json")
    assert "decode path decode-path.json: 1 recorded file(s) match no analysed file (elsewhere/engine.py)" \
        in result.err
