"""A summary loaded where it is linked holds one shared, immutable object for every empty list, set
and dict of its facts (:data:`graphlint.static.facts.SHARED_EMPTY`), and the facts only the
cross-file planning reads are let go before the link (:func:`.valueflow.release_planning_facts`)."""

from __future__ import annotations

import pickle

import pytest

from graphlint.cache import entry_bytes, from_entry_bytes
from graphlint.static.facts import SHARED_EMPTY, FileSummary, FunctionInfo
from graphlint.static.valueflow import PLANNING_ONLY, release_planning_facts

from static_helpers import summarize

SOURCE = b'''
def helper(x):
    return x

class Block:
    def forward(self, h, mask=None):
        if mask:
            h = h[mask]
        return helper(h)
'''


def _loaded() -> FileSummary:
    (summary,) = summarize({"block.py": SOURCE})
    return from_entry_bytes(entry_bytes(summary, summary.sha256))


def test_empty_containers_are_one_shared_object_once_loaded():
    one, two = _loaded(), _loaded()
    helper, forward = one.data.functions["helper"], two.data.functions["Block.forward"]
    assert helper.index_names is forward.cast_names is SHARED_EMPTY[set]  # two loads, two functions, one set
    assert helper.loops is forward.loop_exits is SHARED_EMPTY[list]
    assert one.data.functions["helper"].defaults is SHARED_EMPTY[dict]
    assert forward.test_names == {"mask"} and forward.defaults  # what is not empty is kept as it was


def test_a_shared_empty_cannot_be_filled():
    fn = _loaded().data.functions["helper"]
    with pytest.raises(AttributeError):
        fn.bound_calls.add("x")
    with pytest.raises(AttributeError):
        fn.loops.append(None)
    with pytest.raises(TypeError):
        fn.defaults["x"] = None


def test_loaded_facts_pickle_again_to_equal_facts():
    loaded = _loaded()
    again = pickle.loads(pickle.dumps(loaded, protocol=pickle.HIGHEST_PROTOCOL))
    assert again.data == loaded.data
    assert again.data.functions["helper"].defaults is SHARED_EMPTY[dict]  # pickled as {}, shared again
    assert pickle.loads(pickle.dumps(FunctionInfo("f", "f"))).calls is SHARED_EMPTY[list]


def test_planning_facts_are_released_before_the_link():
    loaded = _loaded()
    forward = loaded.data.functions["Block.forward"]
    assert forward.test_names  # the truth test's names: read by the cross-file planning
    release_planning_facts([loaded])
    assert all(getattr(forward, name) is SHARED_EMPTY[set] for name in PLANNING_ONLY)
