"""A parameter rebound only where an ``isinstance`` test fails keeps the callers' objects where each
passes that test (:mod:`graphlint.static.typenarrow`, :mod:`graphlint.static.hotreceivers`)."""

from __future__ import annotations

from pathlib import Path

from static_helpers import analyze, assert_marked, check_fixture

ROOT = Path(__file__).resolve().parents[2]
NARROWING = ROOT / "fixtures" / "static" / "narrowing"


def test_a_cache_object_skips_the_conversion(monkeypatch, tmp_path):
    """The engine hands every step a ``SlabCache``: ``Net.forward``'s ``ListCache`` never runs."""
    result = check_fixture(monkeypatch, tmp_path, NARROWING, ".")
    assert_marked(result, NARROWING, ".")


def _files(engine: str) -> dict[str, str]:
    files = {p.relative_to(NARROWING).as_posix(): p.read_text() for p in NARROWING.rglob("*.py")}
    files["engine.py"] = engine
    return files


def _rules(files):
    return sorted((f.path, f.line, f.rule) for f in analyze(files))


ENGINE = (NARROWING / "engine.py").read_text()
GROWS = [("kvnarrow/caches.py", 29, "GL207")]


def test_the_fixture_is_silent_only_because_of_the_test():
    """The same engine against a model whose test is a ``None`` check: the flow-insensitive name
    holds both caches and the growth is reported."""
    files = _files(ENGINE)
    files["kvnarrow/model.py"] = files["kvnarrow/model.py"].replace("not isinstance(past, BaseCache)", "past is None")
    assert _rules(files) == GROWS


def test_a_caller_passing_no_cache_keeps_the_conversion():
    """One call omits the cache (the default ``None`` fails the test): the growth runs."""
    assert _rules(_files(ENGINE.replace("model(token, past=past)", "model(token)"))) == GROWS
    both = ENGINE.replace("return model(token, past=past).argmax(-1)",
                          "if token.ndim > 2:\n        return model(token).argmax(-1)\n"
                          "    return model(token, past=past).argmax(-1)")
    assert _rules(_files(both)) == GROWS


def test_an_object_of_another_class_or_a_literal_keeps_the_conversion():
    other = ENGINE.replace("past = SlabCache(64)", "past = Tuples()").replace(
        "from kvnarrow.caches import SlabCache", "class Tuples:\n    pass")
    assert _rules(_files(other)) == GROWS
    literal = ENGINE.replace("past = SlabCache(64)", "past = ((1, 2),)")
    assert _rules(_files(literal)) == GROWS


def test_a_field_that_may_hold_none_keeps_the_conversion():
    """``self.past`` starts as None: a field's points-to set does not say so, so it is no instance."""
    held = ENGINE.replace("def step(model, token, past):\n    return model(token, past=past).argmax(-1)",
                          "class Holder:\n    def __init__(self):\n        self.past = None\n\n"
                          "    def load(self):\n        self.past = SlabCache(64)\n\n\n"
                          "def step(model, token, holder):\n    return model(token, past=holder.past).argmax(-1)")
    held = held.replace("past = SlabCache(64)\n    graphed", "past = Holder()\n    graphed")
    assert _rules(_files(held)) == GROWS


def test_a_rebinding_outside_the_test_keeps_the_name_whole():
    files = _files(ENGINE)
    files["kvnarrow/model.py"] = files["kvnarrow/model.py"].replace(
        "        return self.head(", "        if x.ndim > 3:\n            past = ListCache()\n        return self.head(")
    assert _rules(files) == GROWS


def test_an_entry_handed_to_a_library_keeps_its_parameters_unknown():
    """``step`` handed to a library runner (not ``torch.compile``): the runner may pass anything."""
    handed = ENGINE.replace("graphed = torch.compile(step, mode=\"reduce-overhead\")",
                            "import runner\n    runner.register(step)\n    graphed = torch.compile(step, mode=\"reduce-overhead\")")
    assert _rules(_files(handed)) == GROWS


POOLS = (NARROWING / "pools.py").read_text()
HOST_TRIM = [("pools.py", 16, "GL103"), ("pools.py", 16, "GL403")]


def _pools(old: str, new: str) -> list[tuple]:
    assert old in POOLS
    return _rules({"pools.py": POOLS.replace(old, new, 1)})


def test_a_call_under_an_isinstance_test_runs_only_that_family():
    """``pool.trim`` under ``isinstance(pool, DevicePool)``: the HostPool's host copy never runs."""
    assert _rules({"pools.py": POOLS}) == []
    assert _pools("isinstance(pool, DevicePool)", "pool is not None") == HOST_TRIM


def test_a_test_that_does_not_hold_in_the_body_narrows_nothing():
    assert _pools("x.shape[0] > 2 and isinstance(pool, DevicePool)", "x.shape[0] > 2 or isinstance(pool, DevicePool)") == HOST_TRIM
    assert _pools("isinstance(pool, DevicePool)", "isinstance(pool, Pool)") == HOST_TRIM  # the base: every pool
    assert _pools("isinstance(pool, DevicePool)", "not isinstance(pool, DevicePool)") == HOST_TRIM


def test_a_call_outside_the_test_or_a_rebound_parameter_narrows_nothing():
    assert _pools("    return x * 2\n", "    pool.trim(1)\n    return x * 2\n") == HOST_TRIM
    assert _pools("        pool.trim(2)\n", "        pool = pool.peer\n        pool.trim(2)\n") == HOST_TRIM


def test_a_call_outside_the_test_before_it_narrows_nothing():
    assert _pools("    if x.shape[0] > 2 and", "    pool.trim(1)\n    if x.shape[0] > 2 and") == HOST_TRIM
