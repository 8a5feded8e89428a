"""``self.pos += 1`` in one method and ``cache[:, self.pos]`` (or a shape) in the decode path.

The index is a Python int baked into the graph at capture; replays keep writing the same slot.
Reported at each use as an index or shape, once the class shows a per-step mutation: an
augmented assignment, or an assignment that reads the attribute itself, outside ``__init__``.
Tensor attributes (``self.pos_t += 1`` on the device) are fine.
"""

from __future__ import annotations

from collections import defaultdict

import libcst as cst

from graphlint.static.cstwalk import children
from graphlint.static.matchers.base import Matcher, MatchContext

SHAPE_METHODS = frozenset("view reshape narrow expand new_zeros new_empty new_ones new_full split".split())
SHAPE_FUNCS = frozenset("zeros empty ones full arange rand randn narrow".split())


def self_attrs(node: cst.CSTNode, out: set[str]) -> set[str]:
    """Every ``self.x`` read inside an index or shape expression."""
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        out.add(node.attr.value)
        return out
    if isinstance(node, (cst.Call, cst.Subscript)):
        return out  # ``self.lens[i]``, ``foo(self.pos)``: a different value
    for child in children(node):
        self_attrs(child, out)
    return out


class AttrMutation(Matcher):
    kind = "attr-mutation"
    node_types = ("AugAssign", "Assign", "Subscript", "Call")

    def setup(self, params: dict) -> None:
        self.mutated: set[str] = set()
        self.uses: dict[str, list] = defaultdict(list)

    def visit(self, node: cst.CSTNode, ctx: MatchContext) -> None:
        if type(node) in (cst.AugAssign, cst.Assign):
            if ctx.function_name == "__init__":
                return
            targets = [node.target] if type(node) is cst.AugAssign else [t.target for t in node.targets]
            for target in targets:
                attr = ctx.oracle.is_self_attr(target)
                if attr is None or ctx.oracle.is_tensor(target):
                    continue
                if type(node) is cst.AugAssign or attr in self_attrs(node.value, set()):
                    self.mutated.add(attr)
            return
        if type(node) is cst.Subscript:
            if ctx.oracle.is_host_attr(node.value):
                return  # ``self.io_pairs[self.current]``: a Python list picked by a Python int, no tensor
            if type(node.value) is cst.Name and not ctx.oracle.is_tensor(node.value):
                return  # ``text[self.print_len:]``: a local not known to hold a tensor (a string, a list)
            exprs = [el.slice for el in node.slice]
        else:
            func = node.func
            name = func.attr.value if type(func) is cst.Attribute else ""
            if name not in SHAPE_METHODS and name not in SHAPE_FUNCS:
                return
            exprs = [a.value for a in node.args]
        attrs: set[str] = set()
        for expr in exprs:
            self_attrs(expr, attrs)
        for attr in sorted(attrs):
            cls = ctx.oracle.cls
            if cls is None or attr not in cls.tensor_attrs:
                self.uses[attr].append(ctx.defer(self.rule, node, f"self.{attr}"))

    def end_class(self, ctx: MatchContext) -> None:
        for attr in sorted(self.uses):
            if attr in self.mutated:
                for pending in self.uses[attr]:
                    ctx.emit(pending)
        self.mutated = set()
        self.uses = defaultdict(list)
