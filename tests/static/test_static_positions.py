"""Reported positions come from ``ast`` by statement path and rank; check them in every construct."""

from __future__ import annotations

import textwrap

from static_helpers import summarize

SOURCE = textwrap.dedent('''
import torch

def deco(f):
    return f

@deco
def decode_a(a, b, c, d, e, f, g, h, i, j, k, l, m):
    x = 1; y = a.item(); z = b.item()
    if c.item() > 0:
        pass
    elif d.item():
        pass
    else:
        e.item()
    try:
        f.item()
    except ValueError as err:
        g.item()
    finally:
        h.item()
    with torch.no_grad(), open(i.item()) as fh:
        pass
    for q in range(j.item()):
        k.item()
    else:
        l.item()
    w = [m.item() for _ in range(3) if m.item()]
    s = f"{a.item()} {b.item()}"
    t = (lambda: c.item())()
    u = d.item() if e.item() else f.item()
    match g.item():
        case 1:
            h.item()
    while i.item():
        break
    v = (
        j.item()
        + k.item()
    )
    n = {a.item(): b.item()}
    return (n := c.item())

async def decode_b(a, b):
    async with a.item() as q:
        pass
    async for r in b.item():
        pass
''')


def test_every_item_call_is_placed_on_its_receiver():
    (summary,) = summarize({"p.py": SOURCE})
    lines = SOURCE.splitlines()
    items = [c for c in summary.data.candidates if c.code == "GL101"]
    assert len(items) == SOURCE.count(".item()") == 30
    for c in items:
        at = lines[c.line - 1][c.col - 1 :]
        assert at[:1] in "abcdefghijklm" and at[1:].startswith(".item()"), (c.line, c.col, lines[c.line - 1])


def test_a_truth_test_is_placed_on_its_condition_not_its_statement():
    src = "import torch\ndef decode(x: torch.Tensor):\n    if (x.sum() >\n            0):\n        pass\n    if x > 0:\n        pass\n"
    (summary,) = summarize({"p.py": src})
    assert [(c.code, c.line, c.col) for c in summary.data.candidates] == [("GL105", 3, 9), ("GL105", 6, 5)]
