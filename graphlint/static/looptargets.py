"""What ``for target in iterable`` makes of its names, for the walker's tensor facts.

Its own unit beside :mod:`.loops` (which decides whether a loop carries the step's output back)
because it answers another question of the same statement: what kind each bound name holds --
a position (``for cur_pos in range(...)``), a Python int, a sub-module alias, a list row
(:mod:`.listrows`), a tensor -- and forgets what the names held before. What a loop walks of a host
tensor's ``.tolist()`` (:func:`.cputensors.host_reads_only`) is host data, no read-back.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

import libcst as cst

from graphlint.static.cputensors import host_reads_only, is_cpu_tensor
from graphlint.static.cstwalk import bound_names, preorder
from graphlint.static.devicenarrow import widen
from graphlint.static.facts import FunctionInfo
from graphlint.static.fixedcounters import note_counter
from graphlint.static.listrows import bind_row
from graphlint.static.loopnames import is_range
from graphlint.static.params import POSITION_NAMES
from graphlint.static.stepflow import note_assignment

if TYPE_CHECKING:
    from graphlint.static.tensors import TensorOracle


class LoopTargets:
    """Mixin of :class:`.loops.LoopTracker` (and so of the walker): binds a ``for``'s target."""

    func: FunctionInfo
    order: int
    oracle: "TensorOracle"

    def bind_loop_target(self, target: cst.BaseExpression, iterable: cst.BaseExpression,
                         loop: tuple[cst.For, int] | None = None) -> None:
        """What ``for target in iterable`` makes of its names: positions, sub-modules, objects, tensors
        (``loop``: the statement and its id, whose counter may be a fixed one, :mod:`.fixedcounters`)."""
        self.oracle.taint(target, iterable)
        if self.oracle.fn.readbacks and host_reads_only(iterable, self.oracle):  # ``for f, h in grid.tolist()``
            self.oracle.fn.readbacks.difference_update(bound_names(target))  # of a host tensor: host data
        note_assignment(self.func, self.order, [target], iterable)
        for name in bound_names(target):
            self.oracle.fn.ints.discard(name)
            self.oracle.fn.numbers.discard(name)
            self.oracle.fn.params.discard(name)
            self.oracle.fn.sliced_params.discard(name)
            widen(self.oracle.fn, {name} & self.oracle.fn.off_cuda)  # a device test's verdict was on the old value
        if isinstance(target, cst.Name) and is_range(iterable) and any(
                fnmatchcase(target.value, pat) for pat in POSITION_NAMES):
            self.oracle.fn.positions.add(target.value)  # ``for cur_pos in range(start, total_len):``
            self.oracle.fn.tensors.discard(target.value)
            if loop is not None:
                note_counter(self.oracle, target.value, iterable, loop, self.in_capture)
            return
        func = iterable.func if isinstance(iterable, cst.Call) else None
        if isinstance(func, cst.Name) and func.value == "enumerate":
            if iterable.args and isinstance(target, cst.Tuple) and len(target.elements) == 2:
                self.oracle.bind(target.elements[0].value, None)
                self.oracle.taint(target.elements[0].value, None)
                self.bind_loop_target(target.elements[1].value, iterable.args[0].value)
                return
        if bind_row(self.oracle, target, iterable):  # ``for row in rows`` of Python lists (:mod:`.listrows`)
            return
        source = self.oracle.module_source(iterable)
        if source is not None and isinstance(target, cst.Name):
            self.oracle.fn.module_aliases[target.value] = source
            return
        if isinstance(target, cst.Name) and is_range(iterable):
            self.oracle.fn.ints.add(target.value)  # ``for i in range(n)``: a Python int
            if loop is not None:  # a fixed counter whatever its name: constant per unrolled copy (:mod:`.graphconsts`)
                note_counter(self.oracle, target.value, iterable, loop, self.in_capture)
        # ``for s, nxt in zip(sig[:-1], sig[1:])``: each name an element of what it walks (its tensor facts only)
        pairs = zip(target.elements, iterable.args) if zipped(target, iterable, self.oracle.imports) else ()
        for part, walked in [(el.value, arg.value) for el, arg in pairs] or [(target, iterable)]:
            tensor = self.oracle.is_tensor(walked)
            host = tensor and is_cpu_tensor(walked, self.oracle)  # ``for o in offsets`` of a CPU tensor: host rows
            for name in preorder(part):
                if isinstance(name, cst.Name):
                    (self.oracle.fn.tensors.add if tensor else self.oracle.fn.tensors.discard)(name.value)
                    (self.oracle.fn.cpu.add if host else self.oracle.fn.cpu.discard)(name.value)
                    self.oracle.fn.module_aliases.pop(name.value, None)


def zipped(target: cst.BaseExpression, iterable: cst.BaseExpression, imports: dict[str, str]) -> bool:
    """``for a, b in zip(xs, ys)`` (builtin ``zip``, one plain argument per target name): ``a`` is a tensor
    where ``for a in xs`` would make it one -- an element of a device tensor is a device tensor (a 0-dim
    one of a row: ``sigma <= s_max`` reads it back), an element of a host tensor or a Python list is not.
    Only the tensor facts: what the whole ``zip`` taints stays as it was (a row of ``grid.tolist()`` is no
    read-back of its own where the ``.tolist()`` is reported)."""
    return type(iterable) is cst.Call and type(iterable.func) is cst.Name and iterable.func.value == "zip" \
        and "zip" not in imports and type(target) in (cst.Tuple, cst.List) \
        and len(target.elements) == len(iterable.args) >= 2 \
        and all(type(el) is cst.Element for el in target.elements) \
        and all(arg.keyword is None and not arg.star for arg in iterable.args)
