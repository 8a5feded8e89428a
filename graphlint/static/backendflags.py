"""Code that runs only on a device other than CUDA: what a branch on a backend flag selects.

The flags and conditions (read by the walker and by placement); :mod:`.backends` finds the
classes built only under them.

Engines that also run on Ascend, Intel or other accelerators build another model, cache or
attention ``if use_torch_npu:`` (a module-level flag set from ``torch.npu.is_available()``). A
CUDA capture or decode loop reaches those classes in the call graph -- the flag's value is not
known -- but on the device whose graph hazards graphlint reports, the branch is never taken.

Evidence, from the code alone: a branch condition whose value is a flag named for a non-CUDA
backend (a word of its name is ``npu``, ``xpu``, ``mlu``, ``hpu``, ``musa``, ``mps``, ``xla``,
``tpu``, ``ascend``, ``habana``, ``gaudi`` or ``neuron``: ``use_torch_npu``, ``IS_XPU``,
``self.is_npu``, ``torch.npu.is_available()``), recorded as the value ``("b", flag)`` in the
condition IR (:mod:`.valuefacts`; :mod:`.argvalues` never decides it). ROCm is not one: HIP
graphs run through ``torch.cuda.graph``, its hazards are CUDA's.

- a candidate under such a branch (taken only when the flag is true) is at most a warning;
- a class that analysed code constructs, every time under such a branch, and that no project
  class subclasses, is *backend-only*: code a context reaches only through its methods is at most
  a warning (:class:`.contexts.Placement`), with a note. Not dropped: the flag is data.
"""

from __future__ import annotations

import re

import libcst as cst

from graphlint.static.names import dotted_name

FuncId = tuple[str, str]
BACKEND_WORDS = frozenset(("npu", "xpu", "mlu", "hpu", "musa", "mps", "xla", "tpu", "ascend", "habana", "gaudi",
                           "neuron"))
BACKEND_NOTE = (" (reached only through `{}`, a class built only under a branch on `{}`, a flag for another backend"
                " than CUDA: not on a CUDA decode path; at most a warning)")
BACKEND_CAND_NOTE = " (only under `{}`, a flag for another backend than CUDA: not on a CUDA decode path; at most a warning)"


def backend_word(name: str) -> str | None:
    """``use_torch_npu`` / ``IS_XPU`` / ``isNpu`` -> the backend word, else None."""
    words = re.split(r"_+|(?<=[a-z0-9])(?=[A-Z])", name)
    return next((w.lower() for w in words if w.lower() in BACKEND_WORDS), None)


def backend_value(node: cst.BaseExpression) -> tuple | None:
    """``("b", flag)`` for a module-level flag, a field or a ``torch.npu.is_available()`` named for
    a non-CUDA backend (the caller asks only for names it cannot give another value)."""
    if type(node) is cst.Call and not node.args and type(node.func) is cst.Attribute \
            and node.func.attr.value == "is_available":
        dotted = dotted_name(node.func.value) or ""
        return ("b", f"{dotted}.is_available()") if any(backend_word(p) for p in dotted.split(".")) else None
    name = node.value if type(node) is cst.Name else node.attr.value if type(node) is cst.Attribute else None
    return ("b", name) if name is not None and backend_word(name) else None


def backend_flag(cond: tuple) -> str | None:
    """The backend flag a conjunction of conditions requires true (``if use_npu:``, the ``else`` of
    ``if not use_npu:``), else None."""
    for c in cond:
        found = _requires(c)
        if found is not None:
            return found
    return None


def _requires(c: tuple) -> str | None:
    while c[0] == "not" and c[1][0] == "not":
        c = c[1][1]
    flag = _flag(c[1]) if c[0] in ("t", "eq", "is") else None
    if flag is not None and (c[0] == "t" or c[2] is True):
        return flag
    if c[0] == "and":
        return _requires(c[1]) or _requires(c[2])
    return None


def _flag(value: tuple | None) -> str | None:
    """A backend flag's name: ``("b", flag)``, or a field named for a backend (``self.is_npu``)."""
    if value is not None and (value[0] == "b" or (value[0] == "f" and backend_word(value[1]))):
        return value[1]
    return None


