"""State handed in, grown, and handed back: the value flow :class:`.matchers.growing_concat.GrowingConcat`
reads besides ``x = torch.cat([x, new])``, one function at a time, in statement order.

**A cache grown onto what the caller passed in.** A Hugging Face-style attention takes the cache
of the step before as a parameter and returns the grown one as its "present"::

    def attn(self, x, past=None):
        if past is not None:
            k = torch.cat([past[0], k], dim=2)       # the caller's tensor, copied whole and grown
        present = (k, v) if use_cache else None
        return out, present                          # handed back: the next step passes it in again

No name is concatenated onto itself, yet the cache grows every step: the decode loop carries the
returned value round (``past = out.past_key_values``) into the next call's parameter. Reported
when the first tensor joined is a parameter's state -- the parameter itself, an element or field
of it (``past[0]``, ``past.key``), or a local bound only to one (``past_k, past_v = past``) -- and
what the concatenation is bound to reaches the function's return, directly or through tuples
built from it (``present = (k, v)``; ``outputs = (out, present)``; ``return outputs``).
A concatenation onto a parameter that is not returned (an activation joined and consumed) is not.

**A tensor split and joined again.** Partial rotary embeddings rotate a slice of the query and
join the untouched rest back (``q_rot = q[..., :r]; q_pass = q[..., r:]; q = rope(q_rot); q =
torch.cat((q, q_pass), dim=-1)``): the result is as large as ``q`` was, nothing grows.
:meth:`GrownState.rejoined` tells it: every other part is a slice of the name's earlier value,
and the name was rebound from another slice of it.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from graphlint.static.cstwalk import name_children
from graphlint.static.joins import CONCAT_TAILS
from graphlint.static.loopnames import base_name
from graphlint.static.weightargs import viewed

#: methods that return a tensor's values whole, in another dtype, device or layout
CASTS = frozenset(("type_as", "to", "type", "float", "half", "bfloat16", "double", "contiguous", "cuda"))


def _names(node: cst.CSTNode) -> set[str]:
    """Every plain name ``node`` reads."""
    found: set[str] = set()
    stack = [node]
    while stack:
        cur = stack.pop()
        if type(cur) is cst.Name:
            found.add(cur.value)
        elif type(cur) is cst.Attribute:
            stack.append(cur.value)  # ``x.attr``: ``attr`` is no name read
        else:
            stack.extend(name_children(cur))
    return found


def view_base(value: cst.BaseExpression) -> cst.BaseExpression:
    """``x`` of ``x.view(...).float()[0]``: what ``value`` keeps the elements of."""
    return viewed(value, CASTS)


def _tail(func: cst.BaseExpression) -> str:
    """``cat`` of ``torch.cat`` / ``cat``."""
    return func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else ""


def _slice_of(value: cst.BaseExpression) -> str | None:
    """``base`` of ``base[..., :r]`` / ``base[:, r:]``: a slice (not an element) of a plain name."""
    if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name) and any(
            isinstance(el.slice, cst.Index) is False for el in value.slice):
        return value.value.value
    return None


class GrownState:
    """Per-function bindings, in statement order; reset with :meth:`reset` when the function changes."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.state: dict[str, str] = {}  # local bound only to a parameter's state -> that parameter (``past_k, past_v = past``)
        self.grown: dict[str, list[Any]] = {}  # local -> deferred reports of the concatenation it holds
        self.held: dict[str, list[Any]] = {}  # local bound to a tuple holding grown ones (``present``)
        self.slices: dict[str, str] = {}  # local -> the name it is a slice of (``q_pass`` -> ``q``)
        self.parts: set[str] = set()  # names rebound from a slice of their earlier value (``q = rope(q_rot)``)
        self.done: set[int] = set()  # ids of reports emitted
        self.where: dict[str, tuple] = {}  # local holding grown state -> the statement path that bound it

    def is_state(self, first: cst.BaseExpression, params: set[str]) -> bool:
        """Whether ``first`` is a parameter's state as the caller handed it over -- cast or moved
        first (``past_key.type_as(k)``, ``.to(dtype)``, ``.float()``): the same cache's values, whole."""
        return self.param_of(first, params) is not None

    def param_of(self, first: cst.BaseExpression, params: set[str]) -> str | None:
        """The parameter whose state ``first`` is (:meth:`is_state`), else None."""
        while type(first) is cst.Call and type(first.func) is cst.Attribute and first.func.attr.value in CASTS:
            first = first.func.value
        if type(first) is cst.IfExp:  # ``cache[i] if cache else None``: the caller's state, or nothing yet
            arms = [a for a in (first.body, first.orelse) if not (type(a) is cst.Name and a.value == "None")]
            return self.param_of(arms[0], params) if len(arms) == 1 else None
        root = base_name(first)  # ``p`` of ``p[0]`` / ``p.key``; ``self.x`` of a field: never a parameter's
        if root is None or root == "self":
            return None
        return root if root in params else self.state.get(root)

    def rejoined(self, target: cst.BaseExpression, parts: list[cst.BaseExpression]) -> bool:
        """``q = torch.cat((q, q_pass))`` after ``q_pass = q[..., r:]`` and ``q = rope(q[..., :r])``."""
        if not isinstance(target, cst.Name) or target.value not in self.parts or len(parts) < 2:
            return False
        return all(isinstance(p, cst.Name) and self.slices.get(p.value) == target.value for p in parts[1:])

    def bind(self, target: cst.BaseExpression, value: cst.BaseExpression, params: set[str],
             grown: list[Any] | None = None, path: tuple = ()) -> None:
        """Record what the assignment ``target = value`` binds; ``grown``: the reports of a concatenation
        onto a parameter's state that ``value`` is; ``path``: the statement's (:func:`exclusive`)."""
        if type(target) in (cst.Tuple, cst.List):
            from_state = self.param_of(value, params) if type(value) not in (cst.Tuple, cst.List) else None
            for el in target.elements:
                if type(el.value) is cst.Name:
                    if not self._other_branch(el.value.value, path):
                        self._forget(el.value.value)
                    if from_state:  # ``past_k, past_v = past``
                        self.state[el.value.value] = from_state
            return
        if type(target) is cst.Attribute and type(target.value) is cst.Name and target.value.value != "self":
            held = self.holding(value)  # ``inter.cached_kv = cached_kv``: ``return out, inter`` hands it back
            if held:
                self.held[target.value.value] = self.held.get(target.value.value, []) + held
            return
        if type(target) is not cst.Name:
            return
        name = target.value
        read = _names(value)
        rebuilt = any(self.slices.get(n) == name for n in read)  # ``q = rope(q_rot)``, ``q_rot = q[..., :r]``
        kept = self.holding(value)  # ``k = torch.cat((mem_k, k))`` still holds the grown ``k``
        if kept:  # bound to grown state in either branch (``cached = (k, v)`` in one, ``(lat, rope)`` in the other)
            kept = list({id(r): r for r in self.held.get(name, []) + kept}.values())
        elif not grown and self._other_branch(name, path):
            return  # ``next_cache = (k, v)`` of the new keys in the ``else`` of the grown one: either may be returned
        self._forget(name)
        if grown or kept:
            self.where[name] = path
        if rebuilt:
            self.parts.add(name)
        base = _slice_of(value)
        if base is not None and base != name:
            self.slices[name] = base
        if grown:
            self.grown[name] = grown
        elif type(value) in (cst.Subscript, cst.Attribute, cst.IfExp) and self.is_state(value, params):
            self.state[name] = self.param_of(value, params)  # ``past_key = layer_past[0]``
        elif type(value) is cst.Call and self.is_state(view_base(value), params):
            self.state[name] = self.param_of(view_base(value), params)  # ``mems = mems.expand(...)``
        elif kept:
            self.held[name] = kept

    def _other_branch(self, name: str, path: tuple) -> bool:
        """Whether ``name`` holds grown state bound in the other branch of an ``if`` than ``path``."""
        return (name in self.grown or name in self.held) and exclusive(self.where.get(name, ()), path)

    def appended(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """``caches.append((k, v))`` of grown ones: the list holds them (``return out, caches``)."""
        held = self.holding(value)
        if held and type(target) is cst.Name:
            self.held[target.value] = self.held.get(target.value, []) + held

    def _forget(self, name: str) -> None:
        for table in (self.grown, self.held, self.slices, self.where):
            table.pop(name, None)
        self.state.pop(name, None)
        self.parts.discard(name)

    def holding(self, value: cst.BaseExpression | None) -> list[Any]:
        """The grown reports ``value`` hands on: a name holding them, a tuple or list of such, either
        side of ``a if c else b``."""
        if type(value) is cst.Name:
            return self.grown.get(value.value, []) + self.held.get(value.value, [])
        if type(value) in (cst.Tuple, cst.List):
            return [r for el in value.elements for r in self.holding(el.value)]
        if type(value) is cst.IfExp:
            return self.holding(value.body) + self.holding(value.orelse)
        if _slice_of(value) is not None:  # ``k[..., n:, :]``: the grown keys past a prefix (not ``outs[0]``)
            return self.holding(value.value)
        if type(value) is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value in CASTS:
            return self.holding(value.func.value)
        if type(value) is cst.Call and value.args and type(value.args[0].value) in (cst.List, cst.Tuple) \
                and value.args[0].keyword is None and _tail(value.func) in CONCAT_TAILS:
            return self.holding(value.args[0].value)  # joined again: what it joins is in it whole
        return []

    def augment(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """``outputs += (weights,)`` keeps what ``outputs`` held."""
        if isinstance(target, cst.Name) and target.value in self.held:
            self.held[target.value] = self.held[target.value] + self.holding(value)

    def kept_on(self, target: cst.BaseExpression, params: set[str]) -> bool:
        """Whether storing into ``target`` carries a value past the call: a field (``self.k``), or an
        element or field of what the caller handed in (``past.k``, ``cache[i]``)."""
        if type(target) not in (cst.Attribute, cst.Subscript):
            return False
        root = base_name(target)
        return root is not None and (root.startswith("self.") or root in params or root in self.state)

    def returned(self, value: cst.BaseExpression | None) -> list[Any]:
        """The reports a ``return value`` hands back, each once."""
        out = []
        for raw in self.holding(value):
            if id(raw) not in self.done:
                self.done.add(id(raw))
                out.append(raw)
        return out


def exclusive(a: tuple, b: tuple) -> bool:
    """Whether the statements at paths ``a`` and ``b`` (the walker's ``(field, index)`` per block) sit in
    the two branches of one ``if``: the first step where they part is its body against its ``orelse``."""
    for (fa, ia), (fb, ib) in zip(a, b):
        if (fa, ia) != (fb, ib):
            return {fa, fb} == {"body", "orelse"}
    return False
