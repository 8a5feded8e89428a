"""A worker reads literals without ``literal_eval`` where the text is the value
(:mod:`graphlint.static.literals`): the same values as libcst's own ``evaluated_value``."""

import ast
import subprocess
import sys
from pathlib import Path

import libcst as cst

from graphlint.static.cstwalk import preorder
from graphlint.static.literals import integer_value, number_value, string_value

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "literals"
READERS = {cst.Integer: integer_value, cst.SimpleString: string_value, cst.Float: number_value,
           cst.Imaginary: number_value}


def _literals(paths):
    for path in paths:
        module = cst.parse_module(path.read_bytes())
        for node in preorder(module):
            if type(node) in READERS:
                yield node


def test_every_literal_reads_as_literal_eval():
    """The fixture's edge cases (triple quotes, quotes inside, prefixes, escapes, ``\\r\\n`` in a
    string, underscores and bases) and every literal of a few of graphlint's own sources."""
    paths = sorted(FIXTURES.glob("*.py")) + [ROOT / "graphlint" / "static" / name for name in
                                             ("budget.py", "chunkparse.py", "summarize.py", "tensors.py")]
    seen = 0
    for node in _literals(paths):
        value, expected = READERS[type(node)](node.value), ast.literal_eval(node.value)
        assert value == expected and type(value) is type(expected), node.value
        seen += 1
    assert seen > 200


def test_a_crlf_string_keeps_literal_eval():
    """CPython reads ``\\r\\n`` inside a string as ``\\n``: the text between the quotes is not the value."""
    text = '"""one\r\ntwo"""'
    assert string_value(text) == "one\ntwo" == ast.literal_eval(text)


def test_the_worker_installs_them():
    code = ("import libcst as cst\n"
            "from graphlint.static.literals import plain_literals\n"
            "plain_literals()\n"
            "m = cst.parse_module('x = (7, \"cpu\", 1.5, 2j, b\"b\")\\n')\n"
            "t = m.body[0].body[0].value\n"
            "print([e.value.evaluated_value for e in t.elements])\n"
            "print(type(cst.Integer).__dict__ is not None, cst.Integer.evaluated_value.fget.__module__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT)}).stdout.splitlines()
    assert out == ["[7, 'cpu', 1.5, 2j, b'b']", "True graphlint.static.literals"]


def test_each_value_is_a_new_object_as_literal_evals_are():
    """No memo: a shared value would change what a summary pickles (its digest) and holds."""
    text = "'a b'"
    assert ast.literal_eval(text) is not ast.literal_eval(text)
    assert string_value(text) is not string_value(text)
