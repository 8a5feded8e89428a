"""Position markers in rule examples: parsed as Fixit's line/column, enforced by the loader."""

from __future__ import annotations

import textwrap

import pytest
import yaml

from graphlint.rules import RuleError, load_pack, mark_example, marked_positions

EXAMPLE = """\
def decode_step(logits, x):
    return logits.item(), x.cpu()
#          ^ first
#                         ^^^^^^^ second, on the same line
    return x
"""


def test_markers_pin_the_line_above_and_the_caret_column():
    assert marked_positions(EXAMPLE) == ((2, 12), (2, 27))
    assert marked_positions("x = 1\n    # ^ indented markers count from the line start\n") == ((1, 7),)
    assert marked_positions("x = 1  # ^ not a marker: code before it\n") == ()
    assert marked_positions("x = 1\n# a comment ^ is not a marker either\n") == ()


def test_a_marker_needs_a_code_line_above():
    with pytest.raises(ValueError, match="line 1 has no code line above it"):
        marked_positions("# ^\nx = 1\n")


def test_mark_example_puts_markers_where_the_findings_are():
    moved = mark_example(EXAMPLE, [(2, 5), (5, 12)], "GL101")
    assert marked_positions(moved) == ((2, 5), (4, 12))  # line 5 of EXAMPLE is line 4 once its markers go
    assert "first" not in moved and moved.count("^ GL101") == 2
    assert marked_positions(mark_example("x.item()\n", [(1, 0)], "GL190")) == ((1, 3),)  # no column: line only


def pack(tmp_path, bad: str, good: str = "def decode_step(x):\n    return x\n", dynamic: bool = False):
    body = {"code": "GL190" if dynamic else "GL151", "name": "team-rule", "category": "host-sync",
            "severity": "error", "message": "m", "why": "w", "fix": "f", "bad": bad, "good": good}
    if dynamic:
        body.update(dynamic=True, probes=["tracer"])
    else:
        body.update(matcher="method-call", params={"methods": ["item"]})
    path = tmp_path / "team.yaml"
    path.write_text(yaml.safe_dump({"rules": [body]}, sort_keys=False))
    return path


def test_the_loader_refuses_a_bad_example_without_a_marker_and_says_how_to_add_one(tmp_path):
    with pytest.raises(RuleError) as err:
        load_pack(pack(tmp_path, "def decode_step(x):\n    return x.item()\n"))
    message = str(err.value)
    assert message.startswith("team.yaml: rule GL151: bad example 1 has no position marker.")
    assert "caret under its" in message and "#          ^ GL101" in message and "docs/rule-packs.md" in message
    assert "python -m graphlint.docs --markers" in message and "--pack FILE" in message


def test_the_loader_refuses_a_marker_in_a_good_example_or_above_all_code(tmp_path):
    marked = "def decode_step(x):\n    return x.item()\n#          ^ GL151\n"
    with pytest.raises(RuleError, match="good example 1 has a position marker"):
        load_pack(pack(tmp_path, marked, good=marked))
    with pytest.raises(RuleError, match="bad example 1: the marker on line 1 has no code line above it"):
        load_pack(pack(tmp_path, "# ^\n" + marked))
    (rule,) = load_pack(pack(tmp_path, marked))
    assert marked_positions(rule.bad[0]) == ((2, 12),)


def test_runtime_rules_may_leave_a_region_level_example_unmarked(tmp_path):
    (rule,) = load_pack(pack(tmp_path, "state.setdefault('kept', []).append(x * 2)\n", dynamic=True))
    assert rule.dynamic and marked_positions(rule.bad[0]) == ()


def test_the_howto_example_is_itself_a_correct_marker():
    from graphlint.rules import MARKER_HOWTO

    snippet = textwrap.dedent("\n".join(line for line in MARKER_HOWTO.splitlines() if line.startswith("  ")))
    assert marked_positions(snippet) == ((1, 12),)  # under `logits`, where GL101 is reported


@pytest.mark.slow
def test_docs_markers_shows_where_the_markers_of_an_unmarked_pack_go(tmp_path, capsys):
    from graphlint import docs

    unmarked = pack(tmp_path, "def decode_step(x):\n    y = x + 1\n    return y.item()\n")
    (shown,) = docs.misplaced_markers([unmarked])
    assert shown == "team.yaml: GL151 bad example 1:\ndef decode_step(x):\n    y = x + 1\n    return y.item()\n#          ^ GL151\n"
    assert docs.main(["--markers", "--pack", str(unmarked)]) == 1
    marked = shown.split(":\n", 1)[1]
    assert docs.misplaced_markers([pack(tmp_path, marked)]) == []
    assert docs.main(["--markers"]) == 0  # the built-in packs
    assert "every static bad example is marked" in capsys.readouterr().out
