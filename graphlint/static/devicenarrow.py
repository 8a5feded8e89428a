"""Tensors a device test has sent elsewhere: what follows ``if t.is_cuda: return ...`` holds no CUDA tensor in ``t``.

A helper that serves both kinds of input returns early for a device tensor and walks a CPU one::

    if slots is None or slots.is_cuda:
        return fallback()
    for s in slots.tolist():        # runs only for a tensor not on a CUDA device
        ...

The rest of the block runs only when every disjunct of the test was false: ``slots`` is no CUDA
tensor there, and ``.tolist()`` of it copies host memory (or another backend's), no read-back a
CUDA graph cares about -- as :mod:`.cputensors` says of any host tensor -- and what it gives is
no device read-back either (:func:`.readbacks.is_readback`). The test may spell the
device ``t.is_cuda``, ``t.device.type == "cuda"`` or ``t.device.type != "cpu"``; ``t`` a plain name,
and not rebound anywhere in the rest of the block (a tuple target, ``:=``, ``with ... as``, ``for``:
the test spoke of the old value), which the walker forgets when the block ends (the narrowing holds for
the rest of that block only). The branch must
leave the block (``return`` / ``raise`` / ``continue`` / ``break``) and have no ``else``.

The body of an ``if`` one of whose conjuncts asks for the CPU (``if staging and x.device.type ==
"cpu":``, ``not x.is_cuda``) holds no CUDA tensor in ``x`` either (:func:`narrow_body`): copying
it into a pinned buffer there is host to host, not a read-back.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.classtests import conjuncts
from graphlint.static.cstwalk import ends_in_jump
from graphlint.static.oncebound import binding_counts
from graphlint.static.refresh import disjuncts


def _device_type(node: cst.BaseExpression) -> str | None:
    """``t.device.type`` -> "t"."""
    if type(node) is cst.Attribute and node.attr.value == "type" and type(node.value) is cst.Attribute \
            and node.value.attr.value == "device" and type(node.value.value) is cst.Name:
        return node.value.value.value
    return None


def _on_cuda(test: cst.BaseExpression) -> str | None:
    """The name ``test`` asks to be on a CUDA device: ``t.is_cuda``, ``t.device.type == "cuda"``,
    ``t.device.type != "cpu"``."""
    if type(test) is cst.Attribute and test.attr.value == "is_cuda" and type(test.value) is cst.Name:
        return test.value.value
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        name, op = _device_type(test.left), type(test.comparisons[0].operator)
        other = test.comparisons[0].comparator
        if name is None or type(other) is not cst.SimpleString:
            return None
        text = other.evaluated_value
        if (op is cst.Equal and text == "cuda") or (op is cst.NotEqual and text == "cpu"):
            return name
    return None


def _on_cpu(test: cst.BaseExpression) -> str | None:
    """The name ``test`` asks to be off CUDA: ``t.device.type == "cpu"``, ``t.device.type != "cuda"``,
    ``not t.is_cuda``, ``t.is_cpu``."""
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        inner = test.expression
        return inner.value.value if type(inner) is cst.Attribute and inner.attr.value == "is_cuda" \
            and type(inner.value) is cst.Name else None
    if type(test) is cst.Attribute and test.attr.value == "is_cpu" and type(test.value) is cst.Name:
        return test.value.value
    if type(test) is cst.Comparison and len(test.comparisons) == 1:
        name, op = _device_type(test.left), type(test.comparisons[0].operator)
        other = test.comparisons[0].comparator
        if name is not None and type(other) is cst.SimpleString and (
                op is cst.Equal and other.evaluated_value == "cpu" or op is cst.NotEqual and other.evaluated_value == "cuda"):
            return name
    return None


def narrow_body(fn, test: cst.BaseExpression) -> set[str]:
    """``if staging and x.device.type == "cpu":``: in the body ``x`` is no CUDA tensor (until rebound:
    a binding there decides afresh, :func:`.cputensors.note_cpu_binding`); :func:`widen` when it ends,
    whatever the body bound (``x = x.float()`` there is a CPU tensor only on that path)."""
    names = {name for part in conjuncts(test) if (name := _on_cpu(part)) is not None} - fn.cpu
    fn.cpu |= names
    fn.off_cuda |= names
    return names


def left_for_cuda(stmt: cst.CSTNode) -> set[str]:
    """The names a CUDA test of ``stmt`` (an ``if`` with no ``else`` that leaves the block) sends
    away: for the rest of the block none of them holds a CUDA tensor."""
    if type(stmt) is not cst.If or stmt.orelse is not None or not ends_in_jump(stmt.body):
        return set()
    return {name for part in disjuncts(stmt.test) if (name := _on_cuda(part)) is not None}


def _rebound(rest: tuple) -> set[str]:
    """Every name a statement of ``rest`` binds, in any spelling (:func:`.oncebound.binding_counts`)."""
    return {name for stmt in rest for name, times in binding_counts(stmt).items() if times}


def narrow(fn, stmt: cst.CSTNode, rest: tuple) -> set[str]:
    """Note the names ``stmt`` sends away as host tensors of ``fn`` (the function's tensor facts):
    the ones it had not known as such and ``rest`` (the block's statements after it) never
    rebinds, for :func:`widen` to forget when the block ends."""
    names = left_for_cuda(stmt) - fn.cpu
    names = names - _rebound(rest) if names else names
    fn.cpu |= names
    fn.off_cuda |= names
    return names


def widen(fn, names: set[str]) -> None:
    if names:
        fn.cpu -= names
        fn.off_cuda -= names
