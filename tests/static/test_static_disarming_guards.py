"""A guard its own branch disarms runs once (or rarely), not per step (``runonce.once_flag`` /
``runonce.disarmed``): lazy growth (``if n > self.cached: self._grow(n)`` where ``_grow`` raises
``self.cached``), lazy initialisation by a helper method, and ``if self.ready == False:`` with the
class setting ``self.ready = True``. What only such a branch runs is set-up: not reported."""

from __future__ import annotations

import textwrap

from static_helpers import analyze, decode_loop

GROWTH = """
import torch

class Rotary(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        self._grow(64, "cpu")

    def _grow(self, n, device):
        {grow_body}
        t = torch.arange(n, device=device)
        self.table = torch.outer(t, t).to("cuda")

    def forward(self, x, n: int):
        if {test}:
            self._grow(n, x.device)
        return x * self.table[:n].sum()


class Rotary2(Rotary):
    def _grow(self, n, device):
        {grow_body}
        self.table = torch.zeros(n, n, device="cpu").to("cuda")


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rot = Rotary(8)

    def forward(self, x):
        return self.rot(x, x.shape[-1])
""" + decode_loop() + """
def main():
    loop(M(), torch.zeros(3), 4)
"""


def run(src: str):
    return [f for f in analyze({"m.py": textwrap.dedent(src)}) if f.rule.startswith(("GL1", "GL2", "GL4"))]


def test_lazy_growth_through_a_method_that_raises_the_bound_is_not_reported():
    for test in ("n > self.cached", "self.cached < n", "n >= self.cached"):
        src = GROWTH.format(grow_body="self.cached = n", test=test)
        assert run(src) == [], test


def test_a_growth_guard_whose_method_does_not_raise_the_bound_stays_hot():
    src = GROWTH.format(grow_body="self.other = n", test="n > self.cached")
    assert run(src) != []


FLAG = """
import torch

class Cache(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ready = False
        self.table = None

    def _build(self, x):
        self.table = x.sum().item()
        {mark}

    def forward(self, x):
        if {test}:
            self._build(x)
        return x + 1


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = Cache()

    def forward(self, x):
        return self.cache(x)
""" + decode_loop() + """
def main():
    loop(M(), torch.zeros(3), 4)
"""


def test_a_flag_or_a_field_a_helper_sets_disarms_its_guard():
    assert run(FLAG.format(mark="self.ready = True", test="self.ready == False")) == []
    assert run(FLAG.format(mark="self.ready = True", test="self.ready is False")) == []
    assert run(FLAG.format(mark="pass", test="self.table is None")) == []


def test_a_guard_nothing_disarms_stays_hot():
    assert run(FLAG.format(mark="pass", test="self.ready == False")) != []
    assert run(FLAG.format(mark="pass", test="x.shape[0] > 2")) != []


PROPERTY = """
import torch

class Scheduler(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self._index = None
        self._other = None

    @property
    def index(self):
        \"\"\"Where the first step found itself in the schedule.\"\"\"
        return {field}

    def _init_index(self, x):
        if x.dim() > 1:
            self._index = x.sum().item()
        else:
            self._index = 0

    def forward(self, x):
        if self.index is None:
            self._init_index(x)
        self._index += 1
        return x + 1


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.sched = Scheduler()

    def forward(self, x):
        return self.sched(x)
""" + decode_loop() + """
def main():
    loop(M(), torch.zeros(3), 4)
"""


def test_a_property_reading_the_field_a_helper_sets_disarms_its_guard():
    """``if self.index is None: self._init_index(x)`` with ``index`` a property returning
    ``self._index``, which ``_init_index`` assigns: the first step's lookup, once per run."""
    assert run(PROPERTY.format(field="self._index")) == []


def test_a_property_reading_another_field_keeps_its_guard_hot():
    assert [f.line for f in run(PROPERTY.format(field="self._other"))] == [17]
