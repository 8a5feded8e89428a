"""What Python's comparisons give on the literal values :mod:`.argvalues` tracks: decided the way
the interpreter would, and undecided (None) wherever running it would raise or the value is only
known to be some object -- so a branch is never called dead on a comparison Python cannot make."""

from __future__ import annotations


class SomeObject:
    """A value that is not None and nothing else is known of: ``is None`` is false, the rest unknown."""

    def __repr__(self) -> str:
        return "<object>"


OBJECT = SomeObject()
OBJECTS = frozenset((OBJECT,))


class NonZero:
    """A loop counter from its loop's second iteration on, the loop counting from 0 (:mod:`.iterations`):
    some int other than 0 -- true, not None, ``== 0`` false; anything else about it unknown."""

    def __repr__(self) -> str:
        return "<nonzero>"


NONZERO = NonZero()


#: what ``x <op> literal`` is, for the ordered comparisons :mod:`.valuefacts` keeps
_ORDER = {"<": lambda x, y: x < y, "<=": lambda x, y: x <= y, ">": lambda x, y: x > y, ">=": lambda x, y: x >= y}


def compare(x, op: str, y) -> bool | None:
    """``x op y`` for one known value; None (undecided) for a pair Python cannot order (``None >
    0``: a ``TypeError`` if it ran) or a value that is neither a number nor a string."""
    if not isinstance(x, (int, float, str)):
        return None
    try:
        return bool(_ORDER[op](x, y))
    except Exception:
        return None


def member(x, options: tuple) -> bool | None:
    """``x in (a, b)``: equality as Python's ``in`` has it, for literals (never raises)."""
    if x is OBJECT or x is NONZERO:
        return None
    return any(equal(x, o) for o in options)


def equal(x, y) -> bool | None:
    """``x == y``; None (undecided) for :data:`NONZERO` against anything but 0."""
    if x is NONZERO:
        return False if y == 0 and y is not None else None
    try:
        return bool(x == y)
    except Exception:
        return False
