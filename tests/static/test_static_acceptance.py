"""A rejection sampler's acceptance test (:mod:`graphlint.static.acceptance`): the truth test of a
comparison with a uniform draw is the speculative algorithm's host read, by design (``info``);
the reads of the probabilities it compares, and comparisons without a draw, keep their severity."""

from __future__ import annotations

import textwrap
from pathlib import Path

from static_helpers import analyze, assert_marked, check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "acceptance"


def test_the_fixture_reports_what_its_markers_say(monkeypatch, tmp_path):
    assert_marked(check_fixture(monkeypatch, tmp_path, FIXTURES, "speculative.py"), FIXTURES, "speculative.py")


def _loop(test: str, setup: str = "") -> str:
    return textwrap.dedent('''
        import torch
        from torch import nn

        def speculate(draft: nn.Module, ids, steps: int):
            for _ in range(steps):
                q = torch.softmax(draft(ids)[:, -1], -1)
                tok = torch.multinomial(q, 1)
                ids = tok
                p = q * 0.5
                print(tok.item())
                {setup}
                if {test}:
                    continue
            return ids
    ''').format(test=test, setup=setup or "pass")


def _severities(source: str) -> set[str]:
    """The truth test's severities, ``info`` only where it is read as the acceptance (the ``.item()``
    before it is the step's first read: any other test of the step's data is a second one)."""
    found = [f for f in analyze({"m/spec.py": source}) if f.rule == "GL105" and f.line == 13]
    return {f.severity if "rejection sampler" in f.message else "not accepted" for f in found}


def test_only_a_comparison_with_a_uniform_draw_is_the_acceptance():
    accepted = {"info"}
    assert _severities(_loop("r < p[0, 0] / q[0, 0]", "r = torch.rand(1, device='cuda')")) == accepted
    assert _severities(_loop("torch.rand_like(p)[0, 0] >= p[0, 0]")) == accepted
    assert _severities(_loop("p[0, 0] > u * q[0, 0]", "u = torch.rand(4).to('cuda')[1]")) == accepted
    assert _severities(_loop("not d", "d = torch.rand(1, device='cuda') <= p[0, 0]")) == accepted
    # no draw, a draw rebound to something else, an equality, a biased coin: the test keeps its severity
    for test, setup in (("p[0, 0] > q[0, 0]", ""), ("r < p[0, 0]", "r = torch.rand(1, device='cuda'); r = p[0, 1]"),
                        ("r == p[0, 0]", "r = torch.rand(1, device='cuda')"),
                        ("r < 0.1", "r = torch.rand(1, device='cuda')")):
        assert _severities(_loop(test, setup)) == {"not accepted"}, (test, setup)


def test_a_vectorized_acceptance_locates_its_rejections_by_design(monkeypatch, tmp_path):
    """``(rand > ratio).nonzero()`` with ``rand = torch.rand_like(ratio)`` is the accepted length's
    read (``info``, GL302 on main: an error); a ``nonzero`` of a comparison with no draw and the
    ``.item()`` of the first rejection keep theirs. The ids grown by ``torch.cat(...).to(torch.long)``
    grow (GL207, missed on main: the cast hid the concatenation); a zero-size seed moved to the
    device allocates nothing."""
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "vectorized.py")
    assert_marked(result, FIXTURES, "vectorized.py")
