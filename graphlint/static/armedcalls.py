"""A flag of another object that the method a branch calls sets first: ``if not self.comp.ready:
self.comp.build()`` where ``build`` begins ``self.ready = True``.

:mod:`.runonce` decides ``if not self._ready: self._build()`` when the class ends, from what its own
methods assign. Here the flag belongs to a field or a handed object, whose class the walker does
not know; it tags the branch ("armedby:ready@build": its calls' ``once`` and its reports' ``once:``
flag) and the linker decides with every file's methods (:attr:`.facts.ModuleInfo.armed_first`): the
branch runs once per object when every analysed method of that name sets ``self.ready = True`` before
anything in its body could return -- the first call arms the guard, every later step skips it. A
method that sets another flag, sets it under a condition or after a ``return`` leaves the branch per
step, and so does a method no analysed file defines (an extension's). Not covered, as for ``self``'s
flags: a step that clears the flag again.

The same for a predicate an object answers for a key (an extension's graph slots, whose methods have
no Python body): ``if self.bc.needs_configure(b, s): self._configure(b, s)`` where ``_configure``
(a method of the class, or the branch itself) ends ``self.bc.configure_slot(b, s, ...)``. The branch
asks the object whether it still needs <verb> and hands it what <verb> takes -- the object answers
no from then on: once per key (tag "asks:self.bc.configure@_configure", decided when the class ends,
:func:`answered`). A branch that configures another object, or does another verb than the predicate
asks, stays per step.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.classtests import conjuncts
from graphlint.static.cstwalk import preorder, returns_value
from graphlint.static.names import dotted_name

ARMED_BY = "armedby:"
ASKS = "asks:"
NEEDS = "needs_"


def armed_call(stmt: cst.If) -> str | None:
    """"armedby:<flag>@<m1+m2>" for ``if not R.flag:`` (or one conjunct of an ``and``), ``R`` a
    field or a name other than ``self`` / ``cls``, whose body calls ``R.m1(...)``, ``R.m2(...)``.
    Not a branch that returns a value (``if g.needs_capture(n): return g.capture(step, x)``): it
    computes that call's result, the step itself on the first call -- and a capture's evidence."""
    if returns_value(stmt.body):
        return None
    for part in conjuncts(stmt.test):
        asked = _asks(part, stmt.body)
        if asked is not None:
            return asked
        if type(part) is not cst.UnaryOperation or type(part.operator) is not cst.Not \
                or type(part.expression) is not cst.Attribute:
            continue
        owner = part.expression.value
        if type(owner) is cst.Name and owner.value in ("self", "cls") or type(owner) not in (cst.Name, cst.Attribute):
            continue
        methods = sorted({n.func.attr.value for n in preorder(stmt.body) if type(n) is cst.Call
                          and type(n.func) is cst.Attribute and n.func.value.deep_equals(owner)})
        if methods:
            return f"{ARMED_BY}{part.expression.attr.value}@{'+'.join(methods)}"
    return None


def arms_first(defn: cst.FunctionDef) -> set[str]:
    """The flags a method sets ``True`` on ``self`` among its top-level statements before any of them
    holds a ``return`` (or another jump, or a ``yield``)."""
    armed: set[str] = set()
    for line in defn.body.body if type(defn.body) is cst.IndentedBlock else ():
        if any(type(n) in (cst.Return, cst.Yield, cst.Break, cst.Continue) for n in preorder(line)):
            break
        if type(line) is not cst.SimpleStatementLine:
            continue
        for small in line.body:
            if type(small) is cst.Assign and type(small.value) is cst.Name and small.value.value == "True":
                armed.update(t.target.attr.value for t in small.targets if type(t.target) is cst.Attribute
                             and type(t.target.value) is cst.Name and t.target.value.value == "self")
    return armed


def settled_armed(infos: list) -> frozenset[str]:
    """The "armedby:" tags of the analysed files that some method they name arms: every analysed
    method of that name (one at least) sets the flag first."""
    tags = {c.once for info in infos for fn in info.functions.values() for c in fn.calls if c.once.startswith(ARMED_BY)}
    tags |= {f[5:] for info in infos for cand in info.candidates for f in cand.flags if f.startswith("once:" + ARMED_BY)}
    if not tags:
        return frozenset()
    arming: dict[str, list[set[str]]] = {}
    for info in infos:
        for method, flags in info.armed_first.items():
            arming.setdefault(method, []).extend(flags)
    out = set()
    for tag in tags:
        flag, _, methods = tag[len(ARMED_BY):].partition("@")
        if any(arming.get(m) and all(flag in flags for flags in arming[m]) for m in methods.split("+")):
            out.add(tag)
    return frozenset(out)


def _asks(test: cst.BaseExpression, body: cst.BaseSuite) -> str | None:
    """"asks:R.verb@m1+m2" for ``R.needs_verb(...)`` whose branch calls ``R.verb...(...)`` itself
    (no methods: settled) or calls ``self.m1(...)``, ``self.m2(...)`` (decided when the class ends)."""
    if type(test) is not cst.Call or type(test.func) is not cst.Attribute or not test.func.attr.value.startswith(NEEDS):
        return None
    owner = dotted_name(test.func.value)
    verb = test.func.attr.value[len(NEEDS):]
    if not owner or owner in ("self", "cls") or not verb:
        return None
    if _does(body, owner, verb):
        return f"{ASKS}{owner}.{verb}@"
    methods = sorted({n.func.attr.value for n in preorder(body) if type(n) is cst.Call and type(n.func) is cst.Attribute
                      and type(n.func.value) is cst.Name and n.func.value.value == "self"})
    return f"{ASKS}{owner}.{verb}@{'+'.join(methods)}" if methods else None


def _does(node: cst.CSTNode, owner: str, verb: str) -> bool:
    """A call ``owner.<verb>...(...)`` in ``node``."""
    return any(type(n) is cst.Call and type(n.func) is cst.Attribute and n.func.attr.value.startswith(verb)
               and dotted_name(n.func.value) == owner for n in preorder(node))


def answered(raw: list, functions: dict, cls: str, classdef: cst.ClassDef) -> set[str]:
    """The "asks:" tags of ``cls``'s reports and calls whose branch does the verb itself or through a
    method of the class that does it to the object asked."""
    mine = {q for q, fn in functions.items() if fn.cls == cls}
    tags = {f[5:] for r in raw if r.function in mine for f in r.flags if f.startswith("once:" + ASKS)}
    tags |= {c.once for q in mine for c in functions[q].calls if c.once.startswith(ASKS)}
    if not tags:
        return set()
    defs = {s.name.value: s for s in classdef.body.body if type(s) is cst.FunctionDef}
    out = set()
    for tag in tags:
        asked, _, methods = tag[len(ASKS):].partition("@")
        owner, _, verb = asked.rpartition(".")
        if not methods or any(m in defs and _does(defs[m], owner, verb) for m in methods.split("+")):
            out.add(tag)
    return out
