"""``buf = buf.index_copy(0, pos, new)``: a buffer rebuilt whole to write one step's slice.

The out-of-place forms of the write ops (``index_copy``, ``index_put``, ``scatter``, ...) return a
new tensor as large as the one they are called on: every step allocates and copies the whole
buffer (a KV cache, a generate loop's id buffer) to change a few rows, and, inside a capture, the
buffer's address changes -- replays read the buffer the capture saw, never the updated one. The
in-place form (``index_copy_``) writes the rows and nothing else.

Only a buffer that outlives the step counts, never an activation the step computed (``scores =
scores.masked_fill(mask, -inf)``, ``embeds = embeds.masked_scatter(...)``: the step's own data,
built anew every call whatever the spelling):

- an attribute written back with its own update (``self.k = self.k.index_copy(...)``, any of the
  write ops);
- for the position writes (``index_copy``, ``index_put``, ``slice_scatter``, ``select_scatter``:
  rows at positions, the shape of a cache or id buffer update) also a local carried round a loop
  of its function (``idx = torch.empty(n)`` before the token loop, ``idx = idx.index_copy(0, pos,
  tok)`` in it: flag "loop-carried"), and a buffer the caller hands in: a parameter, or a name
  bound to one of its parts or to an attribute (``cache_k, cache_v = kv_cache``, ``k =
  self.cache[i]``), whatever name the result takes (``k = cache_k.index_copy(2, pos, k)``, then
  ``kv_cache = k, v``) -- flag "handed-in": inside a captured graph (``in_graph_handed: false``)
  the new tensor comes from the graph's pool and is the step's output, an allocation made once at
  capture, where an attribute written back would replace the buffer every replay reads. A local
  the function computed with an op (``x = torch.roll(x, 1)``) is its own temporary there, and the other write ops on a local (``scores = scores.masked_fill(m,
  -inf)`` round a loop of logits processors) rewrite the step's own data.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.matchers.base import Matcher, MatchContext
from graphlint.static.matchers.growing_concat import same_place
from graphlint.static.names import dotted_name, is_imported_root, resolve

#: write a step's rows at positions: out of place only on a copy of the whole buffer
POSITION_WRITES = frozenset(("index_copy", "index_put", "slice_scatter", "select_scatter"))
#: every out-of-place write op (its ``_`` form writes in place)
WRITES = POSITION_WRITES | frozenset(("index_add", "index_fill", "index_reduce", "scatter", "scatter_add",
                                      "scatter_reduce", "masked_scatter", "masked_fill", "diagonal_scatter", "put"))


def _alias(value: cst.BaseExpression) -> bool:
    """``kv_cache``, ``self.cache``, ``past[0]``, ``self.caches[i]``: a name for existing memory."""
    while isinstance(value, cst.Subscript):
        value = value.value
    return dotted_name(value) is not None


class RebuiltBuffer(Matcher):
    kind = "out-of-place-update"
    node_types = ("Assign",)

    def setup(self, params: dict) -> None:
        self.scope: tuple[str, str] = ("", "")
        self.depth: dict[str, int] = {}  # local name -> loop depth of its latest binding
        self.aliases: set[str] = set()  # local names some binding made a name for existing memory

    def visit(self, node: cst.Assign, ctx: MatchContext) -> None:
        if self.scope != (ctx.class_name, ctx.function_name):
            self.scope, self.depth, self.aliases = (ctx.class_name, ctx.function_name), {}, set()
        found = self.update(node.value, ctx)
        if found is not None:
            receiver, method = found
            self.check(node, receiver, method, ctx)
        for target in node.targets:
            self.note_binding(target.target, node.value, ctx.loop_depth)

    @staticmethod
    def update(value: cst.BaseExpression, ctx: MatchContext) -> tuple[cst.BaseExpression, str] | None:
        """(receiver, method) of ``r.index_copy(...)`` / ``torch.index_copy(r, ...)``, else None."""
        if type(value) is not cst.Call:
            return None
        func = value.func
        if type(func) is cst.Attribute and func.attr.value in WRITES and not is_imported_root(func.value, ctx.imports):
            return func.value, func.attr.value
        name = resolve(func, ctx.imports) or ""
        if name.startswith("torch.") and name[6:] in WRITES and value.args and value.args[0].keyword is None:
            return value.args[0].value, name[6:]
        return None

    def check(self, node: cst.Assign, receiver: cst.BaseExpression, method: str, ctx: MatchContext) -> None:
        back = any(same_place(t.target, receiver) for t in node.targets)
        if isinstance(receiver, cst.Attribute):
            if back and dotted_name(receiver) is not None:
                ctx.report(self.rule, node.value, f".{method}()")
            return
        if not isinstance(receiver, cst.Name):
            return
        name = receiver.value
        if method not in POSITION_WRITES:  # ``scores = scores.masked_fill(...)`` round a loop of processors
            return
        if name in self.depth:
            if back and self.depth[name] < ctx.loop_depth:
                raw = ctx.defer(self.rule, node.value, f".{method}()")
                if raw is not None:
                    raw.flags = raw.flags | {"loop-carried"}
                ctx.emit(raw)
            elif name in self.aliases:
                self.handed_in(node, method, ctx)
        elif name in ctx.oracle.fn.params:
            self.handed_in(node, method, ctx)

    def handed_in(self, node: cst.Assign, method: str, ctx: MatchContext) -> None:
        """A buffer the caller hands in, flagged "handed-in": inside a captured graph its rebuild is
        an allocation from the graph's pool, the step's output (``in_graph_handed: false``)."""
        raw = ctx.defer(self.rule, node.value, f".{method}()")
        if raw is not None:
            raw.flags = raw.flags | {"handed-in"}
        ctx.emit(raw)

    def note_binding(self, target: cst.BaseExpression, value: cst.BaseExpression, depth: int) -> None:
        if type(target) in (cst.Tuple, cst.List):  # ``cache_k, cache_v = kv_cache``: parts of one buffer
            values = [e.value for e in value.elements] if type(value) in (cst.Tuple, cst.List) \
                and len(value.elements) == len(target.elements) else [value] * len(target.elements)
            for t, v in zip(target.elements, values):
                self.note_binding(t.value, v, depth)
        elif type(target) is cst.Name:
            self.depth[target.value] = depth
            if _alias(value):
                self.aliases.add(target.value)
