"""Argument conditions shared by the call matchers (``nargs``, ``missing_keyword``...)."""

from __future__ import annotations

from typing import Any

import libcst as cst

from graphlint.rules import RuleError
from graphlint.static.cstwalk import called_name, keyword, number, operands, positional, preorder  # noqa: F401  (re-exported to the matchers)
from graphlint.static.cputensors import is_cpu_tensor

CALL_PARAMS: dict[str, type | tuple[type, ...]] = {
    "nargs": int,  # exactly this many arguments, keywords included (one-argument torch.where)
    "missing_keyword": str,  # only when this keyword is absent (repeat_interleave without output_size)
    "with_keyword": str,  # only when this keyword is present (a CuTeDSL ``.launch(grid=...)``)
    "keyword_position": int,  # ... and not passed positionally at this index either (graph(g, pool, stream))
    "on_device": bool,  # only with a ``device=`` keyword that is not the literal "cpu"
    "host_arg": int,  # only when this positional argument is Python data (a list, a number, list(...))
    "tensor_arg": int,  # only when this positional argument is a tensor
    "tensor_keyword": str,  # ... or this keyword argument is a tensor
    "weight_arg": int,  # only when this positional argument is a parameter or buffer (or a view of one)
    "iterating": list,  # builtins (``all``) whose comprehension argument stands for its elements
    #: builtins (``max``) that compare their positional arguments when given two or more: any one a
    #: device tensor makes Python take a tensor's truth (``max(T, 1e-5)`` runs ``bool(1e-5 > T)``)
    "compared": list,
    "position_args": bool,  # true: only when an argument uses the per-step position; false: only when none does
    "readback_args": bool,  # the same for host copies of device data (``n = t.item()``)
    "sized": bool,  # skip a zero-size placeholder (a literal 0 among the sizes) and a 0-dim CPU scalar
    #: skip a factory placed on a host tensor's device (``device=lens.device``, ``lens`` a CPU tensor):
    #: host bookkeeping beside the host tensors it is made for, no device memory
    "host_placed": bool,
    "host_tensor_ok": bool,  # skip a ``tensor_arg`` known to be a host tensor (:mod:`.cputensors`)
    #: skip a ``host_arg`` that is a number (``torch.tensor(d ** 0.5, dtype=x.dtype)`` with no device): a 0-dim
    #: CPU scalar, which CUDA ops take as a plain operand (no device allocation, no copy)
    "scalar_ok": bool,
    #: the method's own parameters (``Tensor.cuda(device, non_blocking, memory_format)``): a call passing
    #: another keyword or more positionals is a same-named method of another object (``quantizer.cuda(q, meta=m)``)
    "signature": list,
    #: ``[min, max, i]``: only when these two arguments (keywords, or positionals ``i`` and ``i + 1``) are
    #: both absent or both the same number literal (``torch.histc``'s default range ``0, 0``)
    "equal_bounds": list,
}
#: Factories whose first positional argument is not (only) a size: nothing to check for zero size.
COMPREHENSIONS = (cst.GeneratorExp, cst.ListComp, cst.SetComp)
UNSIZED_FACTORIES = frozenset(("arange", "linspace", "randint", "eye", "full", "new_full", "new_tensor"))


PYTHON_DATA = (cst.List, cst.Tuple, cst.Set, cst.ListComp, cst.GeneratorExp, cst.Integer, cst.Float)


#: ``float("-inf")``, ``int("3")``: a builtin scalar made from literals
SCALAR_BUILTINS = frozenset(("float", "int", "bool", "complex"))
SCALAR_LITERALS = (cst.SimpleString, cst.Integer, cst.Float)


def _scalar_builtin(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in SCALAR_BUILTINS \
        and bool(node.args) and all(isinstance(a.value, SCALAR_LITERALS) for a in node.args)


def is_python_data(node: cst.BaseExpression, ctx: Any) -> bool:
    """Values we can tell are host data, not a tensor we merely failed to recognise."""
    from graphlint.static.matchers.scalar_write import is_host_value

    if isinstance(node, PYTHON_DATA):
        return True
    if isinstance(node, cst.IfExp):  # ``0.0 if done else 1.0``
        return is_python_data(node.body, ctx) and is_python_data(node.orelse, ctx)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("list", "tuple", "range"):
        return True
    if _scalar_builtin(node):
        return True  # ``float("-inf")``: a constant, copied all the same
    if (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "sum"
            and len(node.args) == 2 and isinstance(node.args[1].value, (cst.List, cst.Tuple))):
        return True  # ``sum(rows, [])``: Python lists concatenated
    if isinstance(node, cst.Name):  # an unknown name may be a tensor: only names known to hold Python data
        facts = ctx.oracle.fn
        return node.value in facts.positions or (node.value in facts.hosts and node.value not in facts.tensors) \
            or ctx.oracle.is_module_constant(node)
    if isinstance(node, cst.Subscript):  # ``list(range(n))[::-1]``, ``sizes[:k]``: a slice of Python data
        return is_python_data(node.value, ctx) or is_host_value(node, ctx)
    if isinstance(node, (cst.BinaryOperation, cst.UnaryOperation)) and python_number(node, ctx):
        return True
    if isinstance(node, cst.BinaryOperation) and python_sequence(node, ctx):
        return True
    return is_host_value(node, ctx)


def python_sequence(node: cst.BinaryOperation, ctx: Any) -> bool:
    """``[0, 1] * bs``, ``[pad] * n``, ``ids + [eos]``: a list display repeated by a count no tensor
    is known to hold, or lists joined, is a Python list (a tensor operand would broadcast instead)."""
    sides = (node.left, node.right)
    if isinstance(node.operator, cst.Multiply):
        return any(isinstance(side, (cst.List, cst.Tuple)) and not ctx.oracle.is_tensor(other)
                   for side, other in (sides, sides[::-1]))
    return isinstance(node.operator, cst.Add) and all(
        isinstance(side, (cst.List, cst.Tuple)) or isinstance(side, cst.BinaryOperation) and python_sequence(side, ctx)
        for side in sides)


def python_number(node: cst.BaseExpression, ctx: Any) -> bool:
    """Arithmetic of a number literal (or known host value) with config-like values and ``math``:
    ``self.config.hidden_size ** 0.5``, ``-1e4 * scale``, ``math.sqrt(d) / 2``. Every operand must be
    vouched for: a literal, a known host value, a ``math``/``numpy`` result, or an attribute the
    oracle does not know as a tensor; a bare name we know nothing of may be a tensor, so it is not."""
    from graphlint.static.matchers.scalar_write import is_host_value

    oracle = ctx.oracle
    leaves = operands(node) if isinstance(node, cst.BinaryOperation) else [node.expression]
    anchored = False
    for leaf in leaves:
        while isinstance(leaf, cst.UnaryOperation):
            leaf = leaf.expression
        if oracle.is_tensor(leaf):
            return False
        if isinstance(leaf, (cst.Integer, cst.Float)) or oracle.is_host_data(leaf) or is_host_value(leaf, ctx):
            anchored = True
        elif isinstance(leaf, cst.BinaryOperation) and python_number(leaf, ctx):
            anchored = True
        elif not isinstance(leaf, cst.Attribute):  # ``self.config.eps``: config-like; a bare name: unknown
            return False
    return anchored


def _moved(call: cst.Call, stmt) -> bool:
    """``torch.tensor(0).to(device)``, ``.cuda()``: the statement copies the scalar to a device."""
    return stmt is not None and any(type(n) is cst.Attribute and n.value is call and n.attr.value in ("to", "cuda")
                                    for n in preorder(stmt))


def python_scalar(node: cst.BaseExpression, ctx: Any) -> bool:
    """A number literal, or arithmetic :func:`python_number` vouches for with no container in it
    (``[0] * n`` is a list)."""
    if isinstance(node, (cst.Integer, cst.Float)) or _scalar_builtin(node):
        return True
    return isinstance(node, (cst.BinaryOperation, cst.UnaryOperation)) and python_number(node, ctx) \
        and not any(isinstance(n, (cst.List, cst.Tuple, cst.Set, *COMPREHENSIONS)) for n in preorder(node))


def zero_size(call: cst.Call) -> bool:
    """``torch.empty(0)``, ``torch.zeros((0, d))``, ``x.new_empty(0, d)``: no element, no allocation;
    ``torch.ones(())`` without a device: a 0-dim CPU scalar that CUDA ops take as a plain operand."""
    args = positional(call)
    if not args:
        return False
    func = call.func
    name = called_name(func)
    if isinstance(args[0], (cst.Tuple, cst.List)):
        sizes = [el.value for el in args[0].elements]
        if not sizes and keyword(call, "device") is None and not name.startswith("new_"):
            return True  # ``torch.ones(())``: a 0-dim CPU scalar operand (``x.new_ones(())`` is on x's device)
    elif name in UNSIZED_FACTORIES:
        sizes = []
    else:
        sizes = args
    return any(isinstance(size, cst.Integer) and size.evaluated_value == 0 for size in sizes)


def same_bounds(call: cst.Call, spec: list, offset: int) -> bool:
    """Both bounds left out (their defaults are equal) or both the same literal: decided, not guessed."""
    low_name, high_name, index = spec
    args = positional(call)
    i = int(index) - offset
    low = keyword(call, low_name) or (args[i] if 0 <= i < len(args) else None)
    high = keyword(call, high_name) or (args[i + 1] if 0 <= i + 1 < len(args) else None)
    if low is None and high is None:
        return True
    low_value, high_value = number(low) if low is not None else 0, number(high) if high is not None else 0
    return low_value is not None and low_value == high_value


class CallConditions:
    def __init__(self, params: dict[str, Any], where: str):
        self.nargs = params.get("nargs")
        self.missing_keyword = params.get("missing_keyword")
        self.with_keyword = params.get("with_keyword")
        self.keyword_position = params.get("keyword_position")
        self.on_device = params.get("on_device", False)
        self.host_arg = params.get("host_arg")
        self.tensor_arg = params.get("tensor_arg")
        self.tensor_keyword = params.get("tensor_keyword")
        self.weight_arg = params.get("weight_arg")
        #: builtins that iterate their argument (``all``): a comprehension argument is its elements
        self.iterating = frozenset(params.get("iterating", ()))
        self.compared = frozenset(params.get("compared", ()))
        self.position_args = params.get("position_args")
        self.readback_args = params.get("readback_args")
        self.sized = params.get("sized", False)
        self.host_placed = params.get("host_placed", False)
        self.host_tensor_ok = params.get("host_tensor_ok", False)
        self.scalar_ok = params.get("scalar_ok", False)
        self.signature = params.get("signature")
        self.equal_bounds = params.get("equal_bounds")
        #: conditions that read arguments by position or keyword cannot be decided through ``*args``
        self.positional = any(v is not None for v in (self.nargs, self.host_arg, self.tensor_arg, self.keyword_position,
                                                      self.equal_bounds, self.weight_arg))
        self.by_keyword = bool(self.missing_keyword or self.with_keyword or self.on_device or self.tensor_keyword)
        if self.tensor_keyword is not None and self.tensor_arg is None:
            raise RuleError(f"{where}: tensor_keyword needs tensor_arg")

    def holds(self, call: cst.Call, ctx: Any, offset: int = 0) -> bool:
        """``offset`` shifts positions for method forms (``x.f(a)`` vs ``torch.f(x, a)``)."""
        args = positional(call)
        if any(a.star == "*" for a in call.args) and self.positional:
            return False  # *args: cannot tell (``x.new_empty(*size)`` still allocates)
        if any(a.star == "**" for a in call.args) and self.by_keyword:
            return False  # **kwargs: cannot tell
        if self.sized and zero_size(call):
            return False
        if self.host_placed and _on_host_device(call, ctx.oracle):
            return False
        if self.signature is not None and (len(args) > len(self.signature) or any(
                a.keyword is not None and a.keyword.value not in self.signature for a in call.args)):
            return False
        if self.equal_bounds is not None and not same_bounds(call, self.equal_bounds, offset):
            return False
        if self.nargs is not None and len(call.args) != self.nargs:
            return False  # ``torch.where(c, input=a, other=b)`` is the three-argument where
        if self.missing_keyword and keyword(call, self.missing_keyword) is not None:
            return False
        if self.with_keyword and keyword(call, self.with_keyword) is None:
            return False
        if self.missing_keyword and self.keyword_position is not None and len(args) > self.keyword_position - offset:
            return False
        if self.on_device:
            device = keyword(call, "device")
            if device is None or (isinstance(device, cst.SimpleString) and "cpu" in device.value):
                return False
        if self.host_arg is not None:
            i = self.host_arg - offset
            if i < 0 or i >= len(args) or not is_python_data(args[i], ctx):
                return False
            if isinstance(args[i], (cst.List, cst.Tuple)) and not args[i].elements:
                return False  # ``torch.tensor([], device=d)``: a zero-size placeholder, nothing copied
            if self.scalar_ok and python_scalar(args[i], ctx) and not _moved(call, getattr(ctx, "stmt", None)):
                return False  # ``torch.tensor(d ** 0.5, dtype=x.dtype)``: a 0-dim CPU scalar operand
        facts = ctx.oracle.fn
        for wanted, names in ((self.position_args, facts.positions), (self.readback_args, facts.readbacks)):
            if wanted is not None and any(ctx.oracle.uses(a.value, names) for a in call.args) != wanted:
                return False
        if self.weight_arg is not None:
            i = self.weight_arg - offset
            if not 0 <= i < len(args) or not ctx.oracle.is_weight(args[i]):
                return False
        if self.tensor_arg is not None and self.compared and len(args) > 1 and _callee_name(call) in self.compared:
            return any(ctx.oracle.is_tensor(a) and not is_cpu_tensor(a, ctx.oracle) for a in args)
        if self.tensor_arg is not None:
            i = self.tensor_arg - offset
            value = args[i] if 0 <= i < len(args) else None
            if value is None and self.tensor_keyword:
                value = keyword(call, self.tensor_keyword)
            if type(value) in COMPREHENSIONS and self.iterating and _callee_name(call) in self.iterating:
                ctx.oracle.iterated(value.for_in)  # ``all(r.done for r in rows)``: each element is read
                value = value.elt
            if value is None or not ctx.oracle.is_tensor(value):
                return False
            if self.host_tensor_ok and is_cpu_tensor(value, ctx.oracle):
                return False  # ``repeat_interleave(x, lens)`` of host ``lens``: its sum is read without a sync
        return True


def _on_host_device(call: cst.Call, oracle) -> bool:
    """``torch.arange(n, device=lens.device)`` with ``lens`` a host tensor (:mod:`.cputensors`)."""
    device = keyword(call, "device")
    return type(device) is cst.Attribute and device.attr.value == "device" and is_cpu_tensor(device.value, oracle)


def _callee_name(call: cst.Call) -> str:
    return call.func.value if type(call.func) is cst.Name else ""
