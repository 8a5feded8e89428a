"""Python numbers a per-token loop changes every step, handed to the code a CUDA-graph capture
in that loop records: frozen at the capture.

``with torch.cuda.graph(g): out = self.step(static_ids, offset, ...)`` under ``if key not in
self.graphs:`` records the step once and replays it on later iterations. A Python int among its
arguments is baked into the recording: when the loop computes it anew every step -- its own
counter, a size of the id tensor it regrows with ``torch.cat`` (``ids.size(1) - 1``), a counter
it advances, or a local bound from those -- every replay uses the value of the capture's step
(``torch.arange(offset, offset + t)`` gives every later token the first token's position). The
callee's parameter rarely has a position's name, so only the loop says so: such an argument gets
the loop's ``~<loop id>`` mark (:data:`.valuekinds.ADVANCED`), which becomes a per-step int
(:data:`.valuekinds.STEP`) when the loop turns out a per-token loop and a position of the callee
through :mod:`.valueflow`; the position rules then report its uses there.

Quiet where the value is fixed for the graph's life: a capture not under a branch of the loop
(recorded again every step: nothing is reused), an argument whose names the capture's key
holds (``if (bs, pos) not in self.graphs:``: one graph per value), an argument the oracle knows
as a tensor (the captured code reads it from the device), and numbers the loop does not change
(a configuration field, a batch size read from a shape the loop does not grow).
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import bound_names, preorder
from graphlint.static.grownnames import SCOPES, grown_names
from graphlint.static.iterations import advanced_names, loop_counter
from graphlint.static.names import resolve
from graphlint.static.valuekinds import ADVANCED, NUMBER, UNKNOWN

#: argument kinds an argument may have and still be a per-step number: nothing known, a Python
#: number (``ids.size(1) - 1``, a name bound to ``len(...)``)
OPEN_KINDS = (UNKNOWN, NUMBER)
#: host arithmetic that keeps a per-step operand per-step
HOST_CALLS = frozenset(("min", "max", "int", "abs", "len"))
#: factories a per-step number sizes or fills (GL310's): a parameter passed to one is a position's use
SIZED_FACTORIES = frozenset(f"torch.{op}" for op in ("arange", "zeros", "empty", "ones", "full", "rand", "randn",
                                                      "linspace"))
#: appending to a Python list: its ``len`` grows every iteration
APPENDS = frozenset(("append", "extend", "insert"))


def captured_step_kinds(call: cst.Call, kinds: tuple | None, at) -> tuple | None:
    """``kinds`` (:func:`.argkinds.arg_kinds`) of a call made inside a capture, with each argument
    the enclosing loop changes every step and the capture's key does not hold marked
    ``~<loop id>``; ``at``: the walker, inside a capture."""
    frames = at.loop_frames
    if not frames or any(arg.star for arg in call.args):
        return kinds
    frame = frames[-1]
    loop = frame.stmt
    if not isinstance(loop, (cst.For, cst.While)):
        return kinds
    guards = _guards(loop.body, call)
    if not guards:
        return kinds  # captured on every iteration (or not found): nothing recorded is replayed later
    varying = _varying(loop, at.imports)
    if not varying.names and not varying.grown and not varying.lists:
        return kinds
    keyed = _keyed(loop, guards)
    mark = f"{ADVANCED}{frame.id}"
    positional = list(kinds[0]) if kinds is not None else []
    named = dict(kinds[1]) if kinds is not None else {}
    changed = False
    index = 0
    for arg in call.args:
        kind = positional[index] if arg.keyword is None and index < len(positional) else \
            named.get(arg.keyword.value, UNKNOWN) if arg.keyword is not None else UNKNOWN
        open_kind = kind in OPEN_KINDS or kind.startswith("@")
        if open_kind and varying.varies(arg.value) and not (_names(arg.value) & keyed):
            kind, changed = mark, True
        if arg.keyword is None:
            if index < len(positional):
                positional[index] = kind
            else:
                positional.append(kind)
            index += 1
        else:
            named[arg.keyword.value] = kind
    if not changed:
        return kinds
    at.frozen_loops.add(frame.id)
    rest = tuple(kinds[2:]) if kinds is not None else ()
    order = [k for k, _ in kinds[1]] if kinds is not None else []
    order += [k for k in named if k not in order]
    return (tuple(positional), tuple((k, named[k]) for k in order), *rest)


def _guards(body: cst.CSTNode, call: cst.Call) -> list[cst.If] | None:
    """The ``if`` statements of the loop's body (not of a nested scope) the call sits in, outermost
    first; None when the call is not in ``body``."""
    stack: list[tuple[cst.CSTNode, tuple]] = [(body, ())]
    while stack:
        node, ifs = stack.pop()
        if node is call:
            return list(ifs)
        if isinstance(node, SCOPES):
            continue
        inner = (*ifs, node) if type(node) is cst.If and not _always(node.test) else ifs
        stack.extend((child, inner) for child in node.children)
    return None


def _always(test: cst.BaseExpression) -> bool:
    """``if True:``: no branch, the block runs every iteration."""
    return type(test) is cst.Name and test.value == "True"


def _keyed(loop: cst.For | cst.While, guards: list[cst.If]) -> set[str]:
    """Names the capture's key holds: ``k`` of ``if k not in graphs:`` and, for a local ``k``, the
    names it is bound from in the loop (``k = (bs, pos)``)."""
    keys: set[str] = set()
    for guard in guards:
        for node in preorder(guard.test):
            if type(node) is cst.Comparison:
                for target in node.comparisons:
                    if type(target.operator) in (cst.NotIn, cst.In):
                        keys |= _names(node.left)
    bound = _bindings(loop)
    for name in list(keys):
        for value in bound.get(name, ()):
            keys |= _names(value)
    return keys


def _names(node: cst.CSTNode) -> set[str]:
    return {n.value for n in preorder(node) if type(n) is cst.Name}


def _bindings(loop: cst.For | cst.While) -> dict[str, list[cst.BaseExpression]]:
    """name -> the values the loop's body binds it to (``name = v``, ``name += v``), nested scopes apart."""
    out: dict[str, list[cst.BaseExpression]] = {}
    stack: list[cst.CSTNode] = [loop.body]
    while stack:
        node = stack.pop()
        if isinstance(node, SCOPES):
            continue
        if type(node) is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name:
            out.setdefault(node.targets[0].target.value, []).append(node.value)
        elif type(node) is cst.AugAssign and type(node.target) is cst.Name:
            out.setdefault(node.target.value, []).append(node.value)
        stack.extend(node.children)
    return out


class _Varying:
    """What a loop changes every iteration: names (its counter, counters it advances, locals bound
    from those), tensors it regrows with ``torch.cat`` (with the dimension grown) and lists it appends to."""

    def __init__(self, names: set[str], grown: dict[str, int | None], lists: set[str]) -> None:
        self.names, self.grown, self.lists = names, grown, lists

    def varies(self, node: cst.BaseExpression) -> bool:
        kind = type(node)
        if kind is cst.Name:
            return node.value in self.names
        if kind is cst.BinaryOperation:
            return self.varies(node.left) or self.varies(node.right)
        if kind is cst.UnaryOperation:
            return self.varies(node.expression)
        if kind is cst.IfExp:
            return self.varies(node.body) or self.varies(node.orelse)
        if kind is cst.Subscript:  # ``ids.shape[1]``
            value = node.value
            return type(value) is cst.Attribute and value.attr.value == "shape" and len(node.slice) == 1 \
                and type(node.slice[0].slice) is cst.Index and self._grown_dim(value.value, node.slice[0].slice.value)
        if kind is cst.Call:
            func = node.func
            if type(func) is cst.Attribute and func.attr.value == "size" and len(node.args) == 1:
                return self._grown_dim(func.value, node.args[0].value)
            if type(func) is cst.Attribute and func.attr.value == "numel" and not node.args:
                return type(func.value) is cst.Name and func.value.value in self.grown
            if type(func) is cst.Name and func.value == "len" and len(node.args) == 1:
                arg = node.args[0].value
                return type(arg) is cst.Name and (arg.value in self.lists or self.grown.get(arg.value, -1) == 0)
            if type(func) is cst.Name and func.value in HOST_CALLS:
                return any(self.varies(a.value) for a in node.args if not a.star)
        return False

    def _grown_dim(self, tensor: cst.BaseExpression, dim: cst.BaseExpression) -> bool:
        """``ids.size(d)`` of a tensor the loop regrows along ``d`` (``-1`` and ``1`` taken alike:
        the 2-D id tensors of a decode loop)."""
        if type(tensor) is not cst.Name or tensor.value not in self.grown:
            return False
        value = _int(dim)
        grown = self.grown[tensor.value]
        if value is None or grown is None:
            return False
        return value == grown or {value, grown} == {1, -1}


def _int(node: cst.BaseExpression) -> int | None:
    if type(node) is cst.Integer:
        return int(node.value, 0)
    if type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus and type(node.expression) is cst.Integer:
        return -int(node.expression.value, 0)
    return None


def _varying(loop: cst.For | cst.While, imports: dict[str, str]) -> _Varying:
    names = set(advanced_names(loop))
    if isinstance(loop, cst.For):
        counter = loop_counter(loop, 0)
        if counter is not None:
            names.add(counter[1])
    grown = {name: _cat_dim(loop, name, imports) for name in grown_names(loop, imports)}
    lists = _appended(loop)
    varying = _Varying(names, grown, lists)
    bound = _bindings(loop)
    changed = True
    while changed:  # locals bound from what varies (``offset = 0 if i == 0 else ids.size(1) - 1``)
        changed = False
        for name, values in bound.items():
            if name not in names and any(varying.varies(v) for v in values):
                names.add(name)
                changed = True
    return varying


def _cat_dim(loop: cst.For | cst.While, name: str, imports: dict[str, str]) -> int | None:
    """The dimension ``name = torch.cat([name, ...], dim=d)`` grows (0 by default); None when the
    loop's concatenations of it disagree or say it otherwise."""
    dims: set[int | None] = set()
    for node in preorder(loop.body):
        if type(node) is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name \
                and node.targets[0].target.value == name and type(node.value) is cst.Call \
                and (resolve(node.value.func, imports) or "").startswith("torch.c"):
            args = node.value.args
            dim = next((a.value for a in args if a.keyword is not None and a.keyword.value == "dim"), None)
            if dim is None:
                dim = args[1].value if len(args) > 1 and args[1].keyword is None else cst.Integer("0")
            dims.add(_int(dim))
    return dims.pop() if len(dims) == 1 else None


def _appended(loop: cst.For | cst.While) -> set[str]:
    """Names the loop's body appends to (``tokens.append(t)``): their ``len`` grows."""
    out: set[str] = set()
    for node in preorder(loop.body):
        if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value in APPENDS \
                and type(node.func.value) is cst.Name:
            out.add(node.func.value.value)
    return out - set(bound_names(loop.target) if isinstance(loop, cst.For) else ())
