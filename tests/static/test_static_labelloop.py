"""A capture graphlint did not see as one (branch ``labelloop``; the shape of fresh22's NeMo
label-looping decoder, in code of our own): a host step that replays once per call in one mode
and in a step loop of its own in another, an eager loop whose untyped networks are fed greedy
``max`` picks, and a growth guard disarmed by an augmented assignment."""

from __future__ import annotations

from pathlib import Path

from static_helpers import assert_marked, check_fixture, host_steps

from graphlint.static.sampledcarry import greedy_max
import libcst as cst

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "labelloop"


def test_the_host_step_of_a_whole_graph_mode_is_all_of_its_function(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "transducer.py")
    assert_marked(result, FIXTURES, "transducer.py")
    chains = {f.line: f.chain[-1].rpartition(":")[2] for f in result.findings}
    assert chains[97] == "Decoder.graphs_impl"  # before the replay, after the static fills
    assert chains[82] == "Decoder.eager_impl"  # the eager loop's own test


def test_storage_doubled_by_an_augmented_assignment_is_no_per_token_growth(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "growth.py")
    assert_marked(result, FIXTURES, "growth.py")


MODES = """
import torch

class Runner:
    def __init__(self):
        self.whole = torch.cuda.CUDAGraph()
        self.prompt = torch.cuda.CUDAGraph()
        self.step = torch.cuda.CUDAGraph()
        self.flag = torch.zeros((), dtype=torch.bool, device="cuda")

    def run(self, x, whole):
        self.x.copy_(x)
        if whole:
            self.whole.replay()
        else:
            while self.flag.item():
                self.step.replay()
        return self.out

    def generate(self, x):
        self.x.copy_(x)
        self.prompt.replay()
        while self.flag.item():
            self.step.replay()
        return self.out

def serve(runner, xs):
    return [runner.run(x, True) for x in xs]
"""


def test_only_a_replay_in_another_arm_makes_the_whole_function_the_step():
    found = host_steps({"m.py": MODES}, "")
    # a prompt's replay before the loop on the same path leaves the loop the step; above a
    # function whose other mode loops, its callers are no step of theirs (``serve``)
    assert found == {"m.py:Runner.run", "m.py:Runner.generate (loop)"}


def _call(src: str) -> cst.Call:
    return cst.parse_expression(src)


def test_a_maximum_along_a_dimension_is_a_greedy_pick():
    assert greedy_max(_call("logits.max(-1)"), "max")
    assert greedy_max(_call("logits.max(dim=1)"), "max")
    assert greedy_max(_call("torch.max(logits, 2)"), "max")
    assert not greedy_max(_call("lengths.max()"), "max")
    assert not greedy_max(_call("torch.max(a, b)"), "max")
    assert not greedy_max(_call("a.max(b)"), "max")



NESTED = """
import torch

def build(mode, flag, g, g2, x):
    if mode:
        def step(x):
            if x.sum() > 0:
                pass
            else:
                g.replay()
            while flag.item():
                g2.replay()
            return x
        return step
    return None
"""


def test_a_function_defined_in_an_if_arm_keeps_no_arm_of_its_definer():
    """Its own ``if`` ordinals restart at 0: the definer's arm ``(0, 0)`` must not make its replay
    before the loop and the loop's replays look exclusive (review of the merged tree)."""
    found = host_steps({"m.py": NESTED}, "")
    assert found and all(step.endswith("(loop)") for step in found), found
