"""Names a loop grows with ``torch.cat``: tensors from the loop's head on.

``ids = tok(prompt).input_ids.to(dev)`` before a generate loop is nothing the oracle knows (a
tokenizer's output), so ``model(ids[:, [i]])`` at the top of the loop was no tensor's subscript.
The loop's body answers the question: ``ids = torch.cat([ids, nxt[:, None]], dim=1)`` hands ``ids``
to a concatenation, which takes tensors alone (a list or an array there raises), and binds it to the
concatenation's result -- so whatever ``ids`` holds when an iteration starts, first or later, is a
tensor. Only a name still unknown at the loop's head takes the fact (a host list, a number, a CPU
tensor known as one keeps what the oracle knows); the concatenation (:data:`.hostconcat.CONCATS`: the joins
that take a sequence of tensors alone, on one device) must name it among its tensors, and a nested function's
binding is its own.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.hostconcat import CONCATS
from graphlint.static.names import resolve

SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def grown_names(loop: cst.For | cst.While, imports: dict[str, str]) -> set[str]:
    """``x`` of ``x = torch.cat([x, ...])`` anywhere in ``loop``'s body (not in a nested scope)."""
    out: set[str] = set()
    stack: list[cst.CSTNode] = [loop.body]
    while stack:
        node = stack.pop()
        if isinstance(node, SCOPES):
            continue
        if type(node) is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name:
            name = node.targets[0].target.value
            if name in _concatenated(node.value, imports):
                out.add(name)
        if isinstance(node, (cst.BaseSuite, cst.BaseCompoundStatement, cst.SimpleStatementLine, cst.Else,
                             cst.ExceptHandler, cst.Finally)):
            stack.extend(node.children)
    return out


def _concatenated(value: cst.BaseExpression, imports: dict[str, str]) -> set[str]:
    """The plain names among a concatenation call's tensors (its first argument's display)."""
    if type(value) is not cst.Call or resolve(value.func, imports) not in CONCATS or not value.args:
        return set()
    first = value.args[0]
    if first.keyword is not None or type(first.value) not in (cst.List, cst.Tuple):
        return set()
    return {el.value.value for el in first.value.elements if type(el) is cst.Element and type(el.value) is cst.Name}


def note_grown(loop: cst.For | cst.While, oracle) -> None:
    """At a loop's head: each name the loop grows that the oracle knows nothing of is a tensor."""
    facts = oracle.fn
    known = (facts.tensors | facts.hosts | facts.lists | facts.cpu | facts.numbers | facts.ints
             | facts.modules | facts.readbacks | facts.row_lists)
    for name in grown_names(loop, oracle.imports) - known:
        facts.tensors.add(name)
