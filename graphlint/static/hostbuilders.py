"""Functions that build on the host unless told a device: ``def rope_params(config, device=None)``.

torch's own factories take ``device=None`` and then build on the CPU (the default device); code
that builds constants follows the convention (a rotary table's ``inv_freq``, a mask, a bias
table): called with ``device`` left out it returns host tensors, and moving one with
``.to(x.device)`` every step is a pageable copy a capture refuses (Phi-MoE's rotary embedding
re-runs its ``rope_init_fn(config)`` each step on an H200). Known before any call is walked, as
the ``-> Tensor`` functions are: the functions of a module or class body with a ``device``
parameter defaulting to ``None``, and, in a class, the ``self`` attributes its ``__init__`` binds
to one of its methods (``self.rope_init_fn = self.compute_default_rope_parameters``). A call
counts (:mod:`graphlint.static.matchers.host_copy`) only with no device and no tensor argument:
a function that takes the data it works on returns it where that data is.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from graphlint.static.cstwalk import self_attr
from graphlint.static.placedreturns import positional_params


def _device_position(fn: cst.FunctionDef, in_class: bool) -> int | None:
    """Where ``device=None`` is among the positional parameters a caller passes (``self`` left out of
    a method's); 1,000 for a keyword-only one; None without it."""
    positional = positional_params(fn, in_class)
    for i, p in enumerate((*fn.params.params, *fn.params.kwonly_params)):
        if p.name.value == "device" and isinstance(p.default, cst.Name) and p.default.value == "None":
            return positional.index("device") if "device" in positional else 1000
    return None


def host_builders(stmts: Sequence[cst.CSTNode], in_class: bool, module: dict[str, int] | None = None) -> dict[str, int]:
    """Name -> the position of its ``device`` parameter; in a class, also the attributes ``__init__``
    binds to one of its methods or to one of the ``module``'s builders (``self.init_fn = build``)."""
    defs = [s for s in stmts if isinstance(s, cst.FunctionDef)]
    names = {fn.name.value: at for fn in defs if (at := _device_position(fn, in_class)) is not None}
    module = module or {}
    if not in_class or not (names or module):
        return names
    for fn in defs:
        if fn.name.value != "__init__":
            continue
        for stmt in fn.body.body:
            for small in getattr(stmt, "body", ()) if isinstance(stmt, cst.SimpleStatementLine) else ():
                pairs = ([(t.target, small.value) for t in small.targets] if isinstance(small, cst.Assign)
                         else [(small.target, small.value)] if isinstance(small, cst.AnnAssign) else [])
                for target, value in pairs:
                    attr, method = self_attr(target), self_attr(value)
                    if attr is not None and method in names:
                        names[attr] = names[method]
                    elif attr is not None and isinstance(value, cst.Name) and value.value in module:
                        names[attr] = module[value.value]
    return names


def builder_call(node: cst.BaseExpression, module: dict[str, int], cls: dict[str, int], is_tensor) -> bool:
    """``self.rope_init_fn(self.config)``, ``rope_params(config)``: a host builder given no device and
    no tensor."""
    if type(node) is not cst.Call:
        return False
    func = node.func
    name = self_attr(func)
    at = cls.get(name) if name is not None else module.get(func.value) if type(func) is cst.Name else None
    if at is None or any(a.star for a in node.args):
        return False
    if any(a.keyword is not None and a.keyword.value == "device" for a in node.args):
        return False
    if len([a for a in node.args if a.keyword is None]) > at:
        return False  # the device passed by position
    return not any(is_tensor(a.value) for a in node.args)
