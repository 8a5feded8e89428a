"""libcst's ``evaluated_value`` of number and string literals without a ``compile`` where none is
needed, in a worker process only (:func:`graphlint.check._init_worker`).

libcst evaluates every ``Integer``, ``Float``, ``Imaginary`` and ``SimpleString`` with
``ast.literal_eval`` of its source text: a parse and a compile for ``0`` or ``"cpu"``, asked of
thousands of literals a file (``valuefacts.literal`` and a dozen other readers). A decimal
integer's text is ``int``'s, and an unprefixed string with no backslash and no carriage return is
its text between the quotes (CPython reads ``\\r\\n`` in a string as ``\\n``: those keep
``literal_eval``); any other text goes to ``literal_eval`` as before, memoised by text (the values
are immutable, so equal texts may share one)."""

from __future__ import annotations

from ast import literal_eval
from functools import lru_cache

import libcst as cst

_evaluated = lru_cache(maxsize=4096)(literal_eval)


def integer_value(text: str):
    """What ``literal_eval(text)`` gives for an ``Integer`` node's text."""
    if text.isascii() and text.isdigit():
        return int(text)
    return _evaluated(text)


def string_value(text: str):
    """What ``literal_eval(text)`` gives for a ``SimpleString`` node's text."""
    quote = text[:1]
    if (quote == '"' or quote == "'") and "\\" not in text and "\r" not in text:
        if len(text) >= 6 and text[1:3] == quote * 2:
            return text[3:-3]
        return text[1:-1]
    return _evaluated(text)


def number_value(text: str):
    """``Float`` and ``Imaginary``: ``literal_eval``, memoised."""
    return _evaluated(text)


def plain_literals() -> None:
    """Install the readers above as the four classes' ``evaluated_value``."""
    cst.Integer.evaluated_value = property(lambda node: integer_value(node.value))
    cst.SimpleString.evaluated_value = property(lambda node: string_value(node.value))
    cst.Float.evaluated_value = property(lambda node: number_value(node.value))
    cst.Imaginary.evaluated_value = property(lambda node: number_value(node.value))
