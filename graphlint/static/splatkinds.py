"""What a call's ``**d`` passes each keyword: the kinds of a dict display's values (:mod:`.valuekinds`).

A model gathers what every block needs into one dict and splats it (``kwargs = dict(grid=grid,
lens=lens, table=self.table)``, then ``x = block(x, **kwargs)`` per block): without this the call
passed nothing known, so a block's parameter never learned what every caller gives it -- a grid of
sizes built on the host (``torch.stack([torch.tensor(u.shape[1:]) for u in xs])``) was a device
tensor to the block and to every helper it hands the grid on to, and its ``.tolist()`` a read-back.

Followed only where nothing can change the dict between its display and the splat: a local bound
once in the function (:func:`.oncebound.bound_once`), to a display with string keys and no spread
of another dict (``{"k": v}``, ``dict(k=v)``), every use of it one :mod:`.dictkeys` follows and
none storing, deleting or updating a key; or a display splatted in place (``f(x, **dict(k=v))``).
The kinds are the values' at the display, where the dict took them.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.dictkeys import changed_in, display_items, tracked_keys
from graphlint.static.oncebound import bound_once
from graphlint.static.tensors import TensorOracle


def note_splat_dict(target: cst.BaseExpression, value: cst.BaseExpression, oracle: TensorOracle, kind_of) -> None:
    """After ``name = {...}``: the kind of each key's value, where the dict is followed (above)."""
    if type(target) is not cst.Name:
        return
    fn = oracle.fn
    name = target.value
    items = _plain_items(value)
    if items is None or not bound_once(fn, name) or tracked_keys(fn.defn, name) is None \
            or name in changed_in(fn.defn):
        fn.splat_kinds.pop(name, None)
        return
    fn.splat_kinds[name] = tuple((key, kind_of(item, oracle)) for key, item in items)


def splat_kinds(value: cst.BaseExpression, oracle: TensorOracle, kind_of) -> tuple | None:
    """((keyword, kind), ...) that ``**value`` passes; None when unknown."""
    if type(value) is cst.Name:
        return oracle.fn.splat_kinds.get(value.value)
    items = _plain_items(value)
    return None if items is None else tuple((key, kind_of(item, oracle)) for key, item in items)


def _plain_items(value: cst.BaseExpression) -> list | None:
    """[(key, value)] of a display with string keys and no spread (``{**other}`` may hold any key)."""
    found = display_items(value)
    if found is None or found[1]:
        return None
    return found[0]
