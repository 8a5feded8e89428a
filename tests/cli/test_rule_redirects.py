"""A renamed rule still answers to its old name (ruff's redirects): in ``--select/--ignore``, in
``[tool.graphlint]``, in ``# graphlint: ignore[...]`` and in ``graphlint explain``."""

from __future__ import annotations

import pytest

from graphlint.rules import RuleError, load_pack, load_rules, select_rules

SAMPLE = """\
import torch

def decode_step(probs: torch.Tensor):
    with torch.cuda.graph(torch.cuda.CUDAGraph()):
        return torch.distributions.Categorical(probs=probs).sample(){comment}
"""


def test_old_name_selects_the_renamed_rule():
    rules = load_rules()
    gl109 = rules["GL109"]
    assert gl109.name == "distribution-validation-sync" and "multinomial-sync" in gl109.previous_names
    assert select_rules(rules, ["multinomial-sync"]) - select_rules(rules, ["meta"]) == {"GL109"}
    assert "GL109" not in select_rules(rules, ignore=["multinomial-sync"])


@pytest.mark.parametrize("comment, suppressed", [
    ("  # graphlint: ignore[multinomial-sync] -- validated upstream", True),
    ("  # graphlint: ignore[distribution-validation-sync] -- validated upstream", True),
    ("", False),
])
def test_old_name_in_a_suppression_comment(project, comment, suppressed):
    project.write("m.py", SAMPLE.format(comment=comment))
    found = [f for f in project.findings("m.py", "--show-suppressed") if f["rule"] == "GL109"]
    assert len(found) == 1, found
    assert found[0]["suppressed"] is suppressed
    assert not [f for f in project.findings("m.py") if f["rule"] in ("GL001", "GL003")]  # no unknown/unused


def test_old_name_in_config_and_explain(project):
    project.write("m.py", SAMPLE.format(comment=""))
    project.config('ignore = ["multinomial-sync"]\n')
    assert "GL109" not in project.codes("m.py")
    result = project.run("--raw", "explain", "multinomial-sync")
    assert result.rc == 0 and "GL109" in result.out


def test_a_previous_name_may_not_be_another_rules_name(tmp_path):
    pack = tmp_path / "mine.yaml"
    pack.write_text(
        "rules:\n  - code: GL199\n    name: my-rule\n    previous_names: [host-sync-item]\n"
        "    category: host-sync\n    severity: error\n    message: m\n    why: w\n    fix: f\n")
    assert load_pack(pack)[0].previous_names == ("host-sync-item",)
    taken = load_rules()["GL101"].name
    pack.write_text(pack.read_text().replace("host-sync-item", taken))
    with pytest.raises(RuleError, match=f"rule name {taken} is already used by GL101"):
        load_rules([pack])
