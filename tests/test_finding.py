"""The one Finding type: built from a rule one way, probe facts as typed fields, a stable JSON shape."""

from __future__ import annotations

import json

from graphlint.finding import Finding
from graphlint.rules import load_rules

RULES = load_rules()


def test_from_rule_takes_identity_and_fix_from_the_rule_and_the_rest_from_the_analyzer():
    rule = RULES["GL101"]
    f = Finding.from_rule(rule, "a.py", 3, 7, line_text="n = t.item()")
    assert (f.rule, f.name, f.category, f.severity, f.fix) == (rule.code, rule.name, rule.category,
                                                              rule.severity, rule.fix)
    assert (f.path, f.line, f.col, f.message, f.line_text, f.source) == ("a.py", 3, 7, rule.message,
                                                                         "n = t.item()", "static")
    softer = Finding.from_rule(rule, "a.py", 3, message="in the host step", severity="warning")
    assert (softer.severity, softer.message, softer.col) == ("warning", "in the host step", 0)


def test_probe_fields_travel_under_extra_only_when_set():
    rule = RULES["GL593"]
    static = Finding.from_rule(RULES["GL101"], "a.py", 1, 1)
    assert static.to_dict()["extra"] == {} and static.in_graph is None
    seen = Finding.from_rule(rule, "k.py", 9, source="dynamic", count=3, in_graph=True, kernel="scale_kernel")
    data = json.loads(json.dumps(seen.to_dict()))
    assert data["extra"] == {"count": 3, "in_graph": True, "kernel": "scale_kernel"}
    assert not {"count", "in_graph", "kernel"} & set(data)
    back = Finding.from_dict(data)
    assert (back.count, back.in_graph, back.kernel) == (3, True, "scale_kernel") and back == seen
    eager = Finding.from_dict({**data, "extra": {"in_graph": False}})
    assert (eager.count, eager.in_graph, eager.kernel) == (1, False, "")


def test_probe_fields_are_not_part_of_a_findings_identity():
    rule = RULES["GL290"]
    a = Finding.from_rule(rule, "a.py", 2, source="dynamic", in_graph=True, count=2)
    b = a.with_(in_graph=False, count=1)
    assert a == b and len({a, b}) == 1
