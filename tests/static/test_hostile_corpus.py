"""The standing corpus of hostile inputs (tests/corpus/hostile/cases.toml): every input that ever
hung or crashed graphlint, or lost findings without a word, checked in one run with the default
budget -- what each must produce, and that the run as a whole finishes, in CI."""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "corpus" / "hostile"
# one `graphlint check` over the whole corpus with worker processes: seconds, so CI's run, not the default
pytestmark = pytest.mark.slow

CASES = tomllib.loads((CORPUS / "cases.toml").read_text())["case"]
HEADER = b"import torch\n\n"


def _mutations():
    spec = importlib.util.spec_from_file_location("graphlint_bench_mutations", ROOT / "bench" / "mutations.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(case: dict) -> bytes:
    if "file" in case:
        return (CORPUS / case["file"]).read_bytes()
    m = _mutations()
    names = {"chain": lambda kind, n: HEADER + m.chain(kind, n), "elif_chain": m.elif_chain,
             "indent_chain": m.indent_chain, "HEADER": HEADER,
             "decode": lambda body: HEADER + f"def decode(x: torch.Tensor):\n    return {body}\n".encode()}
    return eval(case["generate"], {"__builtins__": {}}, names)  # test data of this repository


def test_every_case_is_well_formed():
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names))
    for case in CASES:
        assert ("file" in case) != ("generate" in case), case["name"]
        assert ("expect" in case) != ("count" in case), case["name"]
    committed = {p.name for p in CORPUS.glob("*.py")}
    assert committed == {c["file"] for c in CASES if "file" in c}, "every committed input has a case"


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory):
    """All cases in one ``graphlint check`` (the CLI, worker processes, default budget)."""
    import contextlib
    import io
    import json

    from graphlint.cli import main

    root = tmp_path_factory.mktemp("hostile")
    (root / "pyproject.toml").write_text("[project]\nname = 'hostile'\n")
    for case in CASES:
        (root / f"{case['name']}.py").write_bytes(build(case))
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with _chdir(root), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["check", "--no-cache", "--no-progress", "--format", "json", "--jobs", "2", "."])
    elapsed = time.perf_counter() - start
    found: dict[str, list[dict]] = {}
    for finding in json.loads(out.getvalue())["findings"]:
        found.setdefault(finding["path"], []).append(finding)
    return rc, err.getvalue(), found, elapsed


@contextmanager
def _chdir(path: Path):  # contextlib.chdir is Python 3.11+
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_hostile_case(corpus_run, case):
    rc, err, found, _ = corpus_run
    findings = found.get(f"{case['name']}.py", [])
    if "count" in case:
        assert dict(Counter(f["rule"] for f in findings if f["rule"] in case["count"])) == case["count"]
        assert not [f for f in findings if f["category"] == "meta"], findings[:3]
        return
    got = [(f["rule"], f["line"], f["message"]) for f in findings]
    want = [e.split(":", 2) for e in case["expect"]]
    assert len(got) == len(want), got
    for (rule, line, message), expected in zip(got, want):
        assert (rule, str(line)) == tuple(expected[:2]), got
        if len(expected) > 2:
            assert expected[2] in message, (expected, message)


def test_the_corpus_run_neither_crashes_nor_hangs(corpus_run):
    rc, err, found, elapsed = corpus_run
    assert rc == 1 and "Traceback" not in err and "internal error" not in err, err
    assert not [f for fs in found.values() for f in fs if f["rule"] == "GL002"]
    assert elapsed < 120, elapsed  # minutes of libcst before the budget; seconds now
