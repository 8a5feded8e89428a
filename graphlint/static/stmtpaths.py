"""Where a statement sits in its function, as a compact path, and which statement runs on every
way to another.

A read-back candidate and an argument-passing call carry the path of their statement (the
walker's ``(field, index)`` per enclosing block) so that, when linking, :mod:`.stepresult` can
tell whether one read runs before another on every way through the function. The path is stored
in every cached summary, hence encoded as one int per block; the questions asked of it
(:func:`dominates`, :func:`follows_a_read`) need nothing else of the tree, so they live here
rather than with the walk that records the facts (:mod:`.stepflow`).
"""

from __future__ import annotations


def encode_path(path) -> tuple[int, ...]:
    """A statement path (``Walker.path``: ``(field, index)`` per block, outermost first) as one int
    per block, ``index * 256 + field code``: a third of the summary's bytes for the same facts."""
    return tuple(index * 256 + (FIELDS.get(field) if field in FIELDS else _field_code(field)) for field, index in path)


#: ``with``: a ``with``'s block (the walker's own name for it), which runs whenever the ``with`` does
FIELDS = {"body": 0, "orelse": 1, "finalbody": 2, "with": 127}
WITH = FIELDS["with"]


def _field_code(field: str) -> int:
    kind, _, n = field.partition(".")  # ``handlers.2``, ``cases.5``
    code = (3 if kind == "handlers" else 128) + (int(n) if n.isdigit() else 0)
    FIELDS[field] = code = min(code, 255)
    return code


def dominates(first: tuple, then: tuple) -> bool:
    """Whether the statement at path ``first`` (:func:`encode_path`) runs on every way to the one at
    ``then`` (within one pass of the function or loop body): ``first``'s block holds ``then`` at a
    later statement, or ``then`` is ``first`` itself or nested in it (an ``if``'s test runs before
    its arms). A read inside one arm of an ``if`` does not dominate what follows the ``if``."""
    k = len(first) - 1
    if k < 0 or len(then) <= k or then[:k] != first[:k]:
        return False
    a, b = first[k], then[k]
    return a % 256 == b % 256 and a <= b


def follows_a_read(seen: list[tuple], then: tuple) -> bool:
    """Whether a read at one of the paths ``seen`` runs on every way to ``then``: one of them
    :func:`dominates` it, or an earlier statement of a block holding ``then`` reads on every way
    through it -- an ``if`` whose arm and ``else`` arm both read (``elif`` chains included), or a
    ``with`` whose block reads on every way through it."""
    if any(dominates(p, then) for p in seen):
        return True
    exact = set(seen)

    def always(stmt: tuple) -> bool:
        return stmt in exact or covers(stmt, WITH) or (covers(stmt, 0) and covers(stmt, 1))  # the body and the ``else``

    def covers(stmt: tuple, arm: int) -> bool:
        k = len(stmt)
        return any(len(p) > k and p[:k] == stmt and p[k] % 256 == arm and always(p[:k + 1]) for p in seen)

    for j, level in enumerate(then):
        if any(always(then[:j] + (i * 256 + level % 256,)) for i in range(level // 256)):
            return True
    return False


def exclusive(first: tuple, then: tuple) -> bool:
    """Whether the statements at paths ``first`` and ``then`` sit in the two arms of one ``if``
    (its body and its ``else``, ``elif`` chains included): no pass runs both. A loop's or a
    ``try``'s ``else`` is taken for one too, which only ever keeps a read as it was."""
    for a, b in zip(first, then):
        if a != b:
            return {a % 256, b % 256} == {0, 1}  # a body and an ``else`` of the statement the paths share
    return False
