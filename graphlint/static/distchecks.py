"""Whether a ``torch.distributions`` object checks its arguments (GL109's host read).

A distribution built with validation on (``validate_args``, the default under ``__debug__``) tests
its arguments with ``if not valid.all(): raise``: a read-back when it is built. Turned off for one
object (``validate_args=False``) or for the whole process (``set_default_validate_args(False)``),
its ``sample()`` is a ``torch.multinomial`` draw and reads nothing. Kept apart from
:mod:`.valuekinds` (which records the names' origins) so the two tests stay next to each other.
"""

from __future__ import annotations

from typing import Sequence

import libcst as cst

from graphlint.static.cstwalk import keyword
from graphlint.static.names import resolve

#: what a distribution's draw is called: its result is a tensor on the parameters' device
DRAWS = frozenset(("sample", "rsample"))


def skips_validation(call: cst.Call) -> bool:
    """``Categorical(logits=x, validate_args=False)``: the object checks none of its arguments."""
    flag = keyword(call, "validate_args")
    return type(flag) is cst.Name and flag.value == "False"


def draws(call: cst.Call, imports: dict[str, str]) -> bool:
    """``torch.distributions.Categorical(logits=x).sample()``: a draw from an object made in the
    expression, a tensor (unknown otherwise, so a sampler returning either it or an argmax returned
    nothing known, and ``torch.equal(token, eos)`` on the result went unseen)."""
    func = call.func
    return type(func) is cst.Attribute and func.attr.value in DRAWS and type(func.value) is cst.Call \
        and (resolve(func.value.func, imports) or "").startswith("torch.distributions.")


def turns_validation_off(body: Sequence[cst.CSTNode]) -> bool:
    """A module-level ``Distribution.set_default_validate_args(False)``: every distribution the
    program builds afterwards skips its argument checks (the setting is process-wide)."""
    for stmt in body:
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            call = small.value if isinstance(small, cst.Expr) else None
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) \
                    and call.func.attr.value == "set_default_validate_args" and len(call.args) == 1 \
                    and isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == "False":
                return True
    return False
