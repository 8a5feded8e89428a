"""0-dim device tensors: a full reduction (``n = lengths.max()``, ``t.argmax()``, ``t.sum()``).

Such a value looks like a number, and code uses it as one: ``x[:, : n + 1]``, ``range(n)``. Python
then asks the tensor for ``__index__``, which copies it to the host -- a read-back as real as
``.item()``, hidden in the syntax, every step. Indexing *by* a tensor (``x[idx]``) is a gather on
the device and reads nothing back; only a slice bound or a ``range()`` argument converts.

Decided narrowly, as the tensor oracle is (a wrong guess is a false alarm): a reduction method or
``torch`` function called on a known tensor with no ``dim`` (no positional argument but the
tensor, no ``dim=``), what a dtype cast, ``.clone()`` or ``.squeeze()`` keeps of one, arithmetic
mixing one only with Python numbers (``n + 1``; a full tensor operand broadcasts away the 0-dim),
and names last bound to one in the function (``FunctionFacts.scalars``). A host tensor
(:mod:`.cputensors`) converts without a sync and is never one.

An element of a 1-D device tensor is one too (``last = stamps[-1]``): a tensor is known 1-D only
where nothing else is possible -- a mask of itself selecting from it (``t[t.ge(k)]``, the shape
of a boolean selection is 1-D when the mask has the tensor's own shape), ``flatten``/``ravel``,
``view(-1)``/``reshape(-1)``, or a name last bound to one (``FunctionFacts.vectors``) -- and the
element only when indexed by one integer (a literal, or a name known to hold Python data).
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cputensors import is_cpu_tensor
from graphlint.static.cstwalk import keyword, operands
from graphlint.static.names import resolve
from graphlint.static.statelength import device_length
from graphlint.static.tensors import TensorOracle

#: reductions over every element when called without ``dim``
REDUCTIONS = frozenset("max min sum argmax argmin amax amin mean prod count_nonzero median nansum norm".split())
#: factories of a tensor from Python data: of one number, a 0-dim tensor (:func:`_number_on_device`)
NUMBER_TENSORS = frozenset(("torch.tensor", "torch.as_tensor", "torch.scalar_tensor"))
#: methods that keep a 0-dim tensor 0-dim (and on its device)
KEEPS_SCALAR = frozenset("to long int float half bfloat16 double clone squeeze detach contiguous".split())


def _reduces_all(call: cst.Call, positional_tensor: int) -> bool:
    """No ``dim``: only ``positional_tensor`` positional arguments and no ``dim=``/``axis=``."""
    positional = [a for a in call.args if a.keyword is None and not a.star]
    named = {a.keyword.value for a in call.args if a.keyword is not None}
    return len(positional) == positional_tensor and not named & {"dim", "axis"}


def _reduces_only_dim(call: cst.Call, positional_tensor: int) -> bool:
    """A reduction over dimension 0 or -1 only (``dim=0``, ``dim=-1``, or that one positional
    argument after ``positional_tensor``, no ``keepdim``): of a 1-D tensor, a 0-dim one."""
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    named = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    if set(named) - {"dim", "axis", "dtype"} or any(a.star for a in call.args):
        return False
    dims = positional[positional_tensor:] + [v for k, v in named.items() if k in ("dim", "axis")]
    return len(positional) <= positional_tensor + 1 and len(dims) == 1 and _first_or_last(dims[0])


def _first_or_last(node: cst.BaseExpression) -> bool:
    if type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus:
        node = node.expression
        return type(node) is cst.Integer and node.value == "1"
    return type(node) is cst.Integer and node.value == "0"


def reduced_name(call: cst.Call) -> str | None:
    """The name ``n.max()`` / ``torch.sum(n)`` reduces whole (no ``dim``), whatever it holds: a
    parameter callers give a device tensor there makes a 0-dim one (:mod:`.valueflow`)."""
    func = call.func
    if type(func) is not cst.Attribute or func.attr.value not in REDUCTIONS:
        return None
    if type(func.value) is cst.Name and _reduces_all(call, 0):
        return func.value.value
    arg = call.args[0].value if call.args else None
    if type(func.value) is cst.Name and func.value.value == "torch" and type(arg) is cst.Name and _reduces_all(call, 1):
        return arg.value
    return None


def is_scalar_tensor(node: cst.BaseExpression, oracle: TensorOracle) -> bool:
    """A 0-dim tensor on the device (see the module docstring)."""
    kind = type(node)
    if kind is cst.Name:
        return node.value in oracle.fn.scalars
    if kind is cst.Call:
        if oracle.returns and oracle.returned(node) == "scalar":  # a helper's ``return t.max()`` (static.valuekinds)
            return True
        func = node.func
        if type(func) is cst.Attribute:
            method = func.attr.value
            if method in REDUCTIONS and _reduces_all(node, 0):
                return oracle.is_tensor(func.value) and not is_cpu_tensor(func.value, oracle)
            if method in REDUCTIONS and _reduces_only_dim(node, 0):  # ``v.sum(0)`` of a 1-D tensor
                return is_vector(func.value, oracle)
            if method in KEEPS_SCALAR:
                return is_scalar_tensor(func.value, oracle)
        if device_length(node, oracle):  # ``cache.get_seq_length()`` of a static cache (:mod:`.statelength`)
            return True
        if type(func) is cst.Name and func.value in oracle.arith_helpers:
            return _helper_keeps_scalar(node, oracle)
        name = resolve(func, oracle.imports) or ""
        if name in NUMBER_TENSORS:
            return _number_on_device(node, oracle)
        if name.startswith("torch.") and name[6:] in REDUCTIONS and _reduces_all(node, 1):
            arg = node.args[0].value
            return oracle.is_tensor(arg) and not is_cpu_tensor(arg, oracle)
        if name.startswith("torch.") and name[6:] in REDUCTIONS and _reduces_only_dim(node, 1):
            return is_vector(node.args[0].value, oracle)  # ``torch.sum(v[:k], dim=0)``
        return False
    if kind is cst.BinaryOperation:
        leaves = operands(node)
        scalar = {id(leaf) for leaf in leaves if is_scalar_tensor(leaf, oracle)}
        return bool(scalar) and all(
            id(leaf) in scalar or isinstance(leaf, (cst.Integer, cst.Float)) or oracle.is_host_data(leaf)
            for leaf in leaves)
    if kind is cst.UnaryOperation:
        return isinstance(node.operator, cst.Minus) and is_scalar_tensor(node.expression, oracle)
    if kind is cst.IfExp:  # ``1 if t.numel() == 0 else t.max()``: a device value whenever that side is taken
        sides = (node.body, node.orelse)
        return any(is_scalar_tensor(side, oracle) for side in sides) and all(
            isinstance(side, (cst.Integer, cst.Float)) or oracle.is_host_data(side) or is_scalar_tensor(side, oracle)
            for side in sides)
    if kind is cst.Subscript:
        return len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) \
            and _is_int(node.slice[0].slice.value, oracle) and is_vector(node.value, oracle)
    if kind is cst.Attribute:  # ``result.finished``: a record field given a 0-dim tensor (static.fieldkinds)
        return bool(oracle.fn.fields) and oracle.field_kind(node) == "scalar"
    return False


def _number_on_device(call: cst.Call, oracle: TensorOracle) -> bool:
    """``torch.tensor(temperature, device=dev)``: one Python number -- a literal, or a name known
    to hold host data that is no list (a parameter with a number default) -- made a tensor on a
    device the call names (not the literal "cpu")."""
    args = [a for a in call.args if a.keyword is None and not a.star]
    device = device_of(call, oracle)
    if len(args) != 1 or device is None or (type(device) is cst.SimpleString and "cpu" in device.value):
        return False
    value = args[0].value
    if type(value) is cst.UnaryOperation and type(value.operator) is cst.Minus:
        value = value.expression
    if type(value) in (cst.Integer, cst.Float):
        return True
    return type(value) is cst.Name and value.value in oracle.fn.hosts and value.value not in oracle.fn.lists \
        and value.value not in oracle.fn.tensors and not oracle.is_list_value(value)


def device_of(call: cst.Call, oracle: TensorOracle) -> cst.BaseExpression | None:
    """The call's ``device=``, or the device a ``**kw`` splat of a local dict puts there."""
    device = keyword(call, "device")
    if device is not None or not oracle.fn.device_kwargs:
        return device
    for arg in call.args:
        if arg.star == "**" and type(arg.value) is cst.Name and arg.value.value in oracle.fn.device_kwargs:
            return arg.value
    return None


def _device_display(value: cst.BaseExpression) -> bool:
    """``dict(device=d, ...)`` / ``{"device": d, ...}`` with ``d`` not a literal naming the CPU."""
    if type(value) is cst.Call and type(value.func) is cst.Name and value.func.value == "dict":
        device = keyword(value, "device")
    elif type(value) is cst.Dict:
        device = next((el.value for el in value.elements if type(el) is cst.DictElement
                       and type(el.key) is cst.SimpleString and el.key.raw_value == "device"), None)
    else:
        return False
    return device is not None and not (type(device) is cst.SimpleString and "cpu" in device.value)


def _helper_keeps_scalar(call: cst.Call, oracle: TensorOracle) -> bool:
    """``_ceil_to_nearest(t.max(), 8)``: a module helper that returns arithmetic of its parameters
    (:func:`arith_helpers`), given a 0-dim device tensor and otherwise Python numbers, returns one."""
    if any(a.star or a.keyword is not None for a in call.args) or \
            len(call.args) > oracle.arith_helpers[call.func.value]:
        return False
    args = [a.value for a in call.args]
    scalar = [is_scalar_tensor(a, oracle) for a in args]
    return any(scalar) and all(s or isinstance(a, (cst.Integer, cst.Float)) or oracle.is_host_data(a)
                               for a, s in zip(args, scalar))


def arith_helpers(body) -> dict[str, int]:
    """Module functions whose body is one ``return`` of arithmetic over their parameters and
    number literals (``def _ceil_to_nearest(n, k): return (n + k - 1) // k * k``): name -> the
    number of parameters. Such a helper keeps what it is given: a 0-dim device tensor stays one."""
    found = {}
    for stmt in body:
        if not isinstance(stmt, cst.FunctionDef) or stmt.decorators or isinstance(stmt.params.star_arg, cst.Param) \
                or stmt.params.kwonly_params or stmt.params.star_kwarg is not None or stmt.params.posonly_params:
            continue
        stmts = list(stmt.body.body) if isinstance(stmt.body, cst.IndentedBlock) else []
        if stmts and isinstance(stmts[0], cst.SimpleStatementLine) and isinstance(stmts[0].body[0], cst.Expr) \
                and isinstance(stmts[0].body[0].value, cst.SimpleString):
            stmts = stmts[1:]  # the docstring
        if len(stmts) != 1 or not isinstance(stmts[0], cst.SimpleStatementLine) or len(stmts[0].body) != 1:
            continue
        ret = stmts[0].body[0]
        params = {p.name.value for p in stmt.params.params}
        if isinstance(ret, cst.Return) and isinstance(ret.value, cst.BinaryOperation) and _arith(ret.value, params):
            found[stmt.name.value] = len(params)
    return found


def _arith(node: cst.BaseExpression, params: set[str]) -> bool:
    if isinstance(node, cst.BinaryOperation):
        return not isinstance(node.operator, cst.MatrixMultiply) and _arith(node.left, params) \
            and _arith(node.right, params)
    if isinstance(node, cst.UnaryOperation):
        return _arith(node.expression, params)
    return isinstance(node, (cst.Integer, cst.Float)) or (isinstance(node, cst.Name) and node.value in params)


def _is_int(node: cst.BaseExpression, oracle: TensorOracle) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, cst.Integer) or (isinstance(node, cst.Name) and node.value in oracle.fn.hosts)


def is_vector(node: cst.BaseExpression, oracle: TensorOracle) -> bool:
    """A 1-D tensor on the device (see the module docstring)."""
    if type(node) is cst.Name:
        return node.value in oracle.fn.vectors
    if type(node) is cst.Call and type(node.func) is cst.Attribute:
        method, args = node.func.attr.value, node.args
        flat = method in ("flatten", "ravel") and not args or method in ("view", "reshape") and len(args) == 1 \
            and type(args[0].value) is cst.UnaryOperation and type(args[0].value.expression) is cst.Integer \
            and args[0].value.expression.value == "1"
        if flat:
            return oracle.is_tensor(node.func.value) and not is_cpu_tensor(node.func.value, oracle)
    if type(node) is cst.Call:
        return _vector_factory(node, oracle)
    if type(node) is cst.Subscript and len(node.slice) == 1 and type(node.slice[0].slice) is cst.Slice:
        return is_vector(node.value, oracle)  # ``v[:k]``: a slice of a 1-D tensor is one
    if type(node) is cst.Subscript and len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index:
        mask, source = node.slice[0].slice.value, node.value  # ``t[t.ge(k)]``, ``t[t > 0]``: its own shape
        root = mask.left if type(mask) is cst.Comparison else \
            mask.func.value if type(mask) is cst.Call and type(mask.func) is cst.Attribute else None
        return type(source) is cst.Name and type(root) is cst.Name and root.value == source.value \
            and oracle.is_bool_tensor(mask) and oracle.is_tensor(source) and not is_cpu_tensor(source, oracle)
    return False


#: factories whose first positional argument is the whole size (``torch.zeros((n,))``, ``torch.zeros(n)``)
SIZED_FACTORIES = frozenset(("torch.zeros", "torch.ones", "torch.empty", "torch.full", "torch.rand", "torch.randn"))


def _vector_factory(call: cst.Call, oracle: TensorOracle) -> bool:
    """``torch.zeros((rows,), device=d)`` / ``torch.zeros(rows, device=d)``: one size, a literal
    one-element tuple or list, an int literal or a name holding a Python number; ``torch.arange(...,
    device=d)``. On a device the call names (not the literal "cpu"): a factory given none is a host tensor."""
    name = resolve(call.func, oracle.imports) or ""
    device = device_of(call, oracle)
    if device is None or (type(device) is cst.SimpleString and "cpu" in device.value):
        return False
    if name == "torch.arange":
        return True
    args = [a for a in call.args if a.keyword is None]
    if name not in SIZED_FACTORIES or not args or args[0].star or (len(args) > 1 and name != "torch.full") \
            or len(args) > 2 or keyword(call, "size") is not None:
        return False
    size = args[0].value
    if type(size) in (cst.Tuple, cst.List):
        return len(size.elements) == 1 and type(size.elements[0]) is cst.Element
    return type(size) is cst.Integer or (type(size) is cst.Name and size.value in oracle.fn.hosts
                                         and size.value not in oracle.fn.lists and not oracle.is_list_value(size))


def number_tensor(value: cst.BaseExpression, oracle: TensorOracle) -> bool:
    """``torch.tensor(x, device=d)`` of one Python number (:func:`_number_on_device`), asked before
    the assignment rebinds its names (``temperature = torch.tensor(temperature, device=d)``)."""
    return type(value) is cst.Call and (resolve(value.func, oracle.imports) or "") in NUMBER_TENSORS \
        and _number_on_device(value, oracle)


def note_scalar_binding(target: cst.BaseExpression, value: cst.BaseExpression, oracle: TensorOracle,
                        number: bool = False) -> None:
    """``number``: :func:`number_tensor` of the value, before the binding."""
    if isinstance(target, cst.Name):
        if number or is_scalar_tensor(value, oracle):
            oracle.fn.scalars.add(target.value)
        else:
            oracle.fn.scalars.discard(target.value)
        (oracle.fn.vectors.add if is_vector(value, oracle) else oracle.fn.vectors.discard)(target.value)
        if _device_display(value):
            oracle.fn.device_kwargs.add(target.value)
        elif oracle.fn.device_kwargs:
            oracle.fn.device_kwargs.discard(target.value)
