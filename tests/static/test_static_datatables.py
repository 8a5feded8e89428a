"""Large tables of numbers are blanked before the libcst parse (graphlint.static.datatables): the
same lines and columns, the same findings, a fraction of the parse."""

from __future__ import annotations

import ast

import pytest

from graphlint.static import datatables
from graphlint.static.datatables import MIN_TABLE, blank_tables
from static_helpers import TOY_MODEL, analyze


def _matrix(rows: int, cols: int = 64) -> str:
    """A Hadamard-like table written out as a nested list, one row per line."""
    body = ",\n".join("        [" + ", ".join("+1" if (r * c) % 3 else "-1" for c in range(cols)) + "]"
                      for r in range(rows))
    return "[\n" + body + ",\n    ]"


ROWS = MIN_TABLE // 300 + 10  # comfortably over MIN_TABLE characters

MODULE = f"""\
import torch

NAMES = ["a", "b"]  # é: a non-ASCII line before the table


def table():
    return torch.tensor({_matrix(ROWS)}, dtype=torch.float16)


def small():
    return [1, 2, 3]


def mixed(x):
    return [x, {", ".join(["1"] * (MIN_TABLE // 2))}]
"""


def test_the_inside_of_a_large_number_table_is_blanked_and_nothing_moves():
    blanked = blank_tables(MODULE, ast.parse(MODULE))
    assert len(blanked) == len(MODULE)
    assert [i for i, c in enumerate(blanked) if c == "\n"] == [i for i, c in enumerate(MODULE) if c == "\n"]
    assert "+1" not in blanked and "-1" not in blanked.split("def small")[0]
    assert "return [1, 2, 3]" in blanked  # small: untouched
    assert blanked.split("def mixed")[1] == MODULE.split("def mixed")[1]  # a name inside: untouched
    tree = ast.parse(blanked)
    table = tree.body[2].body[0].value.args[0]
    assert isinstance(table, ast.List) and [ast.literal_eval(e) for e in table.elts] == [0]


@pytest.mark.parametrize("text", ["x = [1, 2]\n", "s = 'x' * 3\n" + "# " + "1, " * MIN_TABLE + "\n"])
def test_text_without_a_large_display_is_returned_as_it_is(text):
    assert blank_tables(text, ast.parse(text)) is text


def test_findings_around_a_table_are_the_ones_an_unblanked_parse_gives(monkeypatch):
    """A decode loop in a module that also holds a large table: every finding at the same place."""
    loop = TOY_MODEL + f"""

def weights():
    return torch.tensor({_matrix(ROWS)})


def generate(model: Model, x, n):
    for _ in range(n):
        out = model(x)
        w = torch.tensor({_matrix(ROWS)}, device="cuda")
        x = out.argmax(-1)
        if x.sum().item() == 0:
            break
    return x
"""
    files = {"run.py": loop}
    blanked = analyze(files)
    monkeypatch.setattr(datatables, "MIN_TABLE", 10**9)
    whole = analyze(files)
    assert [(f.path, f.line, f.col, f.rule, f.severity) for f in blanked] == \
        [(f.path, f.line, f.col, f.rule, f.severity) for f in whole]
    assert {f.rule for f in blanked if f.path == "run.py"} >= {"GL101"}
