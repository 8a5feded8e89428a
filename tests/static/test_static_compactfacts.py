"""What the cross-file planning holds of every function stays small: an annotation is kept only where
a fact against it could change the walk (:mod:`graphlint.static.overrules`), and the call sites spelled
with each name are one flat list (:attr:`graphlint.static.paramkinds.ParamKinds.spelled`)."""

from __future__ import annotations

from graphlint.cache import entry_bytes, from_entry_bytes
from graphlint.static.facts import SHARED_EMPTY
from graphlint.static.index import Index
from graphlint.static.valueflow import value_facts

from static_helpers import summarize

SOURCE = b'''
from torch import Tensor

def pad(x: Tensor, n: Tensor, width: Tensor, ids: list[int], rows: list[int]):
    if n > 0:
        x = x + width
    return x[ids]

def plain(x: Tensor, ids: list[int]):
    return x + 1

def caller(x):
    return pad(x, 3, 4, [1], [2])
'''


def _loaded():
    (summary,) = summarize({"pad.py": SOURCE})
    return from_entry_bytes(entry_bytes(summary, summary.sha256))


def test_only_annotations_a_test_or_an_index_reads_are_kept():
    functions = _loaded().data.functions
    assert functions["pad"].annotated_tensors == {"n"}  # ``width`` is only added, never tested
    assert functions["pad"].annotated_lists == {"ids"}  # ``rows`` never indexes
    assert functions["plain"].annotated_tensors is SHARED_EMPTY[set]  # nothing to overrule: nothing held
    assert functions["plain"].annotated_lists is SHARED_EMPTY[set]


def test_the_kept_annotation_is_still_overruled():
    info = _loaded().data
    facts = value_facts([info], Index([info]))
    assert "param:pad:n=number" in facts.get("pad.py", frozenset())
    assert not any(f.startswith("param:pad:width=") for f in facts.get("pad.py", frozenset()))
