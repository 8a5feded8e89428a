"""A callable object's result in a truth test (graphlint/static/matchers/truth_test.py, ``object-call``
flags; graphlint/static/argvalues.py ``returns_number``).

``if self.stop(ids, scores):`` calls an object built from a class: the walker cannot tell a module
(whose call returns a tensor) from any other callable object, so it presumes a tensor. The call graph
can: when every ``__call__`` it gives the call returns a Python value (``any(...)`` over the
criteria, ``len(...)``), the test reads nothing back and GL105 is not reported; the read-back, if
any, is inside, where it is reported on its own.
"""

from __future__ import annotations

import textwrap

from static_helpers import analyze

LOOP = """
import torch
from crit import {cls}


class Generator:
    def __init__(self, model, criteria):
        self.model = model
        self.stop = {cls}(criteria)
        self.ids = torch.zeros(1, 1, dtype=torch.long)

    def __next__(self):
        if self.stop(self.ids, None):
            raise StopIteration
        nxt = self.model(self.ids)[:, -1].argmax(-1)
        self.ids[:, -1] = nxt
        return nxt
"""

CRIT = """
import torch


class Criterion:
    def __call__(self, ids, scores) -> bool:
        raise NotImplementedError


class AnyOf(list):
    def __call__(self, ids, scores):
        return any(c(ids, scores) for c in self)


class Longer(list):
    def __call__(self, ids, scores):
        return len(self) > 0 and ids.shape[-1] > 64


class AllEos(list):
    def __call__(self, ids, scores):
        return (ids[:, -1] == 2).all()
"""


def truth_tests(cls: str) -> set[int]:
    findings = analyze({"crit.py": textwrap.dedent(CRIT), "gen.py": textwrap.dedent(LOOP.format(cls=cls))},
                       entries=("gen.py:Generator.__next__",))
    return {f.line for f in findings if f.path == "gen.py" and f.rule == "GL105"}


def test_an_object_whose_call_returns_any_of_its_criteria_is_no_tensor():
    assert truth_tests("AnyOf") == set()


def test_a_comparison_of_python_values_is_no_tensor():
    assert truth_tests("Longer") == set()


def test_an_object_whose_call_returns_a_device_test_is_read_back():
    assert truth_tests("AllEos") == {13}
