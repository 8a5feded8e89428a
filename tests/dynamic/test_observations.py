"""Probes name what they observe; the runtime pack's ``observes:`` says which rule reports it."""

from __future__ import annotations

import pytest

from graphlint.dynamic import graph_report, soak, tracer
from graphlint.rules import runtime_rules
from graphlint.rules import RuleError, load_rules, observation_codes

RUNTIME = runtime_rules()


@pytest.mark.parametrize(("module", "probes"), [(tracer, {"tracer", "sync-debug"}),
                                                (graph_report, {"capture", "replay"}), (soak, {"soak"})])
def test_every_observation_of_a_probe_is_reported_by_exactly_one_of_its_rules(module, probes):
    codes = observation_codes(RUNTIME.values())
    assert sorted(o for o in codes if o in module.OBSERVATIONS) == sorted(module.OBSERVATIONS)
    for observation in module.OBSERVATIONS:
        assert probes & set(RUNTIME[codes[observation]].probes), observation


def test_every_observation_in_the_pack_is_made_by_a_probe():
    made = {*tracer.OBSERVATIONS, *graph_report.OBSERVATIONS, *soak.OBSERVATIONS}
    assert set(observation_codes(RUNTIME.values())) == made


def _pack(tmp_path, body: str):
    pack = tmp_path / "team.yaml"
    pack.write_text("rules:\n" + body)
    return pack


RULE = """  - code: {code}
    name: {name}
    category: host-sync
    severity: error
    message: m
    why: w
    fix: f
"""


def test_only_dynamic_rules_observe(tmp_path):
    pack = _pack(tmp_path, RULE.format(code="GL150", name="team-sync") + "    observes: [host-read]\n")
    with pytest.raises(RuleError, match="`observes` needs `dynamic: true`"):
        load_rules([pack])


def test_an_observation_belongs_to_one_rule(tmp_path):
    body = RULE.format(code="GL150", name="team-sync") + "    dynamic: true\n    observes: [host-read]\n"
    with pytest.raises(RuleError, match="observes 'host-read', which GL190 reports already"):
        load_rules([_pack(tmp_path, body)])


def test_observation_names_are_kebab_case(tmp_path):
    body = RULE.format(code="GL150", name="team-sync") + "    dynamic: true\n    observes: [Host_Read]\n"
    with pytest.raises(RuleError, match="observes must be kebab-case names"):
        load_rules([_pack(tmp_path, body)])
