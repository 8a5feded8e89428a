"""A default device set for the project or a scope: sized factories given no device build there.

The host-read rules take ``torch.zeros(n)`` / ``torch.tensor(xs)`` without a ``device=`` for a host
tensor (a read of it copies nothing from the device; moved to the device it is a pageable copy).
Code that sets a default device makes them device tensors: ``torch.set_default_device("cuda")``,
``torch.set_default_tensor_type(torch.cuda.HalfTensor)`` (any argument but a literal CPU one), or
a ``with torch.device(d):`` block (any ``d`` but a literal ``"cpu"``). Three extents, each cheap:

- the ``with`` block's own statements (:attr:`.TensorOracle.default_device` raised while walking it);
- the whole file whose last setter call names a device (a text search first: most files never name the setters);
- the whole project when a file outside its tests sets one and never sets the CPU back: a fact of
  the cross-file round (:data:`FACT`), given to every file, which is then summarized again. Code
  that sets ``"cuda"`` and later ``"cpu"`` (a loader that builds its model under the GPU default and
  restores it) keeps the narrow reading; so do tests and benchmarks, which set it for themselves.

Under the fact no factory without a device is a host tensor: a read of one is reported as a read
of device memory, and a move of one to the device is no pageable copy. ``device="cpu"`` and
``torch.from_numpy`` stay host tensors whatever the default.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import called_name, preorder
from graphlint.static.names import resolve

FACT = "device:default"
SETTERS = frozenset(("set_default_device", "set_default_tensor_type"))
TEST_DIRS = frozenset(("test", "tests", "testing", "unit_tests", "benchmark", "benchmarks"))


def sets_default_device(text: str, module: cst.Module) -> bool:
    """Whether the file calls a setter with a device other than the CPU and never sets the CPU
    back after it (a text search first; then the calls themselves, in source order, not a docstring
    or a ``def``): a CPU tensor type set *before* the device (``set_default_tensor_type(torch.
    BFloat16Tensor)`` in one loader branch, ``set_default_device(device)`` after) restores nothing."""
    if "set_default_" not in text:
        return False
    device = False
    for node in preorder(module):
        if type(node) is not cst.Call:
            continue
        func = node.func
        name = called_name(func)
        if name in SETTERS and node.args:
            device = not _names_cpu(node.args[0].value)  # the last setter in the file decides
    return device


def _names_cpu(arg: cst.BaseExpression) -> bool:
    """``"cpu"``, ``None``, ``torch.device("cpu")``, ``torch.FloatTensor`` (a CPU tensor type)."""
    if type(arg) is cst.Call and arg.args and type(arg.func) is cst.Attribute and arg.func.attr.value == "device":
        arg = arg.args[0].value
    if type(arg) is cst.SimpleString:
        return _cpu_string(arg)
    if type(arg) is cst.Name:
        return arg.value == "None"
    return type(arg) is cst.Attribute and arg.attr.value.endswith("Tensor") and type(arg.value) is cst.Name


def in_tests(path: str) -> bool:
    return any(part in TEST_DIRS for part in path.split("/")[:-1])


def device_context(item: cst.BaseExpression, imports: dict[str, str]) -> bool:
    """``with torch.device("cuda"):`` (any argument but a literal CPU one)."""
    if type(item) is not cst.Call or not item.args or resolve(item.func, imports) != "torch.device":
        return False
    arg = item.args[0].value
    return not (type(arg) is cst.SimpleString and _cpu_string(arg))


def _cpu_string(arg: cst.SimpleString) -> bool:
    """``"cpu"`` or ``"cpu:0"``."""
    return str(arg.evaluated_value).split(":")[0] == "cpu"


def project_facts(infos: list) -> dict[str, frozenset[str]]:
    """{path: {FACT}} for every file, when a file outside the tests sets a default device."""
    if not any(getattr(i, "default_device", False) and not in_tests(i.path) for i in infos):
        return {}
    return {i.path: frozenset((FACT,)) for i in infos if not in_tests(i.path)}
