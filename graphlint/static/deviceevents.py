"""What a function's own code does to the device, expression by expression, in evaluation order:
a blocking wait, a launch, or nothing the device sees (:mod:`.syncpending` walks them).

Waits are the function's read-back candidates the caller names (their matchers know a tensor
from a host value), where they surely run: not in a branch of ``a if c else b``, the right of
``and`` / ``or`` or a comprehension, which a step may skip. A call launches unless it is known
host code: builtins, the clock, logging, a tokenizer's methods (host ids and strings), a local
list's or dict's own methods (every binding of the name is a display), a string literal's. An
operator, a subscript, an augmented assignment,
a store into an element, or a ``yield`` launches (or hands the consumer device data) when an
operand may live on the device: the tensor facts say so, or it derives from a call that is
neither a read nor host code, or from a name some binding in the function gives such a value;
so does a builtin that calls the tensor's own method (``abs(t)``, ``round(t)``, ``reversed(t)``).
An ``await`` launches (other tasks run). Unknown expressions count as the device's.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.names import dotted_name, resolve

HOST_BUILTINS = frozenset({
    "len", "print", "range", "isinstance", "issubclass", "str", "repr", "int", "float", "bool", "list", "tuple",
    "dict", "set", "frozenset", "enumerate", "zip", "sorted", "reversed", "hasattr", "id", "type", "format",
    "hash", "ord", "chr", "abs", "round", "exit", "quit"})
HOST_MODULES = ("time.", "logging.", "math.", "json.", "os.", "sys.", "warnings.")
#: context managers and calls of torch that launch nothing
HOST_TORCH = frozenset({"torch.no_grad", "torch.inference_mode", "torch.enable_grad", "torch.autocast",
                        "torch.cuda.amp.autocast", "contextlib.nullcontext"})
CONTAINER_METHODS = frozenset({"append", "extend", "insert", "get", "items", "keys", "values", "setdefault",
                               "update", "pop", "index", "count"})
STRING_METHODS = frozenset({"join", "format", "split", "strip", "startswith", "endswith", "replace", "lower",
                            "upper"})
#: builtins that call a tensor operand's own method (``__abs__``, ``__round__``, ``__reversed__``): a kernel
TENSOR_BUILTINS = frozenset({"abs", "round", "reversed"})
LOG_METHODS = frozenset({"debug", "info", "warning", "error", "exception", "critical"})
SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def containers(body: cst.CSTNode) -> frozenset[str]:
    """Local names every binding of which in the function is a list or dict display (or ``list()``,
    ``dict()``): their methods are the container's, host code."""
    kinds: dict[str, bool] = {}
    stack = [body]
    while stack:
        node = stack.pop()
        if type(node) in SCOPES:
            continue
        if type(node) in (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.NamedExpr, cst.WithItem):
            value = getattr(node, "value", None)
            targets = [t.target for t in node.targets] if type(node) is cst.Assign else \
                [getattr(node, "target", None) or getattr(node, "asname", None)]
            plain = type(node) in (cst.Assign, cst.AnnAssign)
            pairs = [pair for target in targets for pair in _pairs(target, value if plain else None)]
            for target, part in pairs:
                if type(target) is cst.Name:
                    kinds[target.value] = kinds.get(target.value, True) and _display(part)
                else:
                    for name in _names(target):
                        kinds[name] = False
        stack.extend(node.children)
    return frozenset(name for name, ok in kinds.items() if ok)


def _pairs(target, value) -> list[tuple]:
    """(target, value) for each name an assignment binds, ``a, b = [], {}`` element by element."""
    if type(target) in (cst.Tuple, cst.List) and type(value) in (cst.Tuple, cst.List) and \
            len(target.elements) == len(value.elements) and not any(
                type(e) is cst.StarredElement for e in (*target.elements, *value.elements)):
        return [p for t, v in zip(target.elements, value.elements) for p in _pairs(t.value, v.value)]
    return [(target, value)] if target is not None else []


def _display(value) -> bool:
    if type(value) in (cst.List, cst.Dict, cst.ListComp, cst.DictComp):
        return True
    return type(value) is cst.Call and type(value.func) is cst.Name and value.func.value in ("list", "dict")


def _names(node: cst.CSTNode) -> list[str]:
    out, stack = [], [node]
    while stack:
        node = stack.pop()
        if type(node) is cst.Name:
            out.append(node.value)
        stack.extend(node.children)
    return out


class DeviceEvents:
    """The device events an expression makes, in evaluation order: "wait", "launch" or the target."""

    def __init__(self, waits: set[int], oracle, imports: dict[str, str], containers: frozenset[str]):
        self.waits, self.oracle, self.imports, self.containers = waits, oracle, imports, containers
        self.suspects: set[str] = set()
        #: project calls on trial (id -> callee; the ones met land in ``skipped``) and what each is taken
        #: to do: "quiet" (nothing), "wait" (launch, then block: it ends in a read), else a launch (:mod:`.quietcalls`)
        self.deferred: dict[int, tuple] = {}
        self.modes: dict[int, str] = {}
        self.skipped: set[int] = set()

    def of(self, node: cst.CSTNode | None, target: cst.CSTNode | None = None):
        if node is None:
            return
        stack: list[tuple[cst.CSTNode, bool, bool]] = [(node, False, False)]
        while stack:
            current, done, maybe = stack.pop()
            if type(current) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
                continue
            if not done:
                stack.append((current, True, maybe))
                stack.extend((child, False, maybe or _conditional(current, child))
                             for child in reversed(current.children))
                continue
            if current is target:
                yield "target"
                yield "wait"
            elif id(current) in self.waits:
                if not maybe:  # a read that may not run waits for nothing on the path that skips it
                    yield "wait"
            elif type(current) is cst.Call:
                if id(current) in self.deferred:
                    self.skipped.add(id(current))
                    mode = self.modes.get(id(current), "quiet")
                    if mode != "quiet":
                        yield "launch"
                    if mode == "wait":
                        yield "wait"
                elif not self.host_call(current):
                    yield "launch"
            elif type(current) is cst.Subscript and type(current.value) is cst.Name and \
                    current.value.value in self.containers:
                continue  # a local list's or dict's element or slice: host code, whatever it holds
            elif type(current) in (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.Subscript):
                if any(self.tensor(c) for c in current.children if isinstance(c, cst.BaseExpression)) or \
                        any(self.tensor(e) for e in getattr(current, "comparisons", getattr(current, "slice", ()))):
                    yield "launch"
            elif type(current) is cst.Await:
                yield "launch"
            elif type(current) is cst.Yield:
                if current.value is not None and self.tensor(current.value):
                    yield "launch"  # the consumer gets device data
            elif type(current) is cst.AugAssign:
                if self.tensor(current.target) or self.tensor(current.value):
                    yield "launch"
            elif type(current) is cst.AssignTarget and type(current.target) is cst.Subscript:
                if self.tensor(current.target.value):
                    yield "launch"  # a copy into a device buffer

    def tensor(self, node: cst.CSTNode) -> bool:
        """The value may live on the device: the tensor facts say so, or it derives from a call
        that is neither a read nor host code (a model's output, a torch factory), or from a name
        some binding in the function gives such a value (:meth:`learn`)."""
        kind = type(node)
        if id(node) in self.waits:
            return False  # a read's value is the host's
        if kind in (cst.Integer, cst.Float, cst.SimpleString, cst.FormattedString, cst.ConcatenatedString,
                    cst.Imaginary, cst.Ellipsis):
            return False
        if kind is cst.Name:
            return node.value in self.suspects or self._oracle(node)
        if kind is cst.Call:
            return not self.host_call(node) or type(node.func) is cst.Name and node.func.value in ("list", "tuple") \
                and any(self.tensor(a.value) for a in node.args)
        if kind is cst.Attribute:
            if node.attr.value in ("shape", "dtype", "device", "ndim", "is_cuda"):
                return False
            return self._oracle(node) or self.tensor(node.value)
        if kind in (cst.Subscript, cst.UnaryOperation, cst.BinaryOperation, cst.Comparison, cst.BooleanOperation,
                    cst.Tuple, cst.List, cst.Set, cst.Dict, cst.IfExp, cst.Element, cst.StarredElement,
                    cst.DictElement, cst.StarredDictElement, cst.SubscriptElement, cst.Index, cst.Slice,
                    cst.ComparisonTarget, cst.FormattedStringExpression):
            return any(self.tensor(c) for c in node.children if isinstance(c, cst.BaseExpression) or type(c) in (
                cst.Element, cst.StarredElement, cst.DictElement, cst.StarredDictElement, cst.SubscriptElement,
                cst.Index, cst.Slice, cst.ComparisonTarget, cst.FormattedStringExpression))
        return True  # not modelled (a comprehension, a lambda, an await): the device's, to be safe

    def _oracle(self, node: cst.CSTNode) -> bool:
        try:
            return self.oracle.is_tensor(node)
        except Exception:  # an expression the tensor facts do not model: a tensor, to be safe
            return True

    def learn(self, body: cst.CSTNode) -> None:
        """The names some binding in the function gives a value that may live on the device."""
        bindings = []
        stack = [body]
        while stack:
            node = stack.pop()
            if type(node) in SCOPES and node is not body:
                continue
            kind = type(node)
            if kind is cst.Assign:
                bindings.extend((t.target, node.value) for t in node.targets)
            elif kind in (cst.AnnAssign, cst.AugAssign) and node.value is not None:
                bindings.append((node.target, node.value))
            elif kind is cst.NamedExpr:
                bindings.append((node.target, node.value))
            elif kind is cst.For:
                bindings.append((node.target, node.iter if not is_range(node.iter) else cst.Integer("0")))
            elif kind is cst.WithItem and node.asname is not None:
                bindings.append((node.asname.name, node.item))
            elif kind in (cst.CompFor,):
                bindings.append((node.target, node.iter))
            stack.extend(node.children)
        changed = True
        while changed:
            changed = False
            for target, value in bindings:
                names = [n for n in _names(target) if n not in self.suspects]
                if names and self.tensor(value):
                    self.suspects.update(names)
                    changed = True

    def host_call(self, call: cst.Call) -> bool:
        func = call.func
        if (dotted_name(func) or "").lower().rsplit(".", 1)[-1].endswith("tokenizer"):
            return True  # a tokenizer called on text: host ids
        if type(func) is cst.Name:
            return func.value in HOST_BUILTINS and not (
                func.value in TENSOR_BUILTINS and any(self.tensor(a.value) for a in call.args))
        name = resolve(func, self.imports) or ""
        if name in HOST_TORCH or name.startswith(HOST_MODULES):
            return True
        if type(func) is not cst.Attribute:
            return False
        method, receiver = func.attr.value, func.value
        if type(receiver) in (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString):
            return method in STRING_METHODS
        spelled = (dotted_name(receiver) or "").lower()
        if spelled.rsplit(".", 1)[-1].endswith("tokenizer"):
            return True  # a tokenizer's methods work on host ids and strings
        if spelled.rsplit(".", 1)[-1] in ("logger", "logging", "log") and method in LOG_METHODS:
            return True
        return type(receiver) is cst.Name and receiver.value in self.containers and method in CONTAINER_METHODS


def _conditional(parent: cst.CSTNode, child: cst.CSTNode) -> bool:
    """``child`` may not run when ``parent`` does: a branch of ``a if c else b``, the right side of
    ``and`` / ``or``, any part of a comprehension (its iterable may be empty)."""
    if type(parent) is cst.IfExp:
        return child is parent.body or child is parent.orelse
    if type(parent) is cst.BooleanOperation:
        return child is parent.right
    return type(parent) in (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def is_range(node) -> bool:
    return type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "range"


def walk(node):
    stack = [node]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.children)
