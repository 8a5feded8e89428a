"""Tensors that live on the host: branching on them reads host memory, no device sync.

``done = torch.tensor([False] * n)`` (no ``device=``), ``done = done | (tok == eos).cpu()``,
``if done.all(): break``: the sync is the ``.cpu()`` (reported where it is); the ``if`` only reads
host memory; ``.tolist()``/``.numpy()``/``.item()`` of one (or of pinned memory) copies nothing from
the device. Decided narrowly, since a miss is the price of a wrong guess: only ``.cpu()`` results,
the legacy typed constructors (``torch.LongTensor(ids)``), and ``torch.tensor``/``torch.as_tensor`` of
host data without a ``device`` argument, where no default device is set (:mod:`.defaultdevice`; under
one they land on the GPU and a branch on them goes unreported: a miss, never a false alarm). Sized
factories (``torch.zeros(n)``) are left out: a module's buffers are made so and moved with the module
(``model.cuda()``), and the rules' own examples hold device buffers that way. Names bound to them in the
function, and what element-wise operators, comparisons, indexing and reductions make of them alone
(in either spelling: ``diff.nonzero()``, ``torch.nonzero(diff)``).
An explicit ``device="cpu"`` (or ``torch.device("cpu")``) overrides any default device, so any torch
factory, ``.new_*`` or ``.to(...)`` given one is a host tensor too (a prefix cache's keys built with
``torch.tensor(ids, device="cpu")`` and read with ``key[0].item()``); ``torch.from_numpy`` always is.
A field (``self.key``, ``node.key``) is one when the value rounds say every store of it anywhere is
(:meth:`.fieldkinds.FieldKinds.host_everywhere`); so is an element of a list or tuple display (or a
list comprehension) of host tensors only (``self.bufs = [torch.zeros(n, device="cpu", pin_memory=True)
for _ in range(2)]``, a double-buffered staging slot read as ``bufs[i][:n].tolist()``).
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import preorder, self_attr
from graphlint.static.hostconcat import CONCATS, host_concat
from graphlint.static.names import resolve
from graphlint.static.placedreturns import argument, fallbacks_absent, is_placed
from graphlint.static.readbacks import is_readback
from graphlint.static.staging import is_pinned_value
from graphlint.static.tensornames import LEGACY_TENSORS
from graphlint.static.tensors import TensorOracle

HOST_FACTORIES = frozenset(("torch.tensor", "torch.as_tensor"))
#: methods that make a tensor on the ``device=`` they are given (``to`` also positionally)
PLACING_METHODS = frozenset(("to", "new_tensor", "new_zeros", "new_ones", "new_empty", "new_full"))
#: methods that keep a tensor where it is
SAME_DEVICE_METHODS = frozenset(("all", "any", "sum", "max", "min", "bool", "int", "long", "float", "clone",
                                 "logical_or", "logical_and", "logical_not", "view", "reshape", "flatten",
                                 "nonzero", "argwhere", "cumsum", "repeat_interleave", "div",
                                 # rows, reshapes, casts and element-wise maths of a tensor stay with it;
                                 # so do a sample or a pick of its entries (``probs.argmax()``,
                                 # ``row.multinomial(1)``: on the tensor's device, labels' "host tensor")
                                 "squeeze", "unsqueeze", "detach", "contiguous", "t", "transpose", "permute",
                                 "flip", "expand", "narrow", "select", "index_select", "gather", "masked_select",
                                 "abs", "neg", "exp", "log", "sqrt", "softmax", "log_softmax", "clamp", "round",
                                 "mean", "prod", "argmax", "argmin", "multinomial", "eq", "ne", "lt", "le", "gt",
                                 "ge", "double", "half", "short", "char", "byte", "sub", "add", "mul"))
#: element-wise methods of two operands: ``t.add(x)`` with a 0-dim host ``t`` and a device ``x`` is a device
#: tensor (as ``t + x`` is), so the other operand must be known host data too (:func:`_host_operand`);
#: ``div`` / ``logical_or`` / ``logical_and`` keep the receiver-only reading they had before this list
BINARY_METHODS = frozenset("add sub mul eq ne lt le gt ge".split())
#: methods returning a tuple of tensors where the tensor is (``vals, idx = probs.topk(k)``; ``max`` /
#: ``min`` / ``sort`` given a ``dim``)
TUPLE_METHODS = frozenset(("topk", "sort", "max", "min", "aminmax", "kthvalue", "mode", "median"))
#: ``torch.<name>`` dtypes: ``t.to(torch.int32)`` casts where ``t`` is
DTYPES = frozenset(f"torch.{n}" for n in ("float16 float32 float64 bfloat16 half float double int8 int16 int32 "
                                          "int64 int long uint8 bool").split())


def is_cpu_tensor(node: cst.BaseExpression, oracle: TensorOracle) -> bool:
    if type(node) is cst.Name:
        return node.value in oracle.fn.cpu
    if type(node) is cst.Subscript:
        return is_cpu_tensor(node.value, oracle)
    if type(node) is cst.Attribute:  # a field every store of which is a host tensor (:mod:`.fieldkinds`)
        if self_attr(node) is not None:  # asked of every method of the classes storing it: not noted
            return oracle.fn.fields.get(f"self.{node.attr.value}") == "host"
        return oracle.field_kind(node) == "host"  # ``node.key``: noted as asked about
    if type(node) is cst.Call:
        func = node.func
        if type(func) is cst.Attribute and func.attr.value == "cpu":
            return True
        if is_pinned_value(node, oracle):  # ``pin_memory=True`` / ``.pin_memory()``: page-locked host memory
            return True
        if _placed_on_cpu(node, oracle) or _kept_on_host(node, oracle):
            return True
        if type(func) is cst.Attribute and (func.attr.value in SAME_DEVICE_METHODS or _cast(node, oracle)):
            return is_cpu_tensor(func.value, oracle) and all(_host_operand(a.value, oracle) for a in node.args) \
                if func.attr.value in BINARY_METHODS else is_cpu_tensor(func.value, oracle) and all(
                    is_cpu_tensor(a.value, oracle) for a in node.args if oracle.is_tensor(a.value))
        if oracle.returns and is_placed(shape := oracle.returned(node)):  # ``fetch(d, k, "cpu")`` (:mod:`.placedreturns`)
            return _names_cpu(argument(node, shape), oracle) and fallbacks_absent(node, shape)
        name = resolve(func, oracle.imports)
        if name in CONCATS:  # one host input puts the join on the host (:mod:`.hostconcat`)
            return host_concat(node, oracle, lambda part: is_cpu_tensor(part, oracle))
        if name in LEGACY_TENSORS:  # ``torch.LongTensor(ids)``: no device to give, always the CPU
            return True
        if oracle.default_device or any(a.keyword is not None and a.keyword.value == "device" or a.star == "**"
                                        for a in node.args):
            return False
        return name in HOST_FACTORIES and len([a for a in node.args if a.keyword is None]) <= 1
    if type(node) in (cst.BinaryOperation, cst.Comparison):
        parts = ([node.left, node.right] if type(node) is cst.BinaryOperation
                 else [node.left, *(c.comparator for c in node.comparisons)])
        tensors = [p for p in parts if oracle.is_tensor(p)]
        return bool(tensors) and all(is_cpu_tensor(p, oracle) for p in tensors)
    if type(node) is cst.UnaryOperation:
        return is_cpu_tensor(node.expression, oracle)
    if type(node) is cst.IfExp:  # ``row.multinomial(1) if sample else row.argmax()``
        return is_cpu_tensor(node.body, oracle) and is_cpu_tensor(node.orelse, oracle)
    if type(node) in (cst.List, cst.Tuple):  # ``[torch.zeros(n, device="cpu"), ...]``: indexed, a host tensor
        return bool(node.elements) and all(
            type(el) is cst.Element and is_cpu_tensor(el.value, oracle) for el in node.elements)
    if type(node) is cst.ListComp:  # ``[torch.zeros(n, device="cpu") for _ in range(2)]``
        return is_cpu_tensor(node.elt, oracle)
    return False


def _host_operand(value: cst.BaseExpression, oracle: TensorOracle) -> bool:
    """A host tensor, a number literal, or a name holding host data (no tensor)."""
    return type(value) in (cst.Integer, cst.Float) or is_cpu_tensor(value, oracle) or (
        type(value) is cst.Name and value.value in oracle.fn.hosts and value.value not in oracle.fn.tensors)


def _kept_on_host(node: cst.Call, oracle: TensorOracle) -> bool:
    """``torch.nonzero(diff)``, ``torch.flatten(key)``: the function form of a method that keeps a
    tensor where it is, every tensor it is given a host one (the first always a tensor)."""
    name = resolve(node.func, oracle.imports) or ""
    if not name.startswith("torch.") or name[6:] not in SAME_DEVICE_METHODS and not name.startswith(
            "torch.special.") or not node.args \
            or node.args[0].keyword is not None or not is_cpu_tensor(node.args[0].value, oracle):
        return False
    return all(is_cpu_tensor(a.value, oracle) for a in node.args[1:] if oracle.is_tensor(a.value))


def _cast(node: cst.Call, oracle: TensorOracle) -> bool:
    """``t.to(torch.int32)``, ``t.to(dtype=x.dtype)``: a cast, which keeps the tensor where it is."""
    if type(node.func) is not cst.Attribute or node.func.attr.value != "to" or not node.args:
        return False
    for arg in node.args:
        keyword = arg.keyword.value if arg.keyword is not None else None
        if keyword in ("non_blocking", "copy"):
            continue
        value = arg.value
        if keyword not in (None, "dtype") or arg.star or not (
                resolve(value, oracle.imports) in DTYPES
                or type(value) is cst.Attribute and value.attr.value == "dtype"):
            return False
    return True


def _placed_on_cpu(node: cst.Call, oracle: TensorOracle) -> bool:
    """``torch.zeros(n, device="cpu")``, ``x.to("cpu")``, ``x.new_empty(n, device=torch.device("cpu"))``,
    ``torch.from_numpy(a)``: made on the host whatever the default device is."""
    func = node.func
    method = isinstance(func, cst.Attribute) and func.attr.value in PLACING_METHODS
    name = "" if method else resolve(func, oracle.imports) or ""
    if name == "torch.from_numpy":
        return True
    if not method and not name.startswith("torch."):
        return False
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value == "device" or \
                arg.keyword is None and method and func.attr.value == "to" and arg is node.args[0]:
            return _names_cpu(arg.value, oracle)
    return False


def _names_cpu(value: cst.BaseExpression, oracle: TensorOracle) -> bool:
    """``"cpu"``, ``torch.device("cpu")`` or the device of a host tensor (``device=lens.device``)."""
    if type(value) is cst.Attribute and value.attr.value == "device":
        return is_cpu_tensor(value.value, oracle)
    if isinstance(value, cst.Call) and resolve(value.func, oracle.imports) == "torch.device" and value.args:
        value = value.args[0].value
    return isinstance(value, cst.SimpleString) and str(value.evaluated_value).split(":")[0] == "cpu"


def on_host(node: cst.BaseExpression, oracle: TensorOracle) -> bool:
    """A host tensor: known CPU (above) or pinned memory (``pin_memory=True``, ``.pin_memory()``)."""
    return is_cpu_tensor(node, oracle) or is_pinned_value(node, oracle)


def host_reads_only(value: cst.BaseExpression, oracle: TensorOracle) -> bool:
    """Every read-back in ``value`` reads a host tensor built from host data (``int(lens.sum().item())``
    with ``lens`` made from CPU tensors every caller builds), and no name it uses holds a device read-back:
    the result is host data, not device data read (``t.cpu().item()`` still is: the copy brought it over)."""
    reads = [node for node in preorder(value) if is_readback(node, oracle)]
    return bool(reads) and not oracle.uses(value, oracle.fn.readbacks) and all(
        (read := _read_of(node)) is not None and is_cpu_tensor(read, oracle) and host_made(read, oracle)
        for node in reads)


def host_made(value: cst.BaseExpression, oracle: TensorOracle) -> bool:
    """No copy from elsewhere in ``value`` (``.cpu()``, a placing ``.to(...)``, ``.numpy()``), and every
    tensor name in it built in host memory (``FunctionFacts.pageable``) or from such alone (``host_made``)."""
    fn = oracle.fn
    for node in preorder(value):
        if type(node) is cst.Call and type(node.func) is cst.Attribute and (
                node.func.attr.value in ("cpu", "numpy") or node.func.attr.value == "to" and not _cast(node, oracle)):
            return False
        if type(node) is cst.Name and (node.value in fn.cpu or node.value in fn.tensors) \
                and node.value not in fn.pageable and node.value not in fn.host_made:
            return False
    return True


def _read_of(call: cst.Call) -> cst.BaseExpression | None:
    """What ``t.item()`` / ``int(t)`` reads: ``t``."""
    if type(call.func) is cst.Attribute:
        return call.func.value
    return call.args[0].value if call.args else None


def host_tuple(value: cst.BaseExpression, oracle: TensorOracle) -> bool:
    """``host.topk(k)``, ``torch.sort(host)``, ``host.max(dim=0)``: a tuple of host tensors."""
    if type(value) is not cst.Call:
        return False
    func = value.func
    if type(func) is cst.Attribute and func.attr.value in TUPLE_METHODS:
        return is_cpu_tensor(func.value, oracle)
    name = resolve(func, oracle.imports) or ""
    return name.startswith("torch.") and name[6:] in TUPLE_METHODS and bool(value.args) \
        and value.args[0].keyword is None and is_cpu_tensor(value.args[0].value, oracle)


def note_cpu_binding(target: cst.BaseExpression, value: cst.BaseExpression, oracle: TensorOracle) -> None:
    if type(target) in (cst.Tuple, cst.List):  # ``vals, idx = host.topk(k)``: each element a host tensor
        host = host_tuple(value, oracle)
        made = host and host_made(value, oracle)
        for el in target.elements:
            if type(el) is cst.Element and type(el.value) is cst.Name:
                name = el.value.value
                (oracle.fn.cpu.add if host else oracle.fn.cpu.discard)(name)
                (oracle.fn.host_made.add if made else oracle.fn.host_made.discard)(name)
        return
    if isinstance(target, cst.Name):
        oracle.fn.off_cuda.discard(target.value)  # a device test's verdict (:mod:`.devicenarrow`) is on the old value
        if target.value in oracle.fn.readbacks and host_reads_only(value, oracle):
            oracle.fn.readbacks.discard(target.value)  # a host tensor read: no device data (:mod:`.hosttaint`)
        if is_cpu_tensor(value, oracle):
            oracle.fn.cpu.add(target.value)
            (oracle.fn.host_made.add if host_made(value, oracle) else oracle.fn.host_made.discard)(target.value)
        else:
            oracle.fn.cpu.discard(target.value)
            oracle.fn.host_made.discard(target.value)
