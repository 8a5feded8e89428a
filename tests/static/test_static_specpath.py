"""A decode loop handed its model untyped (branch ``specpath``): dInfer's Fast-dLLM baseline loops.

- A parameter the loop calls and the function reads as a module (``.to(model.device)``) is the
  loop's model, and a store of what the call produced into the ids it reads next (``x[picked] =
  x0[picked]``, the sampling done by a helper in another file) is a token loop's carry
  (``sampledcarry.used_modules``, ``sampledcarry._stored``): the loop is an eager per-token loop, at
  most warnings (nothing checked builds the model).
- The block loop around it is not: its only model call sits in the nested loop
  (``tokenloops.TokenLoops.wraps_inner_loop``), so what it does once per block stays silent; nor is
  one whose own model call is the block's first pass before a nested ``while`` loop that calls the
  model again until the block is done (``cached.py``, its model resolved through ``__main__``).
- A helper that returns a boolean tensor (``picked = torch.zeros_like(x0, dtype=torch.bool)``, in
  another file) returns a mask (``valuekinds.MASK``): ``x[picked] = x0[picked]`` in the caller is a
  boolean-mask gather.
- A module-like parameter whose loop only rebinds its state from the call (an iterative refiner)
  and a callback with no module attribute make no loop."""

from __future__ import annotations

from pathlib import Path

from static_helpers import check_fixture
from test_static_fixture import assert_marked, load

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "specpath"


def test_the_denoising_loop_reports_what_its_markers_say(monkeypatch, tmp_path):
    assert_marked(check_fixture(monkeypatch, tmp_path, FIXTURES, "maskloop").findings, load(FIXTURES / "maskloop"))


def test_the_block_loop_the_refiner_and_the_callback_are_no_token_loops(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "maskloop")
    lines = {(Path(f.path).name, f.line) for f in result.findings}
    assert ("loops.py", 23) in lines  # the denoising loop's stop read
    assert ("loops.py", 15) not in lines  # once per block, before the iterations
    assert not {line for name, line in lines if name == "loops.py" and line > 26}  # refine, apply_all
    assert ("cached.py", 24) not in lines  # the block's first pass: once per block
