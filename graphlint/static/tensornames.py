"""The names :class:`.tensors.TensorOracle` reads a value's kind from: torch functions, tensor
methods and attributes, builtins and libraries that give a tensor, a bool tensor or host data.

A table of their own, apart from the oracle's reasoning, because they are data -- one list to
read and extend when a torch name is taken for the wrong kind -- not logic.
"""

from __future__ import annotations

import libcst as cst

HOST_METHODS = frozenset(
    "item tolist size dim numel nelement ndimension dtype device shape is_contiguous is_cuda "
    "data_ptr element_size stride storage_offset get_device is_floating_point is_complex "
    "numpy untyped_storage __len__ is_pinned is_set_to equal dense_dim sparse_dim ndim nbytes itemsize "
    "layout names requires_grad is_leaf is_sparse is_quantized is_meta is_nested".split()
)
#: Methods a torch.Tensor does not have: a receiver called with one is a dict, list or str we
#: took for a tensor (an unannotated parameter of a ``*decode*`` helper), and its result is not one.
NOT_TENSOR_METHODS = frozenset(
    "get items keys setdefault update append extend insert remove copy format join lower upper strip "
    "startswith endswith encode decode replace read write".split()
)
TENSOR_ATTRS = frozenset("T mT H data grad real imag".split())
HOST_TORCH_MODULES = frozenset(
    "cuda backends distributed jit compiler _dynamo library utils testing profiler autograd "
    "fx export onnx hub multiprocessing overrides package quantization ao accelerator mps xpu mtia".split()
)
HOST_TORCH_NAMES = frozenset(
    "numel device dtype Size finfo iinfo no_grad inference_mode enable_grad manual_seed "
    "Generator Stream Event compile cond typename broadcast_shapes result_type promote_types can_cast "
    "are_deterministic_algorithms_enabled sym_int sym_float sym_max sym_min".split()
)
BOOL_TORCH_FUNCS = frozenset(
    "isnan isinf isfinite isneginf isposinf logical_and logical_or logical_not logical_xor eq ne "
    "gt ge lt le isin isclose signbit".split()
)
BOOL_METHODS = frozenset("bool eq ne gt ge lt le logical_and logical_or logical_not isnan isinf isfinite".split())
HOST_SCALAR_CALLS = frozenset("int float bool len min max round abs sum".split())
NUMBER_BUILTINS = frozenset("int float bool len".split())  # a Python number, whatever the operand (``round(t)`` is a tensor)
#: ``np.zeros(3)``, ``math.floor(x)``: libraries whose results are host data, never a torch tensor
HOST_LIBRARIES = ("numpy.", "math.")
HOST_LITERALS = (cst.List, cst.Tuple, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp, cst.SimpleString)
MODULE_CONTAINERS = frozenset("ModuleList Sequential ModuleDict".split())
#: ``torch.LongTensor(ids)``: the legacy typed constructors build a tensor, always on the CPU
LEGACY_TENSORS = frozenset(f"torch.{kind}Tensor" for kind in ("", "Float", "Double", "Half", "BFloat16", "Byte",
                                                               "Char", "Short", "Int", "Long", "Bool"))
