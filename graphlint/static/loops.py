"""Per-token loops, noticed while a file is walked.

An eager engine's decode step is whatever its per-token loop runs: DeepSeek-style
``for cur_pos in range(start, total): logits = model.forward(tokens[:, prev_pos:cur_pos], prev_pos);
...; prev_pos = cur_pos``, gpt-fast style ``for i in range(n): tok, p = decode_one_token(model,
tok, input_pos); input_pos += 1``. What makes such a loop a *decode* loop, statically:

- it is a ``while`` loop or a ``for`` over ``range(...)`` (loops over layers, experts, batches or
  devices iterate a collection);
- a call in its body feeds its own output back: what the call returns (the names its statement
  binds or the container it mutates) flows, through the body's assignments and container stores,
  into a value the call reads on the next iteration (``x = f(x)``; ``logits = model(tokens[:,
  prev:cur]); nxt = sample(logits); tokens[:, cur] = nxt``; ``tok, p = decode_one_token(model, tok,
  pos)``). A loop over images, layers or requests that only collects results (``embs.append(
  vision(img[i]))``, ``start = end``) does not;
- the callee is not chosen by the loop variable (``self.layers[i](x)`` is a layer loop).

The walker records such loops with the calls that feed back (:class:`LoopInfo`); the linker
keeps those whose call reaches device work (:mod:`.entries`). Names read by a call and
assignments' dependencies are collected only inside eligible loops, so other code pays nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

import libcst as cst

from graphlint.static.cstwalk import bound_names, preorder
from graphlint.static.facts import FunctionInfo, LoopInfo
from graphlint.static.params import POSITION_NAMES

if TYPE_CHECKING:
    from graphlint.static.tensors import TensorOracle

MUTATING_METHODS = frozenset(("append", "extend", "insert", "add", "update"))


def _names(node: cst.CSTNode) -> set[str]:
    return {n.value for n in preorder(node) if type(n) is cst.Name}


def _base_name(node: cst.BaseExpression) -> str | None:
    while isinstance(node, (cst.Subscript, cst.Attribute)):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def eligible(stmt: cst.For | cst.While) -> bool:
    if isinstance(stmt, cst.While):
        return True
    it = stmt.iter
    return isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range"


@dataclass
class LoopFrame:
    id: int
    where: tuple  # the loop statement's position (see ``Site``)
    eligible: bool
    targets: set[str]
    writes: dict[str, int] = field(default_factory=dict)
    mutated: set[str] = field(default_factory=set)
    deps: dict[str, set[str]] = field(default_factory=dict)
    #: statement ordinal -> names bound / containers mutated there; container -> what was put in it
    made_at: dict[int, set[str]] = field(default_factory=dict)
    filled: dict[str, set[str]] = field(default_factory=dict)
    calls: list[tuple[int, tuple, set[str]]] = field(default_factory=list)  # (order, callee, reads)

    def feeds_back(self, order: int, reads: set[str]) -> bool:
        """Whether the output of the call at ``order`` reaches what it reads."""
        derived = set(self.made_at.get(order, ()))
        if not derived or not reads:
            return False
        changed = True
        while changed and len(derived) < 256:
            changed = False
            for table in (self.deps, self.filled):
                for name, sources in table.items():
                    if name not in derived and sources & derived:
                        derived.add(name)
                        changed = True
        return bool(reads & derived)


class LoopTracker:
    """Mixin of :class:`graphlint.static.walker.Walker`: per-token loops, and what a ``for`` binds."""

    func: FunctionInfo
    order: int
    path: list
    oracle: "TensorOracle"

    def init_loops(self) -> None:
        self.loop_frames: list[LoopFrame] = []
        self.tracking = 0  # eligible frames on the stack

    def push_loop(self, stmt: cst.For | cst.While, loop_id: int) -> None:
        ok = eligible(stmt)
        targets = _names(stmt.target) if isinstance(stmt, cst.For) else set()
        for frame in self.loop_frames:  # an inner ``for`` binds its target in every outer loop
            if frame.eligible:
                for name in targets:
                    frame.writes[name] = self.order
        self.loop_frames.append(LoopFrame(loop_id, (tuple(self.path), "", 0), ok, targets))
        self.tracking += ok
        if ok:
            self.func.range_loops.append(loop_id)

    def pop_loop(self) -> None:
        frame = self.loop_frames.pop()
        self.tracking -= frame.eligible
        if not frame.eligible:
            return
        exprs: list[tuple] = []
        for order, expr, reads in frame.calls:
            if expr not in exprs and frame.feeds_back(order, reads):
                exprs.append(expr)
        if exprs:
            self.func.loops.append(LoopInfo(frame.id, frame.where, exprs))

    def note_assignment(self, targets: list[cst.BaseExpression], value: cst.BaseExpression | None,
                        augmented: bool = False) -> None:
        if not self.tracking:
            return
        reads = _names(value) if value is not None else set()
        for target in targets:
            names = bound_names(target)
            base = _base_name(target) if not names else None
            for frame in self.loop_frames:
                if not frame.eligible:
                    continue
                made = frame.made_at.setdefault(self.order, set())
                if base is not None or augmented:
                    frame.mutated.update([base] if base else names)
                    for name in [base] if base else names:
                        frame.filled.setdefault(name, set()).update(reads | ({name} if augmented else set()))
                        made.add(name)
                for name in names:
                    frame.writes[name] = self.order
                    frame.deps[name] = reads | frame.deps.get(name, set())  # every binding in the body
                    made.add(name)

    def note_call(self, call: cst.Call, expr: tuple | None) -> None:
        if not self.tracking:
            return
        func = call.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            method = func.attr.value
            if method in MUTATING_METHODS or (method.endswith("_") and not method.startswith("_")):
                args = set().union(*(_names(a.value) for a in call.args)) if call.args else set()
                for frame in self.loop_frames:
                    if frame.eligible:
                        frame.mutated.add(func.value.value)
                        frame.filled.setdefault(func.value.value, set()).update(args)
                        frame.made_at.setdefault(self.order, set()).add(func.value.value)
        if expr is None:
            return
        callee = _names(func)
        reads = set().union(*(_names(a.value) for a in call.args)) if call.args else set()
        if isinstance(func, cst.Attribute):
            reads |= _names(func.value) - {"self"}  # ``model.forward(...)``: the receiver is an input too
        for frame in self.loop_frames:
            if frame.eligible and not callee & frame.targets:
                frame.calls.append((self.order, expr, reads))

    def bind_loop_target(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """What ``for target in iterable`` makes of its names: positions, sub-modules, objects, tensors."""
        self.oracle.taint(target, iterable)
        if isinstance(target, cst.Name) and _is_range(iterable) and any(
                fnmatchcase(target.value, pat) for pat in POSITION_NAMES):
            self.oracle.fn.positions.add(target.value)  # ``for cur_pos in range(start, total_len):``
            self.oracle.fn.tensors.discard(target.value)
            return
        func = iterable.func if isinstance(iterable, cst.Call) else None
        if isinstance(func, cst.Name) and func.value == "enumerate":
            if iterable.args and isinstance(target, cst.Tuple) and len(target.elements) == 2:
                self.oracle.bind(target.elements[0].value, None)
                self.oracle.taint(target.elements[0].value, None)
                self.bind_loop_target(target.elements[1].value, iterable.args[0].value)
                return
        source = self.oracle.module_source(iterable)
        if source is not None and isinstance(target, cst.Name):
            self.oracle.fn.module_aliases[target.value] = source
            return
        tensor = self.oracle.is_tensor(iterable)
        for name in preorder(target):
            if isinstance(name, cst.Name):
                (self.oracle.fn.tensors.add if tensor else self.oracle.fn.tensors.discard)(name.value)
                self.oracle.fn.module_aliases.pop(name.value, None)


def _is_range(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "range"
