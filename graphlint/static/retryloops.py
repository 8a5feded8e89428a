"""Retry loops: a loop whose body ends in an unconditional ``break`` runs once per success.

``while True: try: load(module, device); x = module.forward(x); except OutOfMemoryError: device
+= 1; continue; break`` tries the same work again only when an attempt fails (a ``continue``, from
an ``except`` branch or a test of the outcome); an attempt that gets through reaches the ``break``
and leaves. However much its statements look like a loop that feeds a model's output back
(:mod:`.loops`), it goes round again only for a failure: no per-token loop, and no serving loop.
A decode loop's exit is a test (``if done: break``), never its last statement.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import last_statement


def retry_loop(stmt: cst.For | cst.While) -> bool:
    """Whether the loop's body ends in a bare ``break`` statement (see the module docstring)."""
    return type(last_statement(stmt.body)) is cst.Break
