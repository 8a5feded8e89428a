"""dsv4/target.py implements graphlint's target protocol."""

import pytest
import torch

from dsv4.target import make_target
from graphlint.dynamic.target import Target


def run_steps(target, steps):
    outputs = []
    for step in range(steps):
        target.stage(step)
        for region in target.regions():
            region.fn()
        outputs.append(target.output().clone())
    return outputs


@pytest.mark.parametrize("decoder", ["eager", "ab-graph", "full-graph"])
def test_two_targets_from_the_same_arguments_are_bit_identical(decoder):
    a, b = (make_target([torch.device("cpu")], decoder=decoder, n_layers=2,
                        compress_ratios=(4, 16)) for _ in range(2))
    assert isinstance(a, Target)
    for x, y in zip(run_steps(a, 6), run_steps(b, 6)):
        assert torch.equal(x, y)


def test_decoders_agree_through_the_target():
    outputs = {d: run_steps(make_target(["cpu"], decoder=d), 10) for d in ("eager", "ab-graph", "full-graph")}
    for name in ("ab-graph", "full-graph"):
        for x, y in zip(outputs[name], outputs["eager"]):
            torch.testing.assert_close(x, y, atol=1e-4, rtol=0)


def test_region_names_per_decoder():
    names = {d: [r.name for r in make_target(["cpu"], decoder=d).regions()]
             for d in ("eager", "ab-graph", "full-graph")}
    assert names["eager"][0] == "embed" and names["eager"][-1] == "head"
    assert names["ab-graph"][-1] == "lm_head"
    assert names["full-graph"] == ["step@cpu"]


def test_bad_arguments_get_clear_errors():
    with pytest.raises(ValueError, match="unknown decoder"):
        make_target(["cpu"], decoder="fast")
    with pytest.raises(ValueError, match="unknown option"):
        make_target(["cpu"], layers=3)
    with pytest.raises(ValueError, match="unknown preset"):
        make_target(["cpu"], preset="huge")


@pytest.mark.parametrize("decoder", ["ab-graph", "full-graph"])
def test_steps_past_max_seq_len_restart_the_context_in_every_decoder(decoder):
    # the soak (default 512 steps) outlives the tiny preset's 128 positions
    small = {"n_layers": 2, "compress_ratios": (4, 16), "max_seq_len": 32}
    eager, other = (make_target(["cpu"], decoder=d, **small) for d in ("eager", decoder))
    continuous = run_steps(other, 40)
    for x, y in zip(continuous, run_steps(eager, 40)):
        torch.testing.assert_close(x, y, atol=1e-4, rtol=0)
    fresh = make_target(["cpu"], decoder=decoder, **small)
    fresh.stage(32)  # position 0 of an empty context: what the wrapped step must see too
    for region in fresh.regions():
        region.fn()
    assert torch.equal(fresh.output(), continuous[32])
