"""A large module is parsed in pieces (graphlint.static.chunkparse): the tree, and so the summary,
must be exactly the one a whole parse gives, or the module is parsed whole."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import libcst as cst
import pytest

from graphlint.static import chunkparse
from graphlint.static.chunkparse import cut_points, parse_in_pieces
from static_helpers import builtin_rules, options

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "chunkparse"


@pytest.fixture
def cut_everywhere(monkeypatch):
    """Every file is large enough, and every allowed cut is made."""
    monkeypatch.setattr(chunkparse, "MIN_CHUNKED", 0)
    monkeypatch.setattr(chunkparse, "PIECE", 0)


def pieced(text: str):
    return parse_in_pieces(text, ast.parse(text), cst.parse_module)


@pytest.mark.parametrize("name", ["layout.py", "indents.py"])
def test_pieces_stitch_into_the_whole_tree(cut_everywhere, name):
    text = (FIXTURES / name).read_text()
    module = pieced(text)
    if name == "layout.py":
        assert module is not None and len(cut_points(text, ast.parse(text))) >= 5
    if module is not None:
        assert module.deep_equals(cst.parse_module(text)) and module.code == text


def test_blocks_of_different_indentation_parse_whole(cut_everywhere):
    """Each piece detects its own indentation: a tab-indented block after a two-space one would
    give the piece a default indentation the module does not have."""
    assert pieced((FIXTURES / "indents.py").read_text()) is None


def test_no_cut_where_the_lines_between_may_belong_to_a_block(cut_everywhere, monkeypatch):
    """An indented comment, or a line of blanks, after a block belongs to the block in libcst's
    tree: a cut there would hand it to the next statement instead (so the rule is needed)."""
    text = (FIXTURES / "layout.py").read_text()
    whole = cst.parse_module(text)
    monkeypatch.setattr(chunkparse, "_free", lambda *args: True)
    careless = pieced(text)
    assert careless is not None and not careless.deep_equals(whole)


def test_small_modules_and_carriage_returns_parse_whole():
    text = (FIXTURES / "layout.py").read_text()
    assert len(text) < chunkparse.MIN_CHUNKED and pieced(text) is None
    assert cut_points("x = 1\r\ny = 2\r\n", ast.parse("x = 1\r\ny = 2\r\n")) == []


def test_the_summary_is_the_same(cut_everywhere, monkeypatch):
    from graphlint.static.summarize import summarize_file

    path = FIXTURES / "layout.py"
    rules = builtin_rules()
    summaries = [summarize_file(str(path), path.read_bytes(), rules, options(rules))]
    monkeypatch.setattr(chunkparse, "MIN_CHUNKED", 1 << 30)
    summaries.append(summarize_file(str(path), path.read_bytes(), rules, options(rules)))
    assert summaries[0].data is not None and not summaries[0].errors
    assert pickle.dumps(summaries[0]) == pickle.dumps(summaries[1])
