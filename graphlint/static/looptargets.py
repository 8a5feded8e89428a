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

from graphlint.static.cputensors import host_reads_only
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
        tensor = self.oracle.is_tensor(iterable)
        for name in preorder(target):
            if isinstance(name, cst.Name):
                (self.oracle.fn.tensors.add if tensor else self.oracle.fn.tensors.discard)(name.value)
                self.oracle.fn.module_aliases.pop(name.value, None)
