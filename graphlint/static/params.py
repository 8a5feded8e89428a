"""What a function's parameters are, from their names, annotations and defaults.

Precision over recall, as everywhere in the static half: a parameter is a tensor when its
annotation says so (``Tensor``, ``Optional[Tensor]``, ``Tensor | None``) or, for the hot
functions' unannotated parameters, unless its name reads like host data; it carries the
per-step decode position when it is named like one and is an ``int``.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

import libcst as cst

from graphlint.static.names import dotted_name, resolve
from graphlint.static.unresolved import TENSOR_METHODS

HOST_PARAM_NAMES = (
    "pos", "*_pos", "step", "*_step", "seqlen", "*_len", "*_size", "n_*", "num_*", "is_*",
    "use_*", "*_idx", "layer_id", "*_name", "name", "dim", "*_dim", "dtype", "device", "*_device",
    "output_*", "return_*", "has_*", "do_*",  # transformers' flags: output_attentions=None, return_dict=None
    "temperature", "top_k", "top_p", "min_p", "eps",  # sampling knobs: Python numbers in nearly every engine
    "rank", "*_rank", "world_size", "ctx",  # distributed ids; autograd.Function's ctx
)
#: Parameters with these names, annotated ``int`` or defaulting to an int literal, carry the decode
#: position (a Python int that changes every step); locals computed from them are positions too
#: (``end = start + T``, ``for p in range(first, end)``). Unannotated ``input_pos`` is often a
#: tensor (gpt-fast), so it is not presumed to be a position.
POSITION_NAMES = (
    "pos", "*_pos", "pos_*", "start", "start_*", "position", "cur_len", "cache_len", "past_len",
    "n_past", "seq_len", "seqlen", "step",
)

TYPED_TENSORS = frozenset(
    f"{kind}Tensor" for kind in ("Float", "Double", "Half", "BFloat16", "Byte", "Char", "Short", "Int", "Long", "Bool")
)


def is_tensor_annotation(node: cst.BaseExpression | None, imports: dict[str, str],
                         aliases: frozenset[str] = frozenset()) -> bool:
    """``Tensor``, ``Optional[Tensor]``, ``Tensor | None``: yes. ``float | Tensor`` (either),
    ``list[Tensor]`` (a container): no -- precision over recall. ``Float[Tensor, "b t"]``
    (jaxtyping: a dtype over its array type) is its array type; ``aliases``: names bound to a
    tensor type (:mod:`.typealiases`)."""
    if node is None:
        return False
    members = [m for m in _union_members(node, imports) if not _is_none(m)]
    if not members:
        return False  # ``None``
    if len(members) > 1 or members[0] is not node:
        return all(is_tensor_annotation(m, imports, aliases) for m in members)
    if type(node) is cst.Subscript:
        wrapper = resolve(node.value, imports) or ""
        if wrapper.split(".")[-1] != "Annotated" and not _is_jaxtyping_dtype(wrapper):
            return False  # list[Tensor], dict[str, Tensor]: a container of tensors
        first = next((el.slice.value for el in node.slice if type(el.slice) is cst.Index), None)
        return is_tensor_annotation(first, imports, aliases)
    if type(node) is cst.SimpleString:
        return node.value.strip("'\"").split(".")[-1] == "Tensor"
    if aliases and dotted_name(node) in aliases:
        return True
    name = resolve(node, imports)
    if name is None or name.startswith("cutlass."):  # ``cute.Tensor`` annotates kernel-DSL values
        return False
    last = name.split(".")[-1]
    # ``torch.FloatTensor``, ``torch.LongTensor``...: the legacy typed names transformers annotates with
    return last in ("Tensor", "Parameter") or (name.startswith("torch.") and last in TYPED_TENSORS)


#: jaxtyping's dtype annotations, ``Float[Tensor, "b t"]``: not ``PyTree[...]`` (a container)
JAXTYPING_DTYPES = frozenset(("Shaped", "Num", "Real", "Inexact", "Float", "Complex", "Integer", "Int", "UInt",
                              "Bool", "Key", "BFloat16", *(f"{kind}{bits}" for kind in ("Float", "Int", "UInt", "Complex")
                                                         for bits in (8, 16, 32, 64, 128))))


def _is_jaxtyping_dtype(wrapper: str) -> bool:
    module, _, last = wrapper.rpartition(".")
    return module == "jaxtyping" and last in JAXTYPING_DTYPES


def _union_members(node: cst.BaseExpression, imports: dict[str, str]) -> list[cst.BaseExpression]:
    """The alternatives of ``A | B``, ``Union[A, B]`` and ``Optional[A]`` (flattened); else [node]."""
    if type(node) is cst.BinaryOperation and type(node.operator) is cst.BitOr:
        return _union_members(node.left, imports) + _union_members(node.right, imports)
    if type(node) is cst.Subscript:
        wrapper = (resolve(node.value, imports) or "").split(".")[-1]
        if wrapper in ("Optional", "Union"):
            elements = [el.slice.value for el in node.slice if type(el.slice) is cst.Index]
            return [m for el in elements for m in _union_members(el, imports)]
    return [node]


def _is_none(node: cst.BaseExpression) -> bool:
    return type(node) is cst.Name and node.value == "None"


def is_int_param(param: cst.Param) -> bool:
    if param.annotation is not None:
        return isinstance(param.annotation.annotation, cst.Name) and param.annotation.annotation.value == "int"
    return isinstance(param.default, cst.Integer)


def param_is_tensor(param: cst.Param, imports: dict[str, str], implicit: bool) -> bool:
    if param.annotation is not None:
        return is_tensor_annotation(param.annotation.annotation, imports)
    if not implicit:
        return False
    if param.default is not None and not (isinstance(param.default, cst.Name) and param.default.value == "None"):
        return False
    name = param.name.value
    return not any(fnmatchcase(name, pat) for pat in HOST_PARAM_NAMES)


def object_method(func: cst.Attribute, presumed: set[str]) -> bool:
    """``kv_cache.get_pos()``: a method no tensor has, called on a parameter presumed a tensor only
    because a ``forward`` left it unannotated (:func:`param_is_tensor`), says the parameter holds an
    object (a cache, a state) -- its call is kept for the points-to to resolve, as any object's
    method is. A tensor method (``x.view()``) on it stays a tensor's."""
    return type(func.value) is cst.Name and func.value.value in presumed and func.attr.value not in TENSOR_METHODS


#: element types of a list annotation that make it Python data (``ids: List[int] = batch["ids"]``)
HOST_ELEMENTS = frozenset(("int", "float", "bool"))


def is_host_list_annotation(node: cst.BaseExpression | None) -> bool:
    """``list[int]``, ``List[float]`` (``typing.List`` too): a local so annotated holds Python data,
    whatever expression gave it (a message's field, an untyped dict's item): ``torch.tensor`` of it
    copies host memory to the device."""
    if type(node) is not cst.Subscript or len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
        return False
    base = node.value.attr.value if type(node.value) is cst.Attribute else getattr(node.value, "value", "")
    element = node.slice[0].slice.value
    return base in ("list", "List") and type(element) is cst.Name and element.value in HOST_ELEMENTS
