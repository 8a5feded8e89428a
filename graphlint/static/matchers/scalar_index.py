"""A 0-dim device tensor used where Python needs an int: a slice bound, an index, a ``range()``
argument, a size (``torch.topk(x, k)``, ``torch.zeros(n)``, ``x.view(n, -1)``, ``x.narrow(0, 0, n)``,
``F.pad(x, (0, n))``).

``x[best, : n + 1]`` with ``n = lengths.max()`` calls ``n.__index__()``, which copies the value to
the host: a read-back as real as ``.item()``, every time the line runs, that no ``.item()`` shows
(:mod:`graphlint.static.scalars` says which values are such tensors). Indexing *by* a 0-dim one
(``x[best]`` with ``best = t.argmax()``) selects with its value as an int the same way (measured on
the H200 under sync-debug mode: ``reports/h200-2026-12-03-f/``). Indexing with an index tensor of
one or more dimensions (``x[idx]``, ``x[:, idx]``) is a gather on the device and is not reported;
neither is a value the code read back explicitly first (``n = t.max().item()``: that call is the
finding). A size argument converts the same way: ``k = counts.max()`` then ``torch.topk(x, k)``
reads ``k`` back before the kernel is launched (:data:`SIZES` names which arguments are sizes).
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.matchers.base import Matcher, MatchContext
from graphlint.static.matchers.call_args import positional
from graphlint.static.names import is_imported_root, resolve
from graphlint.static.scalars import is_scalar_tensor

ALL = None  # every positional argument is a size (``torch.zeros(b, n)``, ``x.view(n, -1)``)
#: op -> (positions of its size arguments or ALL, their keywords), as ``torch.<op>(x, ...)`` /
#: ``torch.<factory>(...)`` and as a method ``x.<op>(...)`` (one position less: no input argument)
SIZES: dict[str, tuple[tuple[int, ...] | None, frozenset[str]]] = {
    "topk": ((1,), frozenset(("k",))), "kthvalue": ((1,), frozenset(("k",))),
    "multinomial": ((1,), frozenset(("num_samples",))), "narrow": ((2, 3), frozenset(("start", "length"))),
    "split": ((1,), frozenset(("split_size", "split_size_or_sections"))),
}
FACTORIES: dict[str, tuple[tuple[int, ...] | None, frozenset[str]]] = {
    **{name: (ALL, frozenset(("size",))) for name in ("zeros", "ones", "empty", "rand", "randn")},
    "arange": (ALL, frozenset(("start", "end", "step"))), "full": ((0,), frozenset(("size",))),
    "randperm": ((0,), frozenset(("n",))),
}
#: functions by their full name: ``F.pad(mask, (0, n))`` reads every amount of its pad tuple
FUNCTIONS: dict[str, tuple[tuple[int, ...] | None, frozenset[str]]] = {
    "torch.nn.functional.pad": ((1,), frozenset(("pad",))),
}
METHODS: dict[str, tuple[tuple[int, ...] | None, frozenset[str]]] = {
    **{name: (ALL, frozenset(("size",))) for name in ("view", "reshape", "expand", "repeat", "new_zeros",
                                                       "new_empty", "new_ones")},
    "new_full": ((0,), frozenset(("size",))),
    **{name: (tuple(i - 1 for i in at), keys) for name, (at, keys) in SIZES.items()},
}


#: methods of Python's sequences whose first argument is a position: ``tokens.insert(at, x)`` calls
#: ``at.__index__()`` (a tensor has no such method, so the receiver is a list, a deque or alike)
POSITIONS = frozenset(("insert",))


def list_position(call: cst.Call, oracle) -> bool:
    """``seq.insert(at, x)`` with ``at`` a 0-dim device tensor: Python reads it back as an int."""
    if type(call.func) is not cst.Attribute or call.func.attr.value not in POSITIONS:
        return False
    args = positional(call)
    return len(args) == 2 and is_scalar_tensor(args[0], oracle)


def size_arguments(call: cst.Call, ctx: MatchContext) -> list[cst.BaseExpression]:
    """The arguments of ``call`` that torch reads as Python ints (a tuple's elements one by one)."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return []
    method, name = func.attr.value, resolve(func, ctx.imports) or ""
    if name in FUNCTIONS:
        spec = FUNCTIONS[name]
    elif name == f"torch.{method}":
        spec = SIZES.get(method) or FACTORIES.get(method)
    elif is_imported_root(func.value, ctx.imports):
        return []
    else:
        spec = METHODS.get(method)
    if spec is None:
        return []
    at, keys = spec
    found = []
    for i, value in enumerate(positional(call)):
        if at is ALL or i in at:
            found.extend(e.value for e in value.elements) if isinstance(value, (cst.Tuple, cst.List)) \
                else found.append(value)
    found.extend(a.value for a in call.args if a.keyword is not None and a.keyword.value in keys)
    return found


class ScalarIndex(Matcher):
    kind = "scalar-index"
    node_types = ("Subscript", "Call")

    def call_index(self) -> dict[str, frozenset[str]]:
        return {"callee": frozenset(("range",)),
                "method": frozenset((*SIZES, *FACTORIES, *METHODS, *POSITIONS, *(n.rsplit(".", 1)[1] for n in FUNCTIONS)))}

    def visit(self, node: cst.CSTNode, ctx: MatchContext) -> None:
        oracle = ctx.oracle
        if type(node) is cst.Call:
            if type(node.func) is cst.Name:
                if node.func.value not in ctx.local_names and any(
                        is_scalar_tensor(arg.value, oracle) for arg in node.args if arg.keyword is None):
                    ctx.report(self.rule, node, "range()")
            elif any(is_scalar_tensor(arg, oracle) for arg in size_arguments(node, ctx)):
                ctx.report(self.rule, node, f"a size of {node.func.attr.value}()")
            elif list_position(node, oracle):  # anchored on the position: what it reads is that alone
                ctx.report(self.rule, positional(node)[0], f"the position of {node.func.attr.value}()")
            return
        for element in node.slice:
            part = element.slice
            if type(part) is cst.Slice and any(
                    bound is not None and is_scalar_tensor(bound, oracle) for bound in (part.lower, part.upper, part.step)):
                ctx.report(self.rule, node, "a slice bound")
                return
            if type(part) is cst.Index and is_scalar_tensor(part.value, oracle):
                ctx.report(self.rule, node, "an index")
                return
