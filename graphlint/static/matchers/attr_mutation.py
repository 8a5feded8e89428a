"""``self.pos += 1`` in one method and ``cache[:, self.pos]`` (or a shape) in the decode path.

The index is a Python int baked into the graph at capture; replays keep writing the same slot.
Reported at each use as an index or shape, once the class shows a per-step mutation: an
augmented assignment, or an assignment that reads the attribute itself, outside ``__init__``.
Tensor attributes (``self.pos_t += 1`` on the device) are fine.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import libcst as cst

from graphlint.static.cstwalk import called_name, children, preorder
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
        self.sizes = ReadSizes()
        self.read_bound: set[str] = set()  # attributes some method advances by a read-back size
        self.copies: dict[str, set[str]] = defaultdict(set)  # attribute -> the attributes assigned to it

    def visit(self, node: cst.CSTNode, ctx: MatchContext) -> None:
        if type(node) in (cst.AugAssign, cst.Assign):
            if ctx.function_name == "__init__":
                return
            self.sizes.note(node, ctx.function_name)
            targets = [node.target] if type(node) is cst.AugAssign else [t.target for t in node.targets]
            for target in targets:
                attr = ctx.oracle.is_self_attr(target)
                if attr is None or ctx.oracle.is_tensor(target):
                    continue
                if self.sizes.reads_one(node.value):
                    self.read_bound.add(attr)
                self.copies[attr] |= self_attrs(node.value, set())
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
        read = set(self.read_bound)
        changed = True
        while changed:  # ``self.drafted = self.num_nodes``: assigned from one, a read-back position too
            changed = False
            for attr, sources in self.copies.items():
                if attr not in read and sources & read:
                    read.add(attr)
                    changed = True
        for attr in sorted(self.uses):
            if attr in self.mutated:
                for pending in self.uses[attr]:
                    if pending is not None and attr in read:
                        pending = replace(pending, flags=pending.flags | {READ_POSITION})
                    ctx.emit(pending)
        self.mutated = set()
        self.uses = defaultdict(list)
        self.read_bound = set()
        self.copies = defaultdict(set)


#: a candidate's flag: the position is a host value computed from a read-back size (:class:`ReadSizes`)
READ_POSITION = "read-position"
#: ops whose output size is data-dependent: the host learns it by a read-back
SIZED_BY_DATA = frozenset(("nonzero", "argwhere", "masked_select", "unique", "unique_consecutive"))


class ReadSizes:
    """Locals that hold the size of a tensor whose size the data decides (``path = m.nonzero();
    n = path.shape[0]``, ``len(path)``): a host value computed from a read-back -- the accepted
    length of a speculative step. A ``self`` position some method advances by one is such a value
    too (``self.num_nodes = self.num_nodes + n``), and so is one assigned from it; in an eager
    engine's host logic it is the read's consequence, not a hazard of its own (the read is:
    bench/realcode/README.md, "What counts"), so GL307 leaves it to the read there
    (:meth:`graphlint.static.contexts.Placement`)."""

    def __init__(self):
        self.function: str | None = None
        self.tensors: set[str] = set()
        self.sizes: set[str] = set()

    def note(self, node: cst.Assign | cst.AugAssign, function: str) -> None:
        if function != self.function:
            self.function, self.tensors, self.sizes = function, set(), set()
        if type(node) is not cst.Assign or len(node.targets) != 1 or type(node.targets[0].target) is not cst.Name:
            return
        name, value = node.targets[0].target.value, node.value
        self.tensors.discard(name)
        self.sizes.discard(name)
        if any(type(n) is cst.Call and called_name(n.func) in SIZED_BY_DATA for n in preorder(value)):
            self.tensors.add(name)
        elif self.reads_one(value):
            self.sizes.add(name)

    def reads_one(self, value: cst.BaseExpression | None) -> bool:
        """``n`` of :attr:`sizes`, or ``t.shape[...]`` / ``len(t)`` / ``t.numel()`` / ``t.size(...)`` of one of :attr:`tensors`."""
        if value is None or not (self.tensors or self.sizes):
            return False
        for n in preorder(value):
            if type(n) is cst.Name and n.value in self.sizes:
                return True
            if type(n) is cst.Attribute and n.attr.value in ("shape", "numel", "size") \
                    and type(n.value) is cst.Name and n.value.value in self.tensors:
                return True
            if type(n) is cst.Call and type(n.func) is cst.Name and n.func.value == "len" and n.args \
                    and type(n.args[0].value) is cst.Name and n.args[0].value.value in self.tensors:
                return True
        return False
