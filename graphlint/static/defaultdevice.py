"""A default device set for the project or a scope: sized factories given no device build there.

The host-read rules take ``torch.zeros(n)`` / ``torch.tensor(xs)`` without a ``device=`` for a host
tensor (a read of it copies nothing from the device; moved to the device it is a pageable copy).
Code that sets a default device makes them device tensors: ``torch.set_default_device("cuda")``,
``torch.set_default_tensor_type(torch.cuda.HalfTensor)`` (any argument but a literal CPU one), or
a ``with torch.device(d):`` block (any ``d`` but a literal ``"cpu"``). Three extents, each cheap:

- the ``with`` block's own statements (:attr:`.TensorOracle.default_device` raised while walking it);
- the whole file that sets one (a text search first: most files never name the setters);
- the whole project when a file outside its tests sets one and never sets the CPU back: a fact of
  the cross-file round (:data:`FACT`), given to every file, which is then summarized again. Code
  that sets ``"cuda"`` and later ``"cpu"`` (a loader that builds its model under the GPU default and
  restores it) keeps the narrow reading; so do tests and benchmarks, which set it for themselves.

Under the fact no factory without a device is a host tensor: a read of one is reported as a read
of device memory, and a move of one to the device is no pageable copy. ``device="cpu"`` and
``torch.from_numpy`` stay host tensors whatever the default.
"""

from __future__ import annotations

import re

import libcst as cst

from graphlint.static.names import resolve

FACT = "device:default"
_SETTER = re.compile(r"set_default_(device|tensor_type)\(\s*([^)\n]*)")
_CPU = re.compile(r"""^(['"]cpu(:\d+)?['"]|torch\.(\w+)Tensor|torch\.device\(\s*['"]cpu['"]\s*\))\s*$""")
TEST_DIRS = frozenset(("test", "tests", "testing", "unit_tests", "benchmark", "benchmarks"))


def sets_default_device(text: str) -> bool:
    """Whether ``text`` sets a default device other than the CPU and never sets the CPU back."""
    if "set_default_" not in text:
        return False
    device = cpu = False
    for match in _SETTER.finditer(text):
        arg = match.group(2).strip()
        if _CPU.match(arg) and "cuda" not in arg:
            cpu = True
        elif arg:
            device = True
    return device and not cpu


def in_tests(path: str) -> bool:
    return any(part in TEST_DIRS for part in path.split("/")[:-1])


def device_context(item: cst.BaseExpression, imports: dict[str, str]) -> bool:
    """``with torch.device("cuda"):`` (any argument but a literal CPU one)."""
    if type(item) is not cst.Call or not item.args or resolve(item.func, imports) != "torch.device":
        return False
    arg = item.args[0].value
    return not (type(arg) is cst.SimpleString and str(arg.evaluated_value).split(":")[0] == "cpu")


def project_facts(infos: list) -> dict[str, frozenset[str]]:
    """{path: {FACT}} for every file, when a file outside the tests sets a default device."""
    if not any(getattr(i, "default_device", False) and not in_tests(i.path) for i in infos):
        return {}
    return {i.path: frozenset((FACT,)) for i in infos if not in_tests(i.path)}
