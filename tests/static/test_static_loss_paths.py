"""A forward whose every path computes a loss is training code, a local bound to
``torch.nn.functional``'s losses included (:func:`graphlint.static.losscode.every_path_loss`); a
decode loop whose model call resolves to such a forward alone keeps its own evidence
(:meth:`graphlint.static.tokenloops.TokenLoops.unresolved_model`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst

from graphlint.static.losscode import always_run, every_path_loss
from static_helpers import assert_marked, check_fixture

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "losspaths"
IMPORTS = {"F": "torch.nn.functional"}


def test_a_loss_on_every_path_is_training_code(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "wrapper.py")
    assert_marked(result, FIXTURES, "wrapper.py")


def _body(src: str) -> cst.BaseSuite:
    return cst.parse_module(textwrap.dedent(src)).body[0].body


def test_every_path_needs_an_else_and_no_early_return():
    assert every_path_loss(_body("""
        def f(x, t, a):
            fn = F.cross_entropy if a else F.nll_loss
            if a:
                return fn(x, t)
            else:
                return F.mse_loss(x, t)
    """), IMPORTS)
    assert not every_path_loss(_body("""
        def f(x, t=None):
            if t is not None:
                return F.cross_entropy(x, t)
            return x
    """), IMPORTS)
    assert not every_path_loss(_body("""
        def f(x, t, fn):
            return fn(x, t)
    """), IMPORTS)


def test_a_flag_that_leaves_ends_the_spine_a_computed_check_does_not():
    body = _body("""
        def f(batches, flag):
            for b in batches:
                loss = step(b)
                if loss.isnan().any():
                    continue
                backward(loss)
                if not flag:
                    continue
                update(loss)
    """)
    spelled = {cst.Module([]).code_for_node(stmt).strip() for stmt in always_run(body, loops=True)}
    assert spelled == {"loss = step(b)", "backward(loss)"}
