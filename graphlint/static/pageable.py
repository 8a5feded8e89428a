"""Tensors built in pageable host memory: a torch factory given no device (and no ``pin_memory``).

One fact, read by every rule that cares where a tensor was made: a pageable tensor moved to the
device every step (``matchers.host_copy``, GL420: a synchronous copy, refused inside a capture),
indexed with a Python list without a copy (``matchers.list_index``), returned by a helper to its
caller (:mod:`.valuekinds`). ``torch.tensor(ids)``, ``torch.zeros(n)``, ``torch.arange(a, b)``, the
legacy typed constructors (``torch.LongTensor(ids)``: always on the CPU), a local bound to one in
the function (``FunctionFacts.pageable``), a view, cast or arithmetic of one, a new tensor an op
makes of a host tensor (``torch.cat`` with one in it, :mod:`.hostconcat`; ``p.argmax()``,
``p.multinomial(1)`` of one, :data:`FRESH`), a conditional both of whose arms are one, what a
``device=None`` builder returns when called without a device (:mod:`.hostbuilders`) and what a
function returns that built one, alone, in a tuple or as every value of a dict display
(:mod:`.valuekinds`), also through wrappers that only hand its result on (:mod:`.forwardedreturns`). A tensor of no elements (``torch.Tensor()``, ``torch.zeros(0, n)``,
a view of one to a shape with a literal 0) holds nothing to copy: not pageable data. A factory under a default device (``with
torch.device("cuda"):``) builds on the GPU: a false alarm for the copy rule, a miss for the others.
``self`` attributes bound to a factory call are ``ClassFacts.pageable_attrs`` (a staging buffer
made in ``__init__`` and copied in the step).
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cputensors import is_cpu_tensor, on_host
from graphlint.static.cstwalk import called_name, operands
from graphlint.static.hostconcat import host_concat
from graphlint.static.hostbuilders import builder_call
from graphlint.static.matchers.call_args import keyword
from graphlint.static.names import resolve
from graphlint.static.tensornames import LEGACY_TENSORS
from graphlint.static.tensors import TensorOracle

#: given no device they build on the host (an op's result is where its inputs are)
FACTORIES = frozenset(f"torch.{n}" for n in "zeros ones empty full arange tensor as_tensor from_numpy rand randn "
                      "randint eye linspace".split())
#: ``torch.LongTensor(ids)``: the legacy constructors take no device and build on the CPU
TYPED = LEGACY_TENSORS
SHORT_NAMES = frozenset(n.rsplit(".", 1)[1] for n in FACTORIES | TYPED)
#: methods that make a new tensor where their input is (a host input: a new pageable one)
FRESH = frozenset("argmax argmin multinomial softmax log_softmax cumsum cumprod sum mean prod abs".split())
#: methods whose result stays where the tensor is (a view, a cast, a copy on the same device)
KEEP_DEVICE = frozenset("float double half bfloat16 long int bool expand expand_as view reshape unsqueeze squeeze "
                        "contiguous clone repeat flatten t transpose permute flip neg exp log sqrt rsqrt pow".split())


def is_factory_call(node: cst.BaseExpression, imports: dict[str, str], default_device: int = 0) -> bool:
    """A factory building in pageable host memory: no device (or a CPU one), no ``pin_memory=``, and
    no ``**kwargs`` (``torch.tensor(xs, **CPU_PINNED)``: the dict may pin it); with no device only
    where no default device is set (``default_device``, :mod:`.defaultdevice`)."""
    if type(node) is not cst.Call:
        return False
    func = node.func
    short = called_name(func)
    if short not in SHORT_NAMES:  # the name first: most calls are no factory
        return False
    name = resolve(func, imports)
    if name in TYPED:
        return not any(a.star for a in node.args)
    if name not in FACTORIES or keyword(node, "pin_memory") is not None or any(a.star == "**" for a in node.args):
        return False
    device = keyword(node, "device")
    if device is None:
        return not default_device or name == "torch.from_numpy"
    return isinstance(device, cst.SimpleString) and device.value.strip("'\"").split(":")[0] == "cpu"


def is_scalar_factory(node: cst.BaseExpression) -> bool:
    """``torch.tensor(2.0)``: a 0-dim tensor (its first argument no list, tuple or comprehension)."""
    if not isinstance(node, cst.Call) or not node.args or not isinstance(node.func, (cst.Attribute, cst.Name)):
        return False
    name = node.func.attr.value if isinstance(node.func, cst.Attribute) else node.func.value
    return name in ("tensor", "as_tensor") and not isinstance(node.args[0].value, (cst.List, cst.Tuple, cst.ListComp))


def is_pageable(node: cst.BaseExpression, oracle: TensorOracle) -> bool:
    """A tensor the function holds in pageable host memory (see the module docstring)."""
    while True:
        kind = type(node)
        if kind is cst.Subscript:
            node = node.value
        elif kind is cst.UnaryOperation:
            node = node.expression
        elif (kind is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value in KEEP_DEVICE
              and not is_factory_call(node, oracle.imports, oracle.default_device)):
            if node.func.attr.value in ("view", "reshape") and _zero_size(node.args):
                return False  # ``t.reshape(b, 0, v)``: no elements, nothing to copy
            node = node.func.value
        else:
            break
    if kind is cst.Name:
        return node.value in oracle.fn.pageable
    if kind is cst.IfExp:  # ``p.multinomial(1) if do_sample else p.argmax()``
        return is_pageable(node.body, oracle) and is_pageable(node.orelse, oracle)
    if kind is cst.BinaryOperation:
        return host_arithmetic(operands(node), oracle)
    if kind is not cst.Call:
        return False
    if is_factory_call(node, oracle.imports, oracle.default_device):
        return not _empty_factory(node, oracle.imports)
    if host_concat(node, oracle, lambda part: host_tensor(part, oracle)):
        return True  # a fresh host tensor (:mod:`.hostconcat`)
    if type(node.func) is cst.Attribute and node.func.attr.value in FRESH and not any(
            a.keyword is not None and a.keyword.value == "out" for a in node.args):
        base = node.func.value  # ``p.argmax()`` of a host tensor: a new one beside it, never pinned
        return host_tensor(base, oracle)
    if builder_call(node, oracle.host_builders, oracle.cls.host_builders if oracle.cls else {}, oracle.is_tensor):
        return True
    return oracle.returned(node) == "host"  # a helper that built one (static.valuekinds)


def host_tensor(node: cst.BaseExpression, oracle: TensorOracle) -> bool:
    """A tensor in host memory by either account: built pageable here, or known CPU (:mod:`.cputensors`:
    a ``.cpu()``, ``device="cpu"``, pinned memory, a field or a parameter every store or caller agrees on)."""
    return is_pageable(node, oracle) or is_cpu_tensor(node, oracle)


def in_host_memory(node: cst.BaseExpression, oracle: TensorOracle) -> bool:
    """:func:`host_tensor`, or a name or field bound to pinned memory (:func:`.cputensors.on_host`)."""
    return on_host(node, oracle) or is_pageable(node, oracle)


#: factories whose positional arguments are the sizes
_SIZED = frozenset(f"torch.{n}" for n in ("zeros", "ones", "empty", "rand", "randn"))


def _empty_factory(node: cst.Call, imports: dict[str, str]) -> bool:
    """``torch.Tensor()``, ``torch.tensor([])``, ``torch.zeros(0, n)``: a tensor of no elements, whose
    copy to the device moves nothing (an empty start to concatenate onto)."""
    name = resolve(node.func, imports)
    if name in TYPED or name == "torch.tensor":
        first = node.args[0].value if node.args and not node.args[0].keyword else None
        return first is None if name in TYPED else type(first) in (cst.List, cst.Tuple) and not first.elements
    return name in _SIZED and _zero_size(node.args)


def _zero_size(args) -> bool:
    """A literal 0 among the size arguments (``(b, 0, v)`` or ``b, 0, v``)."""
    sizes = [a.value for a in args if not a.keyword and not a.star]
    if len(sizes) == 1 and type(sizes[0]) in (cst.Tuple, cst.List):
        sizes = [el.value for el in sizes[0].elements]
    return any(type(v) is cst.Integer and v.evaluated_value == 0 for v in sizes)


def host_arithmetic(leaves: list[cst.BaseExpression], oracle: TensorOracle) -> bool:
    """A host operand decides, unless a known tensor joins in. A 0-dim ``torch.tensor(2.0)`` may meet
    a CUDA tensor (it is taken as a scalar): with one, every other operand must be known not a
    tensor; a sized host tensor cannot meet a CUDA one, so other names may stay unknown."""
    host = [is_pageable(leaf, oracle) for leaf in leaves]
    if not any(host) or any(oracle.is_tensor(leaf) for leaf, on in zip(leaves, host) if not on):
        return False
    sized = any(on and not is_scalar_factory(leaf) for leaf, on in zip(leaves, host))
    return sized or all(on or isinstance(leaf, (cst.Integer, cst.Float, cst.Attribute))
                        or oracle.is_host_data(leaf) for leaf, on in zip(leaves, host))


def pageable_verdict(target: cst.BaseExpression, value: cst.BaseExpression, oracle: TensorOracle) -> bool:
    """Whether an assignment binds its names to a pageable tensor, asked before the binding changes any
    fact of them (``acc = torch.cat([acc, tok[None]])``: ``acc`` is a host tensor until rebound)."""
    if type(target) is cst.Name:
        return is_pageable(value, oracle)
    return isinstance(target, (cst.Tuple, cst.List)) and type(value) is cst.Call and is_pageable(value, oracle)


def note_pageable_binding(target: cst.BaseExpression, value: cst.BaseExpression, oracle: TensorOracle,
                          pageable: bool | None = None) -> None:
    """After an assignment: names bound to a pageable tensor (``inv_freq, scale = rope_init(config)``
    binds both), ``self`` attributes bound to a factory call; ``pageable``: :func:`pageable_verdict`,
    when the caller asked it before the binding."""
    names = oracle.fn.pageable
    if pageable is None and isinstance(target, (cst.Name, cst.Tuple, cst.List)):
        pageable = pageable_verdict(target, value, oracle)
    if type(target) is cst.Name:
        if pageable:
            names.add(target.value)
        elif names:
            names.discard(target.value)
        return
    if isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            if type(el.value) is cst.Name:
                (names.add if pageable else names.discard)(el.value.value)
        return
    attr = oracle.is_self_attr(target)
    if attr is not None and oracle.cls is not None and is_factory_call(value, oracle.imports, oracle.default_device):
        oracle.cls.pageable_attrs.add(attr)
