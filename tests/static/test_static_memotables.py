"""False findings of fresh22's captured engines, in look-alikes of our own under
``fixtures/static/memotables/``. Each folder is linked on its own and reports exactly its
``# expect:`` markers, at their severities (every folder fails on main ceef6ca):

- ``keyed_memo``: tables of pointers and strides built on a miss of a module-level dict keyed by
  the weights and stored under the key tested (``if v := D.get(k): return v`` ... ``D[k] = t``;
  ``if k not in D: D[k] = t``; ``if k in D: return D[k]``) are set-up (:mod:`.memoguards`;
  they were GL204 errors). A dict made inside the function, a store under another key and a key
  rebound before the store still rebuild on every call: reported.
- ``solver_counter``: a captured Euler solver's ``for step in range(1, len(t_span))`` counter
  indexes the time grid and is tested (GL308 / GL309 before); the loop is no per-token loop, so
  the counter takes the same values at every replay (:mod:`.fixedcounters`). A loop starting at
  the step's position and a loop that captures a graph per iteration keep their errors.
- ``device_test``: ``if slots is None or slots.is_cuda: return ...`` leaves only a host tensor
  for the ``tolist()`` after it (:mod:`.devicenarrow`; GL102 and GL312 before); the narrowing
  ends with its block and with a rebinding, and a test that sends CPU tensors away narrows nothing.
- ``read_element``: ``w[i].item()`` with ``i`` chosen by read-back data is one finding, the read
  (GL311 beside it before); the element kept on the device keeps its GL311.
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from static_helpers import analyze
from test_static_fixture import assert_marked, load

from graphlint.static.devicenarrow import left_for_cuda
from graphlint.static.memoguards import memo_miss, memo_rest

ROOT = Path(__file__).resolve().parents[2]
SHAPES = ROOT / "fixtures" / "static" / "memotables"


@pytest.mark.parametrize("shape", sorted(p.name for p in SHAPES.iterdir() if p.is_dir()))
def test_each_shape_reports_exactly_its_markers_with_their_severity(shape):
    files = load(SHAPES / shape)
    assert_marked(analyze(files), files)


def _if(code: str) -> tuple[cst.If, tuple]:
    body = cst.parse_module(code).body
    return body[0], body[1:]


@pytest.mark.parametrize("code", [
    "if k not in D:\n    D[k] = build()\n",
    "if D.get(k) is None:\n    D[k] = build()\n",
    "if (v := D.get((a, b))) is None:\n    D[(a, b)] = build()\n",
    "if not cls.T.get(k):\n    cls.T[k] = build()\n",
])
def test_a_miss_that_stores_under_the_key_tested_is_a_memo(code):
    stmt, _ = _if(code)
    assert memo_miss(stmt, set()) is not None


@pytest.mark.parametrize("code", [
    "if k not in D:\n    E[k] = build()\n",          # another dict
    "if k not in D:\n    D[j] = build()\n",          # another key
    "if k not in D:\n    k = j\n    D[k] = build()\n",  # the key rebound first
    "if f(k) not in D:\n    D[f(k)] = build()\n",    # a call: evaluated anew
    "if k not in self.T:\n    self.T[k] = build()\n",  # a per-object dict: not judged here
])
def test_anything_else_is_no_memo(code):
    stmt, _ = _if(code)
    assert memo_miss(stmt, set()) is None


def test_a_dict_the_function_binds_is_no_memo():
    stmt, _ = _if("if k not in D:\n    D[k] = build()\n")
    assert memo_miss(stmt, {"D"}) is None


def test_the_rest_after_a_hit_that_returns_is_the_miss():
    stmt, rest = _if("if v := D.get(k):\n    return v\nt = build()\nD[k] = t\n")
    assert memo_rest(stmt, rest, set()) is not None
    stmt, rest = _if("if k in D:\n    return D[k]\nt = build()\nD[j] = t\n")
    assert memo_rest(stmt, rest, set()) is None
    stmt, rest = _if("if k in D:\n    log(k)\nt = build()\nD[k] = t\n")  # no return: the rest runs on a hit
    assert memo_rest(stmt, rest, set()) is None


def test_a_key_that_is_a_position_rebuilds_every_step():
    """``if pos not in D: D[pos] = ...`` misses on every new position: the build stays reported."""
    code = (
        "import torch\nfrom torch import nn\n_T = {}\n\n"
        "class M(nn.Module):\n"
        "    def forward(self, x: torch.Tensor, start_pos: int) -> torch.Tensor:\n"
        "        if start_pos not in _T:\n"
        "            _T[start_pos] = torch.tensor([start_pos], device=x.device)\n"
        "        return x + 1\n\n"
        "def loop(model: M, x, n):\n"
        "    for pos in range(n):\n"
        "        x = model(x, pos)\n"
        "    return x\n"
    )
    assert 8 in {f.line for f in analyze({"m.py": code}) if f.rule == "GL204"}
    assert 8 not in {f.line for f in analyze({"m.py": code.replace("start_pos not in _T", "7 not in _T")
                                                .replace("_T[start_pos]", "_T[7]")}) if f.rule == "GL204"}


@pytest.mark.parametrize("code, names", [
    ("if t is None or t.is_cuda:\n    return 0\n", {"t"}),
    ("if t.device.type == 'cuda':\n    raise ValueError\n", {"t"}),
    ("if t.device.type != 'cpu':\n    return 0\n", {"t"}),
    ("if t.device.type == 'cpu':\n    return 0\n", set()),       # the CPU tensors leave
    ("if t.is_cuda and n:\n    return 0\n", set()),              # a conjunction: t may stay
    ("if t.is_cuda:\n    x = 1\n", set()),                       # falls through
    ("if t.is_cuda:\n    return 0\nelse:\n    pass\n", set()),
])
def test_what_a_device_test_sends_away(code, names):
    stmt, _ = _if(code)
    assert left_for_cuda(stmt) == names


REBOUND = """
import torch

def step(t, g):
    g.replay()
    if t.is_cuda:
        return None
    {rebind}
    return t.item()

def run(g, x):
    while True:
        step(x, g)
"""


@pytest.mark.parametrize("rebind", [
    "t, k = pair(t)",
    "(t := t.cuda())",
    "for t in parts(t): pass",
])
def test_a_name_rebound_after_the_device_test_is_no_host_tensor(rebind):
    """The test spoke of the old value: whatever the rest binds to the name may be on the device
    (tuple targets, ``:=`` and ``for`` are not plain assignments; review of the merged tree)."""
    found = analyze({"m.py": REBOUND.format(rebind=rebind)})
    assert any(f.rule == "GL101" for f in found), rebind
    assert not any(f.rule == "GL101" for f in analyze({"m.py": REBOUND.format(rebind="pass")}))


def test_a_with_name_rebinds_too():
    code = REBOUND.format(rebind="with opened() as t:\n        x = t.item()")
    assert 10 in {f.line for f in analyze({"m.py": code}) if f.rule == "GL101"}
