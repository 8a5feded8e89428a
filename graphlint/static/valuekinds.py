"""What a value IS, across function boundaries: a device tensor, a 0-dim device tensor, a pageable
host tensor, a Python number -- or unknown.

The tensor oracle (:mod:`.tensors`), :mod:`.scalars` and :mod:`.pageable` decide this inside one
function. Values cross functions through returns (``best, n = evaluate(...)``, with ``n`` a
``t.max()`` computed there), parameters (``update(ids, n)``) and fields; a rule that only sees
its own function misses the slice bound, the ``in`` test or the pageable copy on the far side.
So each function's summary says what each return value (and each element of a returned tuple)
is, and each call site what each argument is (:func:`.argkinds.arg_kinds`); :mod:`.valueflow` matches them
along resolved calls after every file is summarized and sends the facts back into the walk of the
files that use them (the same second round as :mod:`.crossfile`), where :func:`bind_returned`
and :func:`.kindfacts.seed_params` hand them to the oracle. Within one file a function already walked is
known at once (:func:`learn_returns`): no second round for a helper defined above its caller.

Kinds are decided as narrowly as the oracle decides them, and joined strictly: two returns (or
two callers) that disagree make the value unknown, and unknown never becomes a tensor.
``return None`` joins with anything (an optional tensor is still a tensor where it is used).
"""

from __future__ import annotations

import builtins

import libcst as cst

from graphlint.static.cstwalk import self_attr
from graphlint.static.distchecks import skips_validation
from graphlint.static.flowir import EXTERNAL_ROOTS
from graphlint.static.names import callee_key
from graphlint.static.pageable import host_tensor
from graphlint.static.scalars import is_scalar_tensor
from graphlint.static.tensors import TensorOracle

TENSOR, SCALAR, HOST, NUMBER, LIST, UNKNOWN = "tensor", "scalar", "host", "number", "list", ""
#: a Python int that changes on every step: a per-step position (``params.POSITION_NAMES``, or a
#: parameter some caller passes one), or a counter a per-token loop advances (``n += 1``) -- only
#: an argument's kind and a parameter fact (:func:`step_kind`, :mod:`.valueflow`)
STEP = "step"
#: a value the same on every call of its caller (:mod:`.steadyargs`): a position-named parameter
#: every call passes one is no per-step position -- only a parameter fact, never an argument's kind
STEADY = "steady"
#: the kind of an argument a loop advances, until the loop ends: ``~<loop id>`` becomes :data:`STEP`
#: when that loop turns out a per-token loop (:func:`.callkinds.settle_advanced`), else unknown
ADVANCED = "~"
#: a parameter or buffer of the caller's module, handed to a helper that casts it: only an
#: argument's kind and a parameter fact (:mod:`.weightargs`, :func:`.valueflow._weighted`)
WEIGHT = "weight"
#: a boolean device tensor a function returns (``return x0, picked`` with ``picked`` a comparison or a
#: ``dtype=torch.bool`` factory): only a return's kind, so that the caller's ``x[picked]`` is a mask
#: gather in another file; a tensor wherever a kind is joined or compared (:func:`join`)
MASK = "mask"
#: a dict display of host tensors only (a CPU tree's node data): only a return's kind, so that the
#: caller's ``data["ids"]`` is a host tensor (:mod:`.pageable`); the dict itself is no tensor
HOST_MAP = "hostmap"
KINDS = (TENSOR, SCALAR, HOST, NUMBER, LIST, STEP, WEIGHT)
#: parameter facts every caller agrees on (:mod:`.valueflow`): such a parameter is never None
AGREED = (SCALAR, HOST, NUMBER, LIST)
#: an element of a returned tuple that is ``None`` on that path (``return (pos, None)``): joins
#: with whatever the other returns put there (only inside a tuple shape, never a kind of its own)
NONE = "none"
#: builtins whose result is a Python number (or bool: ``any(c(ids) for c in self)``)
NUMBER_CALLS = frozenset(("int", "float", "len", "round", "bool", "any", "all"))
BUILTINS = frozenset(dir(builtins))
NUMBER_METHODS = frozenset(("item", "numel", "dim", "size", "nelement", "ndimension", "element_size"))


def kind_of(node: cst.BaseExpression | None, oracle: TensorOracle) -> str:
    """The narrowest kind the oracle can vouch for; :data:`UNKNOWN` otherwise."""
    if node is None:
        return UNKNOWN
    if is_scalar_tensor(node, oracle):
        return SCALAR
    if host_tensor(node, oracle):
        return HOST
    if oracle.is_tensor(node):
        return TENSOR
    if is_number(node, oracle):
        return NUMBER
    if _reads_counter(node, oracle):
        return STEP
    return UNKNOWN


def _reads_counter(node: cst.BaseExpression, oracle: TensorOracle) -> bool:
    """``self.offset`` / ``self.offset + n`` with ``offset`` a counter of the class (a method other
    than ``__init__`` advances it): a getter returning it hands its callers a per-step int."""
    cls = oracle.cls
    if cls is None or not cls.counters:
        return False
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract)):
        return _reads_counter(node.left, oracle) or _reads_counter(node.right, oracle)
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self" \
        and node.attr.value in cls.counters and node.attr.value not in cls.tensor_attrs


def is_number(node: cst.BaseExpression, oracle: TensorOracle) -> bool:
    if type(node) in (cst.Integer, cst.Float):
        return True
    if type(node) is cst.Name:  # ``return True``: a Python bool
        return node.value in ("True", "False") or node.value in oracle.fn.ints
    if type(node) is cst.Call:
        func = node.func
        if type(func) is cst.Name:
            return func.value in NUMBER_CALLS and func.value not in oracle.imports
        return type(func) is cst.Attribute and func.attr.value in NUMBER_METHODS and bool(
            func.attr.value != "size" or node.args)  # ``x.size()`` is a torch.Size
    if type(node) is cst.Subscript:
        return type(node.value) is cst.Attribute and node.value.attr.value == "shape" and len(node.slice) == 1 \
            and type(node.slice[0].slice) is not cst.Slice
    if type(node) is cst.Attribute:  # ``batch.max_splits``: every store of the field is a number (.fieldkinds)
        return oracle.field_kind(node) == NUMBER or self_attr(node) in oracle.fn.converted or _module_flag(node, oracle)
    if type(node) is cst.BinaryOperation:
        return is_number(node.left, oracle) and is_number(node.right, oracle)
    if type(node) is cst.Comparison:  # of Python numbers: a Python bool (``len(xs) > 0``)
        return is_number(node.left, oracle) and all(is_number(c.comparator, oracle) for c in node.comparisons)
    if type(node) is cst.BooleanOperation:
        return is_number(node.left, oracle) and is_number(node.right, oracle)
    if type(node) is cst.UnaryOperation and type(node.operator) is cst.Not:
        return True  # ``not x`` is a Python bool whatever ``x`` is (its read-back, if any, is ``x``'s)
    return False


#: ``nn.Module``'s own Python bool attributes: ``self.training`` (``train()`` / ``eval()`` set it)
MODULE_FLAGS = frozenset(("training",))


def _module_flag(node: cst.Attribute, oracle: TensorOracle) -> bool:
    """``self.training`` of a class that stores no tensor there: a module's mode, a Python bool
    (``self.embed(c, self.training)`` hands a flag, not a tensor, to the callee's ``if train:``)."""
    attr = self_attr(node)
    return attr in MODULE_FLAGS and (oracle.cls is None or attr not in oracle.cls.tensor_attrs)


# -- returns -----------------------------------------------------------------------------
def shape_of(value: cst.BaseExpression | None, oracle: TensorOracle):
    """A ``return`` value as a kind, or a tuple of kinds for a tuple display; None for ``return None``.
    ``return f(x)`` hands on what ``f`` returns where that says a host tensor (a verifier's
    ``(accepted ids, indices, counts)``, built on the CPU two calls down)."""
    if value is None or (isinstance(value, cst.Name) and value.value == "None"):
        return None
    if isinstance(value, cst.Call) and says_host(shape := oracle.returned(value)):
        return shape
    if isinstance(value, cst.Tuple):
        return tuple(UNKNOWN if isinstance(el, cst.StarredElement) else NONE if _is_none(el.value)
                     else _returned_kind(el.value, oracle) for el in value.elements)
    if isinstance(value, cst.Dict):
        return HOST_MAP if value.elements and all(
            type(el) is cst.DictElement and kind_of(el.value, oracle) == HOST for el in value.elements) else UNKNOWN
    return _returned_kind(value, oracle)


def says_host(shape) -> bool:
    """A host tensor in a return shape (alone or as an element)."""
    return shape == HOST or isinstance(shape, tuple) and HOST in shape


def _returned_kind(node: cst.BaseExpression, oracle: TensorOracle) -> str:
    kind = kind_of(node, oracle)
    return MASK if kind == TENSOR and oracle.is_bool_tensor(node) else kind


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def join(a, b):
    """Two shapes of one function's returns (or one parameter's arguments): what both say, else
    unknown; an element ``None`` on one path takes the other's kind (``return (-1, p)`` and
    ``return (pos, None)``: the second element is ``p`` wherever it is used)."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return tuple(x if x == y or y == NONE else y if x == NONE else _tensors(x, y) for x, y in zip(a, b))
    return _tensors(a, b)


def _tensors(a, b) -> str:
    """A mask and a tensor join as a tensor (a mask is one); any other two kinds that differ as unknown."""
    return TENSOR if {a, b} == {MASK, TENSOR} else UNKNOWN


def join_dispatch(a, b):
    """Two functions one call may dispatch to (overrides, the classes a field holds): a kind one of
    them returns stands where the other says nothing (unknown, ``None``), because the caller gets it
    whenever that one runs (a ``completed`` flag that is a device tensor in the greedy decoder and a
    Python bool in beam search is truth-tested with a sync on the greedy path); kinds that disagree
    are unknown, as in :func:`join`."""
    if a is None or a == UNKNOWN:
        return b if b is not None else a
    if b is None or b == UNKNOWN or a == b:
        return a
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return tuple(x if x == y or not y else y if not x else _tensors(x, y) for x, y in zip(a, b))
    return _tensors(a, b)


def informative(shape) -> bool:
    """Says something: a kind, or a tuple with one (``(UNKNOWN, UNKNOWN)`` says nothing)."""
    if isinstance(shape, tuple):
        return any(k and k != NONE for k in shape)
    return bool(shape)


def learn_returns(qualname: str, cls: str, shape, oracle: TensorOracle) -> None:
    """A function of this file was walked: calls below it know what it returns (``helper`` or, in
    its class, ``self.helper``)."""
    local = qualname[len(cls) + 1:] if cls else qualname
    if not informative(shape) or "." in local:
        return  # a nested function is called by its own name only inside its parent
    key = f"{cls}|self.{qualname.rsplit('.', 1)[-1]}" if cls else qualname
    oracle.returns.setdefault(key, shape)  # a cross-file fact (a later definition's) stands


def bind_returned(target: cst.BaseExpression, value: cst.BaseExpression, oracle: TensorOracle) -> None:
    """``a, b = f(x)`` / ``a = f(x)`` with ``f``'s returns known: each name gets its element's kind."""
    if not isinstance(value, cst.Call):
        return
    shape = oracle.returned(value)
    if shape is None:
        return
    if isinstance(target, (cst.Tuple, cst.List)):
        if isinstance(shape, tuple) and len(shape) == len(target.elements):
            for el, kind in zip(target.elements, shape):
                set_kind(el.value, kind, oracle)
        return
    if not isinstance(shape, tuple):
        set_kind(target, shape, oracle)


def note_origin(target: cst.BaseExpression, value: cst.BaseExpression, oracle: TensorOracle,
                bound: set[str]) -> None:
    """``a, b = f(x)``: ``b`` is element 1 of what ``f`` returns (``f#1``; ``f#`` for ``b = f(x)``),
    so an argument ``b`` whose kind the walk does not know yet can still be matched with what ``f``
    returns when the calls are resolved (:mod:`.valueflow`), without walking this file again."""
    origins = oracle.fn.origins
    key = callee_key(value.func, oracle.cls_name) if type(value) is cst.Call else None
    if key is not None and isinstance(target, (cst.Name, cst.Tuple, cst.List)) and may_be_ours(key, oracle):
        bound.add(key)
    if type(value) is cst.IfExp and type(target) is cst.Name:  # ``x = f(d, "cpu") if a else g(n, "cpu")``
        bound.update(arm_key for arm in (value.body, value.orelse) if type(arm) is cst.Call and (
            arm_key := callee_key(arm.func, oracle.cls_name)) is not None and may_be_ours(arm_key, oracle))
    if type(target) is cst.Name:
        if key is not None and skips_validation(value):
            oracle.fn.unvalidated.add(target.value)
        elif oracle.fn.unvalidated:
            oracle.fn.unvalidated.discard(target.value)
        if key is not None:
            origins[target.value] = f"{key}#"
        elif origins:
            origins.pop(target.value, None)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for i, el in enumerate(target.elements):
            if type(el.value) is cst.Name:
                if key is not None and not isinstance(el, cst.StarredElement):
                    origins[el.value.value] = f"{key}#{i}"
                else:
                    origins.pop(el.value.value, None)


def may_be_ours(key: str, oracle: TensorOracle) -> bool:
    """Not a builtin (``len``) nor a call into the standard library or the numeric stack
    (``torch.zeros``, ``np.array``): a callee :mod:`.valueflow` may resolve."""
    root = key.rpartition("|")[2].split(".", 1)[0]
    if root in oracle.imports:
        return oracle.imports[root].split(".", 1)[0] not in EXTERNAL_ROOTS
    return root not in BUILTINS


def set_kind(target: cst.BaseExpression, kind: str, oracle: TensorOracle) -> None:
    """Record a name's kind in the function's facts (an unknown kind leaves them as they are)."""
    if not isinstance(target, cst.Name) or not kind or kind == NONE:
        return
    fn, name = oracle.fn, target.value
    if kind == LIST:
        fn.tensors.discard(name)
        fn.hosts.add(name)
        fn.lists.add(name)
        return
    if kind == NUMBER:
        fn.tensors.discard(name)
        fn.hosts.add(name)
        return
    if kind == STEP:
        fn.tensors.discard(name)
        fn.positions.add(name)
        return
    if kind == STEADY:
        fn.positions.discard(name)
        return
    if kind == HOST_MAP:  # not a tensor: its values are (``data["ids"]``, :mod:`.pageable`)
        fn.cpu.add(name)
        fn.pageable.add(name)
        return
    fn.tensors.add(name)
    fn.hosts.discard(name)
    fn.lists.discard(name)  # ``ids: list[int]`` every caller passes a tensor (:mod:`.valueflow`)
    if kind == MASK:
        fn.bools.add(name)
    elif kind == WEIGHT:
        fn.weights.add(name)
    elif kind == SCALAR:
        fn.scalars.add(name)
    elif kind == HOST:
        fn.cpu.add(name)
        fn.pageable.add(name)


def step_kind(node: cst.BaseExpression, oracle: TensorOracle) -> str:
    """:data:`STEP` for a per-step Python int (a name, or arithmetic of one with Python numbers:
    ``upto``, ``pos + 1``); ``~<loop id>`` for a counter an enclosing loop advances; else unknown.

    Why it crosses calls: the int a decode loop advances every token is harmless on the host,
    but a compiled or captured callee that slices by it (``mask[..., :upto]``) records a graph
    of one length -- a new shape, a recompile or a new CUDA-graph recording, every token. The
    callee's parameter rarely has a position's name (``params.POSITION_NAMES``), so only the
    value flow from the loop tells."""
    names: list[str] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if type(current) is cst.Name:
            names.append(current.value)
        elif type(current) is cst.BinaryOperation and type(current.operator) in (cst.Add, cst.Subtract):
            stack.extend((current.left, current.right))
        elif type(current) is not cst.Integer:
            return UNKNOWN
    fn = oracle.fn
    if not names or any(n in fn.tensors for n in names):
        return UNKNOWN
    if any(n in fn.positions and n not in fn.origins for n in names):
        return STEP  # not a call's result: the taint says a position went in, not that one came out
    loop = next((fn.advanced[n] for n in names if n in fn.advanced), None)
    return f"{ADVANCED}{loop}" if loop is not None else UNKNOWN
