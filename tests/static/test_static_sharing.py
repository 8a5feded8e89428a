"""Equal facts of one file are one object after summarizing (:mod:`graphlint.static.sharing`), and
nothing else changes: values whose equality is not their data, sets and records stay as they were."""

from __future__ import annotations

import pickle

from graphlint.static.facts import CallSite, FunctionInfo, ModuleInfo, ScopeFlow
from graphlint.static.sharing import share_equal_values
from graphlint.static.stepflow import ArgCall

from static_helpers import summarize

SOURCE = b'''
class Block:
    def forward(self, h, mask):
        h = self.norm(h)
        h = self.attn(h, mask)
        return h

    def step(self, h, mask):
        h = self.norm(h)
        h = self.attn(h, mask)
        return h
'''


def test_equal_flow_statements_and_arguments_become_one_object():
    (summary,) = summarize({"block.py": SOURCE})
    info = summary.data
    forward, step = info.flows["Block.forward"].stmts, info.flows["Block.step"].stmts
    assert forward == step and all(a is b for a, b in zip(forward, step))
    args = [c.args for fn in (info.functions["Block.forward"], info.functions["Block.step"]) for c in fn.calls
            if c.args is not None and c.expr[-1] == "attn"]
    assert len(args) == 2 and args[0] is args[1]


def test_only_values_whose_equality_is_their_data_are_merged():
    flow = ScopeFlow(kind="function", params=("self", "x"), locals=("a", "b"),
                     stmts=[("=", ("n", "a"), 1), ("=", ("n", "a"), True), ("=", ("n", "a"), 1),
                            ("=", ("n", "b"), 1.0), ("=", ("n", "b"), 1.0)])
    loops = frozenset({1})
    site, twin = CallSite(("n", "f"), loops=loops, args=(((1,), ()),)), CallSite(("n", "f"), args=(((1,), ()),))
    fn = FunctionInfo(qualname="g", name="g", calls=[site, twin],
                      arg_calls=[ArgCall(1, (), loops, ("n", "f"), (("x",),), (("k", ("x",)),))])
    info = ModuleInfo(path="m.py", functions={"g": fn}, flows={"g": flow})
    before = pickle.dumps(info)
    share_equal_values(info, {})
    assert pickle.loads(pickle.dumps(info)) == pickle.loads(before)  # nothing changed but identity
    one, true, again, flt, flt2 = flow.stmts
    assert one is again and true is not one and true[2] is True and flt is flt2 and flt is not one
    assert site.args is twin.args and site is not twin and site.loops is loops
    assert fn.arg_calls[0].args[0] is fn.arg_calls[0].kwargs[0][1]


def test_deep_nesting_is_left_partly_merged_not_a_crash():
    deep = ("n", "x")
    for _ in range(50_000):
        deep = ("a", deep, "y")
    info = ModuleInfo(path="m.py", flows={"<module>": ScopeFlow(kind="module", stmts=[("=", ("n", "z"), deep)])})
    share_equal_values(info, {})
    assert info.flows["<module>"].stmts[0][2] is deep


def test_tuples_holding_equal_but_different_atoms_stay_apart():
    flow = ScopeFlow(kind="function", stmts=[(("x", True),), (("x", 1),), (("x", True),), (("x", 1.0),)])
    share_equal_values(ModuleInfo(path="m.py", flows={"f": flow}), {})
    a, b, c, d = flow.stmts
    assert a is c and a is not b and b is not d and a[0][1] is True and b[0][1] == 1 and type(d[0][1]) is float
