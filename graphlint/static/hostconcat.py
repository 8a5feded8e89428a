"""A concatenation with a host tensor in it is a new tensor in pageable host memory.

``torch.cat`` and ``torch.stack`` need every input on one device (no 0-dim exception, unlike
arithmetic), so one input known to be on the host (:mod:`.pageable`, :mod:`.cputensors`) puts the
result there; and the result is a fresh allocation, never pinned, whatever its inputs were. A
verifier that walks a tree on the CPU grows its accepted ids this way
(``acc = torch.empty(0, dtype=torch.long, device="cpu")``, then ``acc = torch.cat([acc, tok[None]])``
per accepted node), and the step uploads them with ``.to(device)``: a pageable copy every step.
A comprehension joins its element, each one of them: ``torch.stack([torch.tensor(u.shape[2:]) for u
in xs])`` (a grid of sizes read from shapes) is a host tensor.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from graphlint.static.joins import JOINS
from graphlint.static.names import resolve
from graphlint.static.tensors import TensorOracle

#: joins of a sequence of tensors alone, all on one device (torch raises otherwise); also
#: :mod:`.cputensors`' and :mod:`.grownnames`' joins
CONCATS = JOINS


def host_concat(node: cst.Call, oracle: TensorOracle, on_host: Callable[[cst.BaseExpression], bool]) -> bool:
    """``torch.cat([a, b], dim=...)`` with ``a`` or ``b`` a host tensor (``on_host``)."""
    if resolve(node.func, oracle.imports) not in CONCATS:
        return False
    first = next((a.value for a in node.args if a.keyword is None and not a.star
                  or a.keyword is not None and a.keyword.value == "tensors"), None)
    if type(first) in (cst.ListComp, cst.GeneratorExp):  # ``torch.stack([torch.tensor(u.shape) for u in xs])``
        return on_host(first.elt)
    if type(first) not in (cst.List, cst.Tuple):
        return False
    return any(type(el) is cst.Element and on_host(el.value) for el in first.elements)
