"""Which item a worker takes next (graphlint.workqueue): its own keys first, then nobody's, then
rather than idle the smallest of the longest other queue; and through run_tasks, a reserve's
worker gets back the keys it ran."""

from __future__ import annotations

import os
import time

from graphlint.workers import Reserve, run_tasks
from graphlint.workqueue import WorkQueue


class _W:
    def __init__(self, *kept: str) -> None:
        self.kept = set(kept)


def test_own_keys_first_then_nobodys_then_the_smallest_of_the_longest_queue():
    a, b = _W("p", "q", "r"), _W("s")
    keys = ["p", "s", "x", "q", "r", "y"]
    queue = WorkQueue(range(6), keys, [a, b])
    assert [queue.take(a) for _ in range(3)] == [0, 3, 4]  # p, q, r: a's own, in order
    assert queue.take(b) == 1  # s
    assert queue.take(b) == 2 and queue.take(a) == 5  # x, y: nobody's
    assert not queue


def test_an_idle_worker_takes_the_last_item_of_the_longest_other_queue():
    a, b, c = _W("p", "q", "r"), _W("s", "t"), _W()
    queue = WorkQueue(range(5), ["p", "q", "r", "s", "t"], [a, b, c])
    assert queue.take(c) == 2  # r: a's last (items come largest first)
    assert queue.take(c) in (1, 4)  # both queues are as long now
    queue.done(c, 2)
    assert "r" in c.kept


def test_a_gone_workers_items_go_to_any_worker_and_failed_ones_first():
    a, b = _W("p", "q"), _W()
    queue = WorkQueue(range(3), ["p", "q", "x"], [a, b])
    queue.lost(a, [7])
    assert [queue.take(b) for _ in range(4)] == [7, 0, 1, 2]


def test_without_keys_items_go_out_in_order():
    a = _W("p")
    queue = WorkQueue([4, 2, 9], None, [a])
    assert [queue.take(a) for _ in range(3)] == [4, 2, 9]


def _pid(item: str) -> int:
    time.sleep(0.05)  # long enough that both workers share the items, and that neither idles before the end
    return os.getpid()


def test_a_later_run_hands_each_key_back_to_the_worker_that_ran_it():
    """Every item of the second run goes back to the worker that ran it, but for the last ones a
    worker that would idle takes from the other's queue."""
    with Reserve() as reserve:
        reserve.start(2, _pid)
        items = [f"f{i}.py" for i in range(12)]
        first = run_tasks(items, _pid, jobs=2, reserve=reserve, key=str)
        owner = {item: outcome[0] for item, outcome in zip(items, first)}
        workers = {w.process.pid: w for w in reserve.workers}
        assert {pid for pid in owner.values()} <= set(workers)
        for item, pid in owner.items():
            assert item in workers[pid].kept
        second = run_tasks(items[::2], _pid, jobs=2, reserve=reserve, key=str)
        back = sum(outcome[0] == owner[item] for item, outcome in zip(items[::2], second))
        assert back >= len(items[::2]) - 2  # at most the last item of each queue is taken by the other
