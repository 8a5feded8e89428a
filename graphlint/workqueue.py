"""Which pending item a worker takes next (:func:`graphlint.workers.run_tasks`).

Without keys, items go out in order. With a key per item (the check's: the file's path), a worker
takes first the items whose key it was handed before -- the cross-file pass's files go back to the
worker that summarized them first and may still hold their tree (:mod:`graphlint.static.keptrees`)
-- then the items no worker was handed, and only then, rather than idle, the last (the smallest:
items come largest first) of the longest queue of another worker. Which worker runs an item never
changes its outcome, only what it costs."""

from __future__ import annotations

from collections import deque
from typing import Hashable, Iterable, Sequence


class WorkQueue:
    def __init__(self, indices: Iterable[int], keys: Sequence[Hashable] | None, workers: Sequence) -> None:
        self.keys = keys
        self.free: deque[int] = deque()
        self.own: dict[int, deque[int]] = {}  # id(worker) -> the items it was handed the keys of before
        owner = {key: id(w) for w in workers for key in w.kept} if keys is not None else {}
        for index in indices:
            slot = owner.get(keys[index]) if owner else None
            (self.free if slot is None else self.own.setdefault(slot, deque())).append(index)

    def __bool__(self) -> bool:
        return bool(self.free) or any(self.own.values())

    def take(self, worker) -> int:
        """The next item for ``worker``; only while the queue is not empty."""
        mine = self.own.get(id(worker))
        if mine:
            return mine.popleft()
        if self.free:
            return self.free.popleft()
        return max(self.own.values(), key=len).pop()

    def lost(self, worker, held: Sequence[int]) -> None:
        """A worker that failed: the items it held (first out again) and those of its keys go to any worker."""
        self.free.extendleft(reversed([*held, *self.own.pop(id(worker), ())]))

    def done(self, worker, index: int) -> None:
        """``worker`` was handed ``index``'s key: it may hold what a later item of that key can use."""
        if self.keys is not None:
            worker.kept.add(self.keys[index])
