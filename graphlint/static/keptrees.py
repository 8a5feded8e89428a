"""libcst trees a worker process keeps from a file's first summary for its cross-file summary.

The cross-file pass (:func:`graphlint.check._add_cross_file_facts`) summarizes a file again with
other files' facts, and each time libcst parsed it again: about 40% of a summary's CPU (measured on
torch's files), on an engine a third of the workers' CPU went to that pass. The parse depends on
the file's bytes and the run's options alone, and the walk reads the tree without changing it (the
nodes are frozen), so the tree the first summary parsed gives the second one the same answers.

A tree is tens of times its source (about 26 bytes per character of the blanked text on torch's
files), so a worker keeps trees only up to :func:`allow`'s budget, first come first kept (the
largest files come first: the most parse saved per tree); the parent hands each file of the
cross-file pass to the worker that summarized it first (:class:`graphlint.workqueue.WorkQueue`).
Kept trees are moved out of the cyclic collector's sight (:func:`settle`): it runs after every
file, and walking millions of kept nodes each time would cost more than the parse saved.
Nothing is kept outside worker processes (the budget stays 0)."""

from __future__ import annotations

import gc

#: bytes a kept tree is taken to hold per character of its (blanked) text: measured 26 on torch's files
BYTES_PER_CHAR = 32
#: the most a worker keeps: a tree of every file of a large project would be gigabytes
MOST = 256 << 20

_kept: dict[tuple[str, str], tuple[str, object]] = {}
_room = [0]  # characters of text whose trees may still be kept
_fresh = [False]  # a tree was kept since the last :func:`settle`


def budget(file_memory: int) -> int:
    """Bytes of trees a worker keeps: a sixteenth of the per-file memory limit (0: no limit), at most :data:`MOST`."""
    return min(MOST, file_memory // 16) if file_memory else MOST


def allow(memory: int) -> None:
    """Keep trees up to ``memory`` bytes (estimated) in this process from now on."""
    _room[0] = max(0, memory) // BYTES_PER_CHAR


def kept(path: str, sha256: str) -> tuple[str, object] | None:
    """(the blanked text, its libcst module) of the file with these bytes, when this process keeps it."""
    return _kept.get((path, sha256))


def keep(path: str, sha256: str, text: str, module: object) -> None:
    if len(text) <= _room[0] and (path, sha256) not in _kept:
        _kept[(path, sha256)] = (text, module)
        _room[0] -= len(text)
        _fresh[0] = True


def settle() -> None:
    """After the collector ran: what lives now (the kept trees among it) is never looked at again."""
    if _fresh[0]:
        _fresh[0] = False
        gc.freeze()
