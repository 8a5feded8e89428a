"""``self.decoder(z)`` where ``decoder`` is a module whose layers are wrapped in ``weight_norm``.

``torch.nn.utils.weight_norm`` (and ``torch.nn.utils.parametrizations.weight_norm``) recompute the
wrapped layer's weight, ``g * v / ||v||``, on every call (a forward pre-hook, or a parametrization
read on every access): a weight-sized temporary and its kernels every step, for weights that do not
change once loaded. A vocoder or audio VAE run on each step's output pays it for every conv.

Found in one file: a class *builds weight-normed layers* when its ``__init__`` calls ``weight_norm``
or a module-level function of the file that returns such a call (``def WNConv1d(*a): return
weight_norm(nn.Conv1d(*a))``), neither under an ``if`` (``if norm == "weight_norm": return
weight_norm(m)`` wraps only when a configuration asks: unknown here, so not taken). A call
``self.f(...)`` in a method of another class, whose field ``f`` the class sets to an instance of such
a class (``self.decoder = Decoder(...)``), is reported once the class is read to its end: the entry
into the weight-normed tree, not every layer inside it (a class that builds weight-normed layers
calling its own blocks is inside). Nothing is reported in a file that removes the wrapping
(``remove_weight_norm``, ``remove_parametrizations``): the fix; nor, when linking, on a class in a
module tree whose wrapping other code removes (:mod:`.denorm`).
"""

from __future__ import annotations

from collections import defaultdict

import libcst as cst

from graphlint.static.cstwalk import called_name, preorder
from graphlint.static.denorm import FLAG, REMOVERS
from graphlint.static.matchers.base import Matcher, MatchContext
from graphlint.static.names import resolve

WRAPPERS = frozenset(("torch.nn.utils.weight_norm", "torch.nn.utils.parametrizations.weight_norm"))


def _called(node: cst.BaseExpression) -> str:
    """The bare name a call spells (``weight_norm``, ``WNConv1d``, ``Decoder``); else ``""``."""
    return called_name(node.func) if type(node) is cst.Call else ""


class WeightNormCall(Matcher):
    kind = "weight-norm-call"
    node_types = ("Assign", "Call", "If", "Return")

    def setup(self, params: dict) -> None:
        self.builders: set[str] = set()  # module-level functions returning a weight-normed layer
        self.wrapping: set[str] = set()  # classes whose ``__init__`` builds weight-normed layers
        self.fields: dict[str, dict[str, str]] = defaultdict(dict)  # class -> field -> class built into it
        self.pending: dict[str, list] = defaultdict(list)  # class -> (field, report) of its calls ``self.f(...)``
        self.removed = False
        self.conditional: set[int] = set()  # calls and returns under an ``if`` of a builder or ``__init__``

    def wraps(self, node: cst.BaseExpression, ctx: MatchContext) -> bool:
        return type(node) is cst.Call and (resolve(node.func, ctx.imports) in WRAPPERS
                                           or type(node.func) is cst.Name and node.func.value in self.builders)

    def visit(self, node: cst.CSTNode, ctx: MatchContext) -> None:
        cls = ctx.class_name
        init = ctx.function_name.rpartition(".")[2] == "__init__"
        if type(node) is cst.If:
            if init or not cls and ctx.function_name:
                self.conditional.update(id(n) for n in preorder(node) if type(n) in (cst.Call, cst.Return))
            return
        if type(node) is cst.Return:
            if not cls and ctx.function_name and node.value is not None and id(node) not in self.conditional \
                    and self.wraps(node.value, ctx):
                self.builders.add(ctx.function_name)
            return
        if type(node) is cst.Assign:
            built = _called(node.value)
            for target in node.targets:
                attr = ctx.oracle.is_self_attr(target.target)
                if attr is not None and built and cls:
                    self.fields[cls][attr] = built
            return
        name = _called(node)
        if name in REMOVERS:
            self.removed = True
        if not cls:
            return
        if init:
            if id(node) not in self.conditional and self.wraps(node, ctx):
                self.wrapping.add(cls.rpartition(".")[2])
            return
        attr = ctx.oracle.is_self_attr(node.func)
        if attr is not None:
            self.pending[cls].append((attr, ctx.defer(self.rule, node, f"self.{attr}")))

    def end_class(self, ctx: MatchContext) -> None:
        cls = ctx.class_name
        pending, fields = self.pending.pop(cls, []), self.fields.get(cls, {})
        if self.removed or cls.rpartition(".")[2] in self.wrapping:
            return
        for attr, report in pending:
            if fields.get(attr) in self.wrapping and report is not None:
                report.flags = report.flags | {FLAG + fields[attr]}  # unless a tree removal covers it (:mod:`.denorm`)
                ctx.emit(report)
