"""Value flow of the growing-tensor rule (branch ``growcat``, ``fixtures/static/growcat``): a cache
handed in, grown into another name and handed back in the return value grows (GL207), a tensor
split and joined again does not, and a parameter's state joined but consumed is no cache."""

from __future__ import annotations

from pathlib import Path

from static_helpers import analyze

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "static"


def _files(name: str) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((FIXTURES / name).glob("*.py"))}


def _lines(files: dict[str, str], path: str, rule: str) -> list[int]:
    return sorted(f.line for f in analyze(files) if f.path == path and f.rule == rule)


def test_a_cache_grown_onto_the_callers_and_returned_grows():
    """``k = torch.cat([past[0], k])`` then ``present = (k, v)``, ``return (out, present)``: the
    decode loop passes it back next step. The partial-rotary joins (23, 31) and the join of the
    cache that is consumed, not returned (50), are silent."""
    assert _lines(_files("growcat"), "layers.py", "GL207") == [25, 26, 48, 49]


def test_returning_the_cache_is_what_makes_it_grow():
    """The same layer returning only its output: nothing the caller carries grows."""
    files = _files("growcat")
    files["layers.py"] = files["layers.py"].replace("return outputs", "return outputs[0]").replace(
        "return out, (k, v)", "return out")
    assert _lines(files, "layers.py", "GL207") == []


def test_a_tensor_appended_to_from_its_own_slice_still_grows():
    """``ids = torch.cat([ids, ids[:, -1:]])`` is no split-and-rejoin: ``ids`` was not rebuilt from a slice."""
    src = '''
import torch

class M(torch.nn.Module):
    def forward(self, ids):
        return ids.float()

def greedy(model: M, ids, steps):
    for _ in range(steps):
        last = ids[:, -1:]
        nxt = model(ids).argmax(-1)
        ids = torch.cat([ids, last], dim=-1)
        ids = torch.cat([ids, nxt], dim=-1)
    return ids
'''
    assert _lines({"m.py": src}, "m.py", "GL207") == [12, 13]


def test_a_tensor_op_on_a_tensor_unpacked_from_a_helpers_tuple_return():
    """``return (c, None)`` on one path and ``return (-1, p)`` on another: the second element is
    ``p`` wherever the caller uses it, and ``p`` reads a field annotated ``torch.FloatTensor`` in a
    method below the helper; the caller binds it in the branch that breaks out of its loop."""
    assert _lines(_files("tuplereturn"), "tree.py", "GL110") == [42]  # ``.histc()`` needs a known tensor


def test_a_binding_before_break_is_not_seen_by_the_rest_of_the_loop_body():
    """``else: residual = res; break``: inside the loop, after the ``if``, ``residual`` is not that tensor."""
    files = _files("tuplereturn")
    files["tree.py"] = files["tree.py"].replace(
        "                accepted.append(pos)\n", "                accepted.append(pos)\n                residual = pos\n"
    ).replace("                break\n", "                break\n            residual.histc(4)\n")
    assert _lines(files, "tree.py", "GL110") == [44]


def test_a_none_element_alone_says_nothing():
    """Every path returning ``None`` there: no kind, no finding."""
    files = _files("tuplereturn")
    files["tree.py"] = files["tree.py"].replace("return (-1, p)", "return (-1, None)")
    assert _lines(files, "tree.py", "GL110") == []


def _checked(monkeypatch, tmp_path, name: str, rule: str) -> list[tuple[str, int]]:
    from static_helpers import check_fixture

    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    return sorted((Path(f.path).name, f.line) for f in result.findings if f.rule == rule)


def test_a_per_step_int_through_a_getter_and_a_sum_with_another_objects_counter(monkeypatch, tmp_path):
    """``OffsetCache.offset`` is advanced by ``write`` every step: ``cache.usable(0)`` (a getter
    returning it) and ``seq += self.cache.offset`` are per-step ints, and slicing by them is GL308;
    ``cache.room()`` returns a capacity the class never advances, and ``cache.live_count()`` a count
    its methods raise and lower (requests coming and going)."""
    assert _checked(monkeypatch, tmp_path, "stepgetter", "GL308") == [("model.py", 19), ("model.py", 36)]


def test_a_value_rounds_fact_says_the_getter_and_the_counter_are_per_step():
    from graphlint.static.valueflow import value_facts_of
    from static_helpers import summarize

    facts = {f for fs in value_facts_of(summarize(_files("stepgetter"))).values() for f in fs}
    assert "field:Attn.forward:cache.usable()=step" in facts
    assert "field:Rotary.forward:self.cache.offset=step" in facts
    assert not any("room" in f or "live" in f for f in facts)


REREAD = '''
import torch


class M(torch.nn.Module):
    def forward(self, ids):
        return make_output(ids.float())


def greedy(model: M, ids, steps: int, eos: int, out: list):
    for _ in range(steps):
        res = model(ids)
        ids = res.logits.argmax(-1)
        out.append(ids.item())
        if ids == eos:  # GL105: the token read back again
            break
        nums = res.scores
        best = nums.item()
        nums = [best]
        if nums == [eos]:  # rebound to a list: no tensor
            break
'''


def test_a_tensor_read_back_with_item_and_compared_again_is_read_twice():
    """``out.append(tok.item())`` says ``tok`` is a tensor (its class unknown to the oracle): the
    later ``if tok == eos:`` reads it back a second time; a name rebound to a list is no tensor."""
    assert _lines({"m.py": REREAD}, "m.py", "GL105") == [15]


LAMBDAS = '''
import torch


class M(torch.nn.Module):
    def forward(self, ids):
        return make_output(ids.float())


def greedy(model: M, ids, steps: int, hooks: list):
    for _ in range(steps):
        ids = model(ids).logits.argmax(-1)
        hooks.append(lambda x: x.item())
        hooks.append(lambda x: int(x))  # another lambda's x: nothing says it is a tensor
        hooks.append(lambda t: int(t))
'''


def test_a_read_back_inside_a_lambda_says_nothing_of_another_lambdas_parameter():
    """``lambda x: x.item()`` and ``lambda x: int(x)`` bind two different ``x``: the first's read-back
    must not make the second's ``int(x)`` a tensor cast (torch's dynamo guards, a false GL104)."""
    assert _lines({"m.py": LAMBDAS}, "m.py", "GL104") == []


def test_a_match_statement_in_a_method_is_walked_without_an_internal_error():
    """The class pre-scan (annotated tensor fields, counters) steps over ``match``, which has cases, not a body."""
    from static_helpers import summarize

    src = "class A:\n    def f(self, x):\n        match x:\n            case 1:\n                self.n += 1\n"
    assert [s.errors for s in summarize({"m.py": src})] == [[]]
