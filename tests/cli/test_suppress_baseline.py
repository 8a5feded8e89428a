"""Suppression comments (as applied by the runner) and baselines."""

from __future__ import annotations

import json

from graphlint.baseline import filter_new, fingerprints, load_baseline, write_baseline
from graphlint.finding import Finding


def test_suppression_at_line_end_and_on_its_own_line(project):
    code = project.item_code()
    project.write("src/model.py", f"""\
        import torch

        def decode_step(x: torch.Tensor, y: torch.Tensor):
            a = x.item()  # graphlint: ignore[{code}] -- sampled once per request
            # graphlint: ignore -- the whole next statement
            b = (y.item() +
                 x.item())
            c = y.item()  # noqa
            return a + b + c
    """)
    visible = project.findings("src")
    assert [(f["rule"], f["line"]) for f in visible] == [(code, 8)]  # `# noqa` is not honoured
    shown = project.findings("src", "--show-suppressed")
    assert [(f["line"], f["suppressed"], f["suppression_reason"]) for f in shown] == [
        (4, True, "sampled once per request"),
        (6, True, "the whole next statement"),
        (7, True, "the whole next statement"),
        (8, False, ""),
    ]
    text = project.run("src", "--show-suppressed").out
    assert "suppressed: sampled once per request" in text and "3 suppressed" in text


def test_unused_and_invalid_suppressions(project):
    code = project.item_code()
    project.write("src/model.py", f"""\
        import torch

        def decode_step(x: torch.Tensor):
            a = x + 1  # graphlint: ignore[{code}]
            b = x + 2  # graphlint: ignore[host-sync-nonsense]
            return x.item()  # graphlint: ignore[{code}, GL001]
    """)
    found = project.findings("src")
    assert [(f["rule"], f["line"]) for f in found] == [("GL001", 4), ("GL003", 5), ("GL001", 6)]
    assert code in found[0]["message"] and "host-sync-nonsense" in found[1]["message"]
    assert "GL001" in found[2]["message"] and code not in found[2]["message"]
    # only for enabled rules: with the rule off, its suppressions are not "unused"
    assert [f["rule"] for f in project.findings("src", "--ignore", code)] == ["GL003", "GL001"]
    # a blanket one is unused only when every static rule was enabled
    project.write("src/model.py", "def decode_step(x):\n    return x + 1  # graphlint: ignore\n")
    assert [f["rule"] for f in project.findings("src")] == ["GL001"]
    assert project.findings("src", "--select", "host-sync") == []


def test_baseline_survives_line_shifts_and_catches_duplicates(project):
    code = project.item_code()
    body = "import torch\n\ndef decode_step(x: torch.Tensor):\n    a = x.item()\n    return a\n"
    project.write("src/model.py", body)
    written = project.run("src", "--write-baseline", "baseline.json")
    assert written.rc == 0 and "wrote 1 finding(s)" in written.err
    data = json.loads((project.root / "baseline.json").read_text())
    assert [e["rule"] for e in data["findings"]] == [code] and "line" not in data["findings"][0]
    assert project.run("src", "--baseline", "baseline.json").rc == 0
    # lines inserted above: still baselined
    shifted = body.replace("import torch\n", "import torch\nimport os\n\n\nSCALE = 2\n")
    project.write("src/model.py", shifted)
    result = project.run("src", "--baseline", "baseline.json")
    assert result.rc == 0 and "1 in the baseline" in result.out
    # a second identical finding in the same function is new
    project.write("src/model.py", shifted.replace("    return a\n", "    a = x.item()\n    return a\n"))
    new = project.findings("src", "--baseline", "baseline.json")
    assert [f["rule"] for f in new] == [code]
    # baselines are relative to their own directory: running from elsewhere changes nothing
    assert project.run(str(project.root / "src"), "--baseline", str(project.root / "baseline.json"),
                       "--format", "json").json()["summary"]["baselined"] == 1


def test_bad_baseline_is_exit_2(project):
    project.write("src/model.py", "x = 1\n")
    project.write("baseline.json", "{not json")
    assert "not valid JSON" in project.run("src", "--baseline", "baseline.json").err
    project.write("baseline.json", '{"version": 99, "findings": []}')
    result = project.run("src", "--baseline", "baseline.json")
    assert result.rc == 2 and "not a graphlint baseline" in result.err
    assert project.run("src", "--baseline", "missing.json").rc == 2


def test_unused_and_invalid_suppressions_point_at_the_comment(project):
    project.write("src/m.py", "x = 1  # graphlint: ignore[GL101]\ny = 2  # graphlint: ignore[GL999]\n")
    found = {(f["rule"], f["line"], f["col"]) for f in project.findings("src")}
    assert found == {("GL001", 1, 8), ("GL003", 2, 8)}


def test_graphlint_failures_are_never_baselined(tmp_path):
    """A recorded GL002 would hide the next crash at that path (fingerprints carry no message)."""
    def finding(rule: str, message: str) -> Finding:
        return Finding(rule=rule, name=rule.lower(), category="meta" if rule == "GL002" else "host-sync",
                       severity="error", path="src/model.py", line=3, col=0, message=message,
                       function="decode", line_text="x.item()")

    baseline = tmp_path / "baseline.json"
    assert write_baseline(baseline, [finding("GL101", "a read-back"), finding("GL002", "crash A")]) == 1
    assert [e["rule"] for e in json.loads(baseline.read_text())["findings"]] == ["GL101"]
    later = [finding("GL101", "a read-back"), finding("GL002", "crash B")]
    kept, dropped = filter_new(later, baseline, load_baseline(baseline))
    assert ([f.rule for f in kept], dropped) == (["GL002"], 1)
    # a baseline written before this rule may hold a GL002: it still does not hide one
    old = json.loads(baseline.read_text())
    old["findings"].append({"fingerprint": fingerprints([finding("GL002", "crash A")], tmp_path)[0], "rule": "GL002"})
    baseline.write_text(json.dumps(old))
    kept, dropped = filter_new(later, baseline, load_baseline(baseline))
    assert ([f.rule for f in kept], dropped) == (["GL002"], 1)
