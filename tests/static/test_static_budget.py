"""The per-file budget before libcst (graphlint.static.budget), one judge of what is Python (the
target version's ``ast``), and positions that stay linear in the number of findings."""

from __future__ import annotations

import ast
import sys
import time
from dataclasses import replace

import libcst
import pytest
from static_helpers import builtin_rules, options

from graphlint.static.budget import (MAX_BRACKETS, OverBudget, SourceRejected, bracket_depth, check_depth,
                                     error_code, python_tree)
from graphlint.static.summarize import summarize_file

RUNNING = sys.version_info[:2]


def summarize(src: str | bytes, **kw):
    rules = builtin_rules()
    data = src.encode() if isinstance(src, str) else src
    return summarize_file("m.py", data, rules, options(rules, **kw))


def depth_of(src: str, limit: int) -> str:
    try:
        check_depth(ast.parse(src), src, limit)
    except OverBudget as exc:
        return exc.message
    return ""


def test_depth_counts_statements_and_expressions_and_libcsts_nesting_of_and():
    assert depth_of("x = a" + ".b" * 50 + "\n", 60) == ""
    assert "nested more than 40 levels deep" in depth_of("x = a" + ".b" * 50 + "\n", 40)
    nested_ifs = "".join(" " * i + "if x:\n" for i in range(30)) + " " * 30 + "pass\n"
    assert depth_of(nested_ifs, 40) == "" and "from line 2" in depth_of(nested_ifs, 25)
    elifs = "if a:\n    pass\n" + "elif a:\n    pass\n" * 60
    assert "nested more than 50" in depth_of(elifs, 50)
    flat_and = "x = " + " and ".join(["a"] * 60) + "\n"  # one BoolOp to ast, 59 levels to libcst
    assert "nested more than 50" in depth_of(flat_and, 50)
    assert depth_of("x = [" + ", ".join(["1"] * 5000) + "]\n", 50) == ""  # long but flat
    assert depth_of("y = 1\rx = (" + "a\r + " * 40 + "a)\r", 200) == ""  # \r line ends: ast's line numbers


def test_depth_check_is_cheap_on_ordinary_code():
    src = "".join(f"def f{i}(x):\n    y = g(x, [1, 2, 3], {{'a': x.b.c}})\n    return y\n" for i in range(3000))
    tree = ast.parse(src)
    start = time.perf_counter()
    check_depth(tree, src, 1500)
    checked = time.perf_counter() - start
    start = time.perf_counter()
    ast.parse(src)
    parsed = time.perf_counter() - start
    assert checked < max(parsed, 0.05), (checked, parsed)  # under one ast parse: a look per statement


def test_python_judges_the_file_for_the_target_version():
    assert python_tree("x = 1\n", RUNNING) is not None
    with pytest.raises(SourceRejected, match="too many nested parentheses"):
        python_tree("x = " + "(" * (MAX_BRACKETS + 1) + "1" + ")" * (MAX_BRACKETS + 1) + "\n", RUNNING)
    with pytest.raises(SourceRejected, match="nested too deeply for Python"):
        python_tree("x = a" + ".b" * 20000 + "\n", RUNNING)
    match = "match x:\n    case 1:\n        pass\n"
    with pytest.raises(SourceRejected, match=r"Python 3\.9, target-version"):
        python_tree(match, (3, 9))
    newer = (RUNNING[0], RUNNING[1] + 1)
    assert python_tree("x = = 1\n", newer) is None  # newer than this Python: libcst decides alone


def test_the_judge_is_not_swayed_by_a_raised_recursion_limit():
    src = "x = a" + ".b" * 4000 + "\n"
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(50_000)
    try:
        with pytest.raises(SourceRejected):
            python_tree(src, RUNNING)
    finally:
        sys.setrecursionlimit(limit)


def test_brackets_are_counted_for_files_only_libcst_reads():
    assert bracket_depth("x = ((1), [2, {3: (4)}])  # ((((\ns = '(((('\n") == (4, 1)


def test_error_codes_by_message():
    assert [error_code(m) for m in ("syntax error: x", "not analysed: too big", "internal error: boom")] == [
        "GL000", "GL005", "GL002"]


@pytest.mark.skipif(RUNNING >= (3, 12), reason="this Python parses PEP 695 itself")
def test_newer_syntax_than_this_python_is_a_finding_unless_the_target_allows_it():
    src = "import torch\ntype Alias = int\n\ndef decode[T](x: torch.Tensor):\n    y = x.item()\n    return x.tolist()\n"
    (error,) = summarize(src).errors  # before issue 23: 0 findings, exit 0
    assert error[:2] == (2, 6) and error[2].startswith("syntax error")
    target = summarize(src, target_version=(3, 12))
    assert target.errors == []
    assert [(c.code, c.line, c.col) for c in target.data.candidates] == [("GL101", 5, 9), ("GL102", 6, 12)]


def test_size_limit_and_a_file_just_under_it():
    big = b"x = 1\n" * 1000
    (error,) = summarize(big, max_file_size=len(big) - 1).errors
    assert error[2].startswith("not analysed: the file is 6,000 bytes, over max-file-size (5,999 bytes)")
    (error,) = summarize(big, max_file_size=1024).errors
    assert error[2].startswith("not analysed: the file is 5.9 KB, over max-file-size (1 KB)")
    assert summarize(big, max_file_size=len(big)).errors == []
    assert summarize(big, max_file_size=0).errors == []  # 0: no limit


def test_positions_are_linear_in_the_number_of_findings():
    """1,000 ``.item()`` calls in one statement: each used to rank and sort the whole statement
    again (12 s); now within a small factor of libcst's own parse."""
    src = "import torch\n\ndef decode(y: torch.Tensor):\n    return " + " + ".join(["y.item()"] * 600) + "\n"
    start = time.perf_counter()
    libcst.parse_module(src)
    bare = time.perf_counter() - start
    start = time.perf_counter()
    summary = summarize(src)
    took = time.perf_counter() - start
    assert len(summary.data.candidates) == 600
    assert [c.col for c in summary.data.candidates[:3]] == [12, 23, 34]
    assert took < 3 * bare + 1.0, (took, bare)


def test_a_recursion_error_in_a_rule_is_the_budget_not_a_crash(monkeypatch):
    from graphlint.static.matchers import truth_test

    def deep(self, node, ctx):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(truth_test.TruthTest, "visit", deep)
    (error,) = summarize("import torch\n\ndef decode(x: torch.Tensor):\n    if x:\n        pass\n").errors
    assert error[2].startswith("not analysed: code nested too deeply to analyse (RecursionError)")


def test_budget_settings_are_part_of_the_cache_key():
    base = options(builtin_rules())
    keys = {replace(base, **kw).cache_key("r") for kw in ({}, {"max_depth": 10}, {"max_file_size": 10},
                                                           {"target_version": (3, 12)})}
    assert len(keys) == 4


def test_parse_without_validation_builds_the_same_tree_and_restores_it():
    """libcst's per-node validation is skipped only around the one parse of source CPython
    accepted (summarize.parse_cst): the tree is the one a validated parse builds, and validation
    is back afterwards, also when the parse fails."""
    import libcst as cst

    from graphlint.static.summarize import parse_cst

    source = "import torch\n\ndef decode(x, *, n=2):\n    if x.sum() > 0:\n        return x.item()  # c\n    return [y for y in x]\n"
    validated = cst.parse_module(source)
    fast = parse_cst(source, checked=True)
    assert fast.deep_equals(validated) and fast.code == source
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")  # validation is on again
    with pytest.raises(cst.ParserSyntaxError):
        parse_cst("def (:\n", checked=True)
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")


def test_plain_node_checks_give_the_same_answers(tmp_path):
    """A worker gives libcst's node classes plain type checks (summarize.plain_node_checks): every
    ``isinstance`` of every node of a tree against every libcst class, and every ``issubclass``
    between them, answers as before; done in a fresh interpreter, as a worker does it."""
    import subprocess
    import sys

    script = tmp_path / "check.py"
    script.write_text(
        "import libcst as cst\n"
        "from graphlint.static.summarize import plain_node_checks, _PlainChecks\n"
        "from graphlint.static.cstwalk import preorder\n"
        "tree = cst.parse_module('import torch\\n@d\\nclass A(B):\\n    def f(self, x, *a, k=1):\\n'\n"
        "                        '        if x.sum() > 0 or not k:\\n            return [y async for y in x][1:2]\\n'\n"
        "                        '        with g(): del x; lambda z: z ** 2\\n')\n"
        "classes = [getattr(cst, n) for n in dir(cst) if isinstance(getattr(cst, n), type)\n"
        "           and issubclass(getattr(cst, n), cst.CSTNode)]\n"
        "nodes = list(preorder(tree))\n"
        "def table():\n"
        "    return ([isinstance(n, c) for n in nodes for c in classes],\n"
        "            [issubclass(a, b) for a in classes for b in classes], isinstance(1, cst.Name))\n"
        "before = table()\n"
        "plain_node_checks()\n"
        "assert type(cst.Name) is _PlainChecks and type(cst.BaseExpression) is _PlainChecks\n"
        "assert table() == before and len(nodes) > 50 and len(classes) > 100\n"
        "print('ok')\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr


def test_plain_node_inits_build_the_same_nodes(tmp_path):
    """A worker gives libcst's node classes plainer constructors (summarize.plain_node_inits): a
    parse builds the same tree as before, a node built with its defaults (and default factories)
    equals one built before, and validation still runs; done in a fresh interpreter, as a worker
    does it."""
    import subprocess
    import sys

    script = tmp_path / "check.py"
    script.write_text(
        "import libcst as cst\n"
        "from graphlint.static.summarize import parse_cst, plain_node_inits\n"
        "source = ('import torch\\n@d\\nclass A(B):\\n    def f(self, x, *a, k=1, **kw) -> int:\\n'\n"
        "          '        if x.sum() > 0 or not k:\\n            return [y async for y in x][1:2]\\n'\n"
        "          '        with g() as (p, q): del x; lambda z: z ** 2\\n'\n"
        "          '        try:\\n            yield from {**kw, 1: 2}\\n        except (E, F) as e:\\n            raise\\n'\n"
        "          '        finally:\\n            global G; x: int = f\"{a!r:>{k}}\"; x @= -~a[..., None]\\n')\n"
        "before = [cst.parse_module(source), parse_cst(source, checked=True)]\n"
        "built = lambda: [cst.Comma(), cst.Name('x'), cst.Call(cst.Name('f')), cst.Param(cst.Name('p'))]\n"
        "made = built()\n"
        "own = cst.Name.__init__\n"
        "plain_node_inits()\n"
        "assert cst.Name.__init__ is not own and cst.Name.__init__.__code__.co_filename == '<string>'\n"
        "after = [cst.parse_module(source), parse_cst(source, checked=True)]\n"
        "assert all(a.deep_equals(b) and b.code == source for a, b in zip(before, after))\n"
        "assert all(a.deep_equals(b) for a, b in zip(made, built()))\n"
        "try:\n"
        "    cst.Name('not a name')\n"
        "except cst.CSTValidationError:\n"
        "    print('ok')\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr
