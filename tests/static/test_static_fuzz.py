"""Fuzzing in CI's budget: hypothesis-driven mutations (bench/mutations.py) of this repository's
fixtures through the analyzer, a batch of them through the CLI's workers, and generated
configurations. The long run is ``python bench/fuzz.py --files 10000`` (docs/check.md)."""

from __future__ import annotations

import importlib.util
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from static_helpers import builtin_rules, options

from graphlint.static.budget import error_code
from graphlint.static.link import link
from graphlint.static.summarize import summarize_file

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted(p for p in (ROOT / "fixtures" / "static").rglob("*.py") if p.stat().st_size < 20_000)


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


mutations = _load("graphlint_bench_mutations", ROOT / "bench" / "mutations.py")
#: small limits keep every example fast: what is past them is a GL005, which is the point
FAST = {"max_depth": 300, "max_file_size": 64 << 10}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fixture=st.sampled_from(FIXTURES), seed=st.integers(0, 2**32 - 1), count=st.integers(1, 4))
def test_mutated_fixtures_never_crash_the_analyzer(fixture, seed, count):
    rules = builtin_rules()
    opts = options(rules, **FAST)
    data, how = mutations.mutate(fixture.read_bytes(), random.Random(seed), count)
    summary = summarize_file("pkg/m.py", data, rules, opts)
    assert all(error_code(message) in ("GL000", "GL005") for _, _, message in summary.errors), (how, summary.errors)
    for finding in link([summary], rules, opts):
        assert finding.line >= 1 and finding.col >= 1, (how, finding)


def test_every_mutation_changes_or_keeps_bytes_without_failing():
    data = (ROOT / "fixtures" / "static" / "engines").rglob("*.py").__next__().read_bytes()
    rng = random.Random(0)
    for name, mutation in mutations.MUTATIONS.items():
        for _ in range(5):
            assert isinstance(mutation(data, rng), bytes), name
    assert set(mutations.WEIGHTS) == set(mutations.MUTATIONS)


SCALARS = st.one_of(st.text(max_size=12), st.integers(-5, 10**12), st.floats(allow_nan=True), st.booleans())
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                      max_leaves=8)
KEYS = st.sampled_from(["paths", "exclude", "entry", "select", "ignore", "per-file-ignores", "guards", "prefill-guards",
                        "prefill-names", "hot-names", "rule-packs", "target-version", "max-depth", "max-file-size",
                        "file-timeout", "file-memory", "selct", ""])


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value).replace("inf", "inf").replace("nan", "nan")
    if isinstance(value, str):
        return '"' + "".join(c if c.isprintable() and c not in '"\\' else f"\\u{ord(c):04x}" for c in value) + '"'
    if isinstance(value, list):
        return "[" + ", ".join(map(toml_value, value)) + "]"
    return "{" + ", ".join(f"{toml_value(k)} = {toml_value(v)}" for k, v in value.items()) + "}"


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(table=st.dictionaries(KEYS, VALUES, max_size=4), junk=st.binary(max_size=8), cut=st.integers(0, 400))
def test_generated_configurations_are_used_or_refused_in_one_line(tmp_path, table, junk, cut):
    from graphlint.check_settings import resolve
    from graphlint.config_file import ConfigError, load_config
    from graphlint.rules import RuleError

    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "src" / "m.py").write_text("x = 1\n")
    text = "[tool.graphlint]\n" + "".join(f"{toml_value(k)} = {toml_value(v)}\n" for k, v in table.items())
    for variant in (text.encode(), text.encode()[:cut] + junk + text.encode()[cut:]):
        config_path = tmp_path / "pyproject.toml"
        config_path.write_bytes(variant)
        try:
            config = load_config(config_path, cwd=tmp_path)
            resolve(config, paths=[str(tmp_path / "src")], use_cache=False)
        except (ConfigError, RuleError) as exc:
            assert "\n" not in str(exc).strip() or "rule pack" in str(exc), str(exc)


@pytest.mark.slow
def test_the_long_fuzzer_runs(tmp_path):
    """bench/fuzz.py itself, on a small sample (the documented run is 10,000 files)."""
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "fuzz.py"), "--files", "120", "--seed", "5",
                           "--no-clean", "--corpus", str(ROOT / "fixtures"), "--corpus", str(ROOT / "dsv4")],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "failing batches: 0" in proc.stdout
