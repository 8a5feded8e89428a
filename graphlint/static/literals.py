"""libcst's ``evaluated_value`` of number and string literals without a ``compile`` where none is
needed, in a worker process only (:func:`graphlint.check._init_worker`).

libcst evaluates every ``Integer``, ``Float``, ``Imaginary`` and ``SimpleString`` with
``ast.literal_eval`` of its source text: a parse and a compile for ``0`` or ``"cpu"``, asked of
thousands of literals a file (``valuefacts.literal`` and a dozen other readers). A decimal
integer's text is ``int``'s, and an unprefixed string with no backslash and no carriage return is
its text between the quotes (CPython reads ``\\r\\n`` in a string as ``\\n``: those keep
``literal_eval``); any other text goes to ``literal_eval`` as before. Not memoised: like
``literal_eval``'s, each value is a new object (a shared one would change what a summary pickles
and what the linking process holds)."""

from __future__ import annotations

from ast import literal_eval

import libcst as cst


def integer_value(text: str):
    """What ``literal_eval(text)`` gives for an ``Integer`` node's text."""
    if text.isascii() and text.isdigit():
        return int(text)
    return literal_eval(text)


def string_value(text: str):
    """What ``literal_eval(text)`` gives for a ``SimpleString`` node's text."""
    quote = text[:1]
    if (quote == '"' or quote == "'") and "\\" not in text and "\r" not in text:
        return text[3:-3] if len(text) >= 6 and text[1:3] == quote * 2 else text[1:-1]
    return literal_eval(text)


def number_value(text: str):
    """``Float`` and ``Imaginary``: ``literal_eval``."""
    return literal_eval(text)


def plain_literals() -> None:
    """Install the readers above as the four classes' ``evaluated_value``."""
    cst.Integer.evaluated_value = property(lambda node: integer_value(node.value))
    cst.SimpleString.evaluated_value = property(lambda node: string_value(node.value))
    cst.Float.evaluated_value = property(lambda node: number_value(node.value))
    cst.Imaginary.evaluated_value = property(lambda node: number_value(node.value))
