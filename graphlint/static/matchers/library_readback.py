"""A method of a known library class that reads its device arguments back: ``wrapper.plan(indptr, ...)``.

graphlint does not read libraries (they are outside ``paths``), so what a library call does on the
host is data, not analysis: the rule's ``apis`` table maps a class -- by its package and its name,
whatever module path the import spells (``flashinfer.BatchDecodeWithPagedKVCacheWrapper`` and
``flashinfer.decode.BatchDecodeWithPagedKVCacheWrapper`` are one) -- to the methods documented or
written to copy tensor arguments to the host (FlashInfer's ``plan``: ``indptr.to("cpu")``). The
receiver is an object built from that class: a local bound to the constructor in the function, or a
``self`` field bound to it anywhere in the class (decided when the class is read to its end). The
call is reported only when one of its first ``tensor_args`` positional arguments (or keywords named
in ``keywords``) is a known tensor not in host memory: given CPU or pinned tensors, the copy to the
host is no copy at all (the staging such engines do before a replay).
"""

from __future__ import annotations

from collections import defaultdict

import libcst as cst

from graphlint.rules import RuleError
from graphlint.static.cstwalk import called_name
from graphlint.static.matchers.base import Matcher, MatchContext
from graphlint.static.names import resolve
from graphlint.static.pageable import in_host_memory


def _key(name: str | None) -> tuple[str, str] | None:
    """``(package, class)`` of a qualified name: the table's spelling-independent key."""
    if not name or "." not in name:
        return None
    parts = name.split(".")
    return parts[0], parts[-1]


class LibraryReadback(Matcher):
    kind = "library-readback"
    node_types = ("Assign", "Call")
    params = {"apis": dict, "tensor_args": int, "keywords": list}

    def setup(self, params: dict) -> None:
        apis = params.get("apis")
        if not apis or not all(isinstance(v, list) and _key(k) for k, v in apis.items()):
            raise RuleError(f"{self.rule.pack}: rule {self.rule.code}: apis maps qualified class names to method lists")
        self.apis = {_key(k): frozenset(v) for k, v in apis.items()}
        self.methods = frozenset(m for v in apis.values() for m in v)
        self.classes = frozenset(k[1] for k in self.apis)
        self.tensor_args = params.get("tensor_args", 3)
        self.keywords = frozenset(params.get("keywords", ()))
        self.fields: dict[str, tuple] = {}  # ``self`` field -> the table's class it is bound to
        self.locals: dict[str, tuple] = {}  # the current function's locals bound to one
        self.function = None
        self.pending: dict[str, list] = defaultdict(list)  # field -> (class key needed, method, report)

    def call_index(self) -> dict[str, frozenset[str]] | None:
        return {"method": self.methods}

    def built(self, value: cst.BaseExpression, ctx: MatchContext) -> tuple | None:
        if type(value) is not cst.Call:
            return None
        if called_name(value.func) not in self.classes:
            return None
        key = _key(resolve(value.func, ctx.imports))
        return key if key in self.apis else None

    def visit(self, node: cst.CSTNode, ctx: MatchContext) -> None:
        if self.function != (ctx.class_name, ctx.function_name):
            self.function, self.locals = (ctx.class_name, ctx.function_name), {}
        if type(node) is cst.Assign:
            key = self.built(node.value, ctx)
            for target in node.targets:
                attr = ctx.oracle.is_self_attr(target.target)
                if attr is not None and key is not None:
                    self.fields[attr] = key
                elif type(target.target) is cst.Name:
                    self.locals.pop(target.target.value, None)
                    if key is not None:
                        self.locals[target.target.value] = key
            return
        func = node.func
        if type(func) is not cst.Attribute or func.attr.value not in self.methods or not self.reads_device(node, ctx):
            return
        method, receiver = func.attr.value, func.value
        if type(receiver) is cst.Name:
            key = self.locals.get(receiver.value)
            if key is not None and method in self.apis[key]:
                ctx.report(self.rule, node, f"{key[1]}.{method}()")
            return
        attr = ctx.oracle.is_self_attr(receiver)
        if attr is not None and ctx.oracle.cls is not None:
            self.pending[attr].append((method, ctx.defer(self.rule, node, f"self.{attr}.{method}()")))

    def reads_device(self, call: cst.Call, ctx: MatchContext) -> bool:
        """A device tensor among the arguments the library copies to the host."""
        args = [a.value for a in call.args if a.keyword is None and not a.star][: self.tensor_args]
        args += [a.value for a in call.args if a.keyword is not None and a.keyword.value in self.keywords]
        oracle = ctx.oracle
        return any(oracle.is_tensor(a) and not in_host_memory(a, oracle) for a in args)

    def end_class(self, ctx: MatchContext) -> None:
        for attr, uses in self.pending.items():
            key = self.fields.get(attr)
            for method, report in uses:
                if key is not None and method in self.apis[key]:
                    ctx.emit(report)
        self.pending = defaultdict(list)
        self.fields = {}
