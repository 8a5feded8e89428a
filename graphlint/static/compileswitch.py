"""A compile switched off by an option's default: the default path runs the step eagerly.

``torch.compile(self.step, mode="reduce-overhead", disable=not cfg.use_graphs)`` captures nothing
unless the user turns ``use_graphs`` on; nor does ``if self.cfg.compile_step: self.step =
torch.compile(...)``. Read as a CUDA-graph step, the loop around it becomes a host step and its
per-token reads the step's one read by design, while by default they are the syncs of an eager
loop. :attr:`.facts.RegionDecl.opt_in` names such a switch; this module says which switches are
off by default, where the analysis can read the default:

- per file (:func:`disabled_by`): ``disable=`` given a literal true value, ``not p`` / ``p`` of a
  parameter of the compiling function with an off / on literal default (the parameter form counts,
  as the ``if use_compile:`` form does, only where that function runs the step loop itself:
  :meth:`.entries.Discovery.optional_graph`);
- when linking (:func:`field_off`): ``not cfg.flag`` / ``if cfg.flag:`` of a configuration field,
  a :data:`FIELD` switch, off when a class declares the field with an off default and every value
  the analysed code stores into a field of that name (a constructor's keyword, ``obj.flag = v``) is
  off too (:attr:`.facts.ModuleInfo.field_stores`); a store of anything else (a parameter, a computed
  value) keeps the compile a capture: prefer missing to a false error. A class built from a
  configuration file (``Args(**loaded)``, ``setattr(cfg, key, v)``) is the user's choice, not the
  default. ``if cfg.flag:`` counts for fields named like a compile switch (``*compile*``).

A compile made by a method that nothing on the default path calls (:func:`method_switch`: ``def
compile(self): self._decode = torch.compile(self._decode, mode="reduce-overhead")``, called by the
user, or by a script only under ``--benchmark``) is opt-in too: a :data:`METHOD` switch, the
method's own name, an API default as a field's is.

A field's default is an API default every caller gets (:func:`api_default`), so it counts wherever
the compile is made (an engine's ``__init__``). A CUDA-graph compile so switched is an optional
graph root (its loop's stop test is a sync, what only it captures is reported); a plain compile so
switched is no compiled root (:meth:`.entries.Discovery.graph_regions`): what an eager loop reaches
through it runs eagerly, its allocations are reported.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import keyword
from graphlint.static.optin import measured
from graphlint.static.valueatoms import literal

#: the prefix of a switch that is a configuration field, decided when linking (:func:`field_off`)
FIELD = "field:"
#: the prefix of a switch that is a method the user calls to compile (:func:`method_switch`)
METHOD = "method:"
#: the end of a :data:`FIELD` switch read with an off default at the read (``cfg.get("compile", False)``)
READ_OFF = "|off"
#: the switch of ``disable=True``: never compiled
ALWAYS = "disable=True"
_OFF = (None, False, 0, "")


def disabled_by(call: cst.Call, defaults: dict) -> str:
    """The switch that leaves ``torch.compile(..., disable=...)`` disabled by default, or ""."""
    value = keyword(call, "disable")
    if value is None:
        return ""
    negated = type(value) is cst.UnaryOperation and type(value.operator) is cst.Not
    inner = value.expression if negated else value
    const = literal(inner)
    if const is not None:
        return ALWAYS if (const[1] in _OFF) == negated else ""
    if type(inner) is cst.Name and inner.value in defaults:
        default = defaults[inner.value]
        if default is None or default[0] != "c":
            return ""
        return inner.value if (default[1] in _OFF) == negated else ""
    if type(inner) is cst.Attribute and negated:
        return FIELD + inner.attr.value
    return ""


def field_switch(test: cst.BaseExpression) -> str:
    """``if cfg.compile_step:`` / ``if self.args.use_compile:``: the field it reads, as a switch;
    ``if self.config.get("compile", False):`` reads a configuration key with an off default of its
    own (:data:`READ_OFF`): what the key holds when no configuration sets it."""
    if type(test) is cst.Attribute and not (type(test.value) is cst.Name and test.value.value == "self"):
        return FIELD + test.attr.value
    key = _read_off(test)
    return FIELD + key + READ_OFF if key else ""


def _environ(node: cst.BaseExpression) -> bool:
    return (type(node) is cst.Attribute and node.attr.value == "environ") or (type(node) is cst.Name
                                                                             and node.value == "environ")


def _read_off(test: cst.BaseExpression) -> str:
    """The key of ``obj.get("key")`` / ``obj.get("key", <off literal>)``, or ""."""
    if not (type(test) is cst.Call and type(test.func) is cst.Attribute and test.func.attr.value == "get"
            and 1 <= len(test.args) <= 2 and all(a.keyword is None and not a.star for a in test.args)) \
            or _environ(test.func.value):  # an environment variable: the operator's per-run choice
        return ""
    key = literal(test.args[0].value)
    if key is None or type(key[1]) is not str or not key[1].isidentifier():
        return ""
    default = literal(test.args[1].value) if len(test.args) == 2 else (None, None)
    return key[1] if default is not None and default[1] in _OFF else ""


def field_off(switch: str, stored) -> bool:
    """Whether a :data:`FIELD` switch is off by default (``stored``: a field's name -> every value the
    analysed code stores into a field of that name, :attr:`.facts.ModuleInfo.field_stores`):
    a class declares the field with an off default, and every other value the analysed code stores
    into a field of that name is an off literal. What configuration files and command lines set
    (a class built from ``**kwargs``, ``setattr`` with a computed name) is the user's choice, not the
    default; a store of anything else (a parameter, a computed value) leaves it unknown. Other
    switches were decided per file."""
    if not switch.startswith(FIELD):
        return bool(switch)
    name = switch[len(FIELD):]
    stores = stored(name.removesuffix(READ_OFF))
    if not name.endswith(READ_OFF) and not any(v is not None and v[0] == "k" for v in stores):
        return False
    return all(v is not None and ((v[0] == "k" and v[2] in _OFF) or (v[0] == "c" and v[1] in _OFF))
               for v in stores)


def method_switch(infos, graph, calls, compiler: tuple[str, str], step: tuple[str, str]) -> str:
    """A :data:`METHOD` switch when the function that compiles (``compiler``) is a method or function
    of its own that no call in the analysed code runs, save under a measurement switch (``if
    args.benchmark: model.compile()``, :func:`.optin.measured`), and that does not run the compiled
    ``step`` itself (a ``generate`` that compiles, then loops, is the decode path). A call of its
    name the call graph cannot resolve may be it (the compile is then taken as made), unless it is
    a library's (``torch.compile``, ``re.compile``). Module code, constructors and other dunders
    run whenever the engine is built or imported."""
    qual = compiler[1]
    name = qual.rpartition(".")[2]
    if name.startswith("__") or name.startswith("<") or graph is None or step in _runs(calls, compiler):
        return ""
    for info in infos:
        for caller, fn in info.functions.items():
            for site in fn.calls:
                expr = site.expr
                called = expr[2] if expr[0] == "a" else expr[1] if expr[0] == "n" else None
                if called != name or measured(site.cond):
                    continue
                targets = graph.targets(info.path, caller, site)
                if compiler in targets or not (targets or graph.external(info.path, caller, expr)):
                    return ""
    return METHOD + qual


def _runs(calls, root) -> set:
    """What ``root`` calls at any depth (not what it only hands over: the callable it compiles)."""
    seen, todo = {root}, [root]
    while todo:
        for callee, site in calls.get(todo.pop(), ()):
            if not site.reference and callee not in seen:
                seen.add(callee)
                todo.append(callee)
    return seen


def eager_default(switch: str, stored) -> bool:
    """Whether a compile under ``switch`` is simply not made by default: ``disable=True``, or a
    configuration field off by default (:func:`field_off`). Decided before the points-to solve (a
    :data:`METHOD` switch needs the call graph), so the compiled callable is no replay anywhere and
    what calls it runs eagerly -- the default configuration captures nothing through it; a loop
    around it is an eager loop, not a host step (README: "judged as the default configuration
    runs it")."""
    return (switch == ALWAYS or switch.startswith(FIELD)) and field_off(switch, stored)


def api_default(switch: str) -> bool:
    """A switch every caller of the step loop gets unless it asks: a field's default, a method to
    call, or none at all."""
    return switch.startswith(FIELD) or switch.startswith(METHOD) or switch == ALWAYS


def shown(switch: str) -> str:
    """The switch as a message names it: a field by its name, a method as a call."""
    if switch.startswith(METHOD):
        return switch[len(METHOD):] + "()"
    return switch[len(FIELD):].removesuffix(READ_OFF) if switch.startswith(FIELD) else switch
