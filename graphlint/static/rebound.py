"""Fields a class's methods other than ``__init__`` rebind: not the same on every call
(:mod:`.steadyargs`). One walk per class, asked lazily; a file that spells no ``setattr`` needs
only its statements walked (about three quarters of torch's source)."""
from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import constant_name, name_children

#: the nodes a statement nested in a method sits in (suites, compound statements and their clauses):
#: without a ``setattr`` in the file, only assignments bind a field, and none sits in an expression
STATEMENT_NODES = frozenset((cst.IndentedBlock, cst.SimpleStatementSuite, cst.SimpleStatementLine, cst.If, cst.Else,
                             cst.For, cst.While, cst.With, cst.Try, cst.TryStar, cst.ExceptHandler,
                             cst.ExceptStarHandler, cst.Finally, cst.Match, cst.MatchCase, cst.FunctionDef))
ASSIGNS = (cst.Assign, cst.AugAssign, cst.AnnAssign)


def rebound_fields(stmt: cst.ClassDef, calls: bool = True) -> set[str]:
    """``self.x`` bound (``=``, ``+=``, ``setattr``: every field) in a method other than ``__init__``, and
    class-level defaults (``step_pos = 0``: instances get theirs from outside) but upper-case constants.
    ``calls`` False: the file calls no ``setattr``, so expressions are not searched."""
    out: set[str] = set()
    for line in stmt.body.body:
        if type(line) is cst.SimpleStatementLine:  # ``step_pos = 0``: a default code outside the class sets
            for small in line.body:
                targets = [t.target for t in small.targets] if type(small) is cst.Assign else \
                    [small.target] if type(small) is cst.AnnAssign else []
                out.update(t.value for t in targets if type(t) is cst.Name and not constant_name(t))
        if type(line) is not cst.FunctionDef or line.name.value in ("__init__", "__post_init__"):
            continue
        stack: list[cst.CSTNode] = [line.body]
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind in ASSIGNS:
                targets = [t.target for t in node.targets] if kind is cst.Assign else [node.target]
                for target in targets:
                    for part in ([el.value for el in target.elements] if type(target) in (cst.Tuple, cst.List) else [target]):
                        if type(part) is cst.Attribute and type(part.value) is cst.Name \
                                and part.value.value == "self":
                            out.add(part.attr.value)
            elif kind is cst.Call and type(node.func) is cst.Name and node.func.value == "setattr":
                out.add("*")
            elif kind is cst.ClassDef:
                continue
            if calls or kind in STATEMENT_NODES:
                stack.extend(name_children(node))
    return out
