"""A row's retirement inside a loop over rows that skips retired ones: once per row, not per token.

A consumer of a per-token stream walks the batch's rows every token and retires each row once::

    for j in range(batch):
        if finished[j]:
            continue                                    # a retired row is skipped from now on
        if ids[j].cpu()[-1] == eos or len(ids[j]) >= limit:   # the test: every token, per row
            finished[j] = True                          # the row retires here ...
            text = decode(ids[j].cpu().tolist())        # ... so this runs once per row

The branch that sets the row's flag runs at most once per row over the whole generation, because
the loop's own first statements skip a row whose flag is set: the row's clean-up (its final
read-back, its decoding), as :func:`.stopchecks.finishes_rows` takes a branch a row takes on the
step it ends. The branch's test still runs every token and stays the step's. Only the exact shape
is taken: the loop's target ``j`` indexes a plain name ``F`` (``F[j]``), the loop body skips on
``if F[j]: continue`` before the branch, and the branch stores ``F[j] = True`` at its own level.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import top_small_statements


def _row_flag(node: cst.BaseExpression, row: str) -> str | None:
    """``F`` of ``F[row]``, ``F`` a plain name."""
    if type(node) is cst.Subscript and type(node.value) is cst.Name and len(node.slice) == 1 \
            and type(node.slice[0].slice) is cst.Index and type(node.slice[0].slice.value) is cst.Name \
            and node.slice[0].slice.value.value == row:
        return node.value.value
    return None


def _skips(stmt: cst.CSTNode, row: str) -> str | None:
    """``F`` of ``if F[row]: continue``."""
    if type(stmt) is not cst.If or stmt.orelse is not None:
        return None
    body = list(top_small_statements(stmt.body))
    return _row_flag(stmt.test, row) if len(body) == 1 and type(body[0]) is cst.Continue else None


def retires_row(stmt: cst.If, loop: cst.CSTNode | None) -> bool:
    """Whether ``stmt``, a statement of ``loop``'s own body, is a branch that retires the loop's row
    (see the module docstring)."""
    if type(loop) is not cst.For or type(loop.target) is not cst.Name or not isinstance(loop.body, cst.IndentedBlock):
        return False
    row = loop.target.value
    skipped: set[str] = set()
    for own in loop.body.body:
        if own is stmt:
            break
        flag = _skips(own, row)
        if flag is not None:
            skipped.add(flag)
    else:
        return False  # not a statement of the loop's own level
    return bool(skipped) and any(
        type(small) is cst.Assign and type(small.value) is cst.Name and small.value.value == "True"
        and any(_row_flag(t.target, row) in skipped for t in small.targets)
        for small in top_small_statements(stmt.body))
