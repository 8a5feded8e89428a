"""rules/meta.yaml: every bad example raises exactly its rule where it is marked, every good one nothing."""

from __future__ import annotations

import pytest

from graphlint.rules import BUILTIN_PACK_DIR, load_pack, mark_example, marked_positions

META = load_pack(BUILTIN_PACK_DIR / "meta.yaml")
EXAMPLES = [(r.code, kind, i, text) for r in META for kind in ("bad", "good") for i, text in enumerate(getattr(r, kind))]


def test_meta_rules_are_complete():
    assert [r.code for r in META] == ["GL000", "GL001", "GL002", "GL003", "GL004", "GL005"]
    assert all(r.category == "meta" and not r.matcher for r in META)
    # GL002 (internal error) has no source that triggers it by design, GL004 (stale decode path)
    # needs a recorded file besides the source (tests/cli/test_recorded_decode_path.py), GL005 (over the
    # budget) depends on the settings and the machine (tests/corpus/hostile); every other rule has both
    assert all(r.bad and r.good for r in META if r.code not in ("GL002", "GL004", "GL005"))


@pytest.mark.parametrize("code, kind, index, text", EXAMPLES, ids=[f"{c}-{k}{i}" for c, k, i, _ in EXAMPLES])
def test_meta_rule_example(project, code, kind, index, text):
    project.write("example/example.py", text)
    findings = project.findings("example")
    assert [f["rule"] for f in findings] == ([code] if kind == "bad" else []), findings
    at = {(f["line"], f["col"]) for f in findings}
    assert at == set(marked_positions(text)), f"markers belong here:\n{mark_example(text, at, code)}"
