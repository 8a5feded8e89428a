"""Python ints that are constants of their graph: the same on every replay of the graph that froze them.

GL308/GL310 report a per-step Python position read in captured code: the capture bakes the value it had,
and every replay reuses it. That is a hazard only when two replays of the *same graph* want different
values. Two shapes make the int a constant of its graph instead:

* **one graph per value** -- the capturing function keys the graph it records by the int (``g =
  cache.get(pos)``, on a miss ``with torch.cuda.graph(g): self.forward(x, pos)`` then ``cache[pos] = g``
  or ``self._put(cache, (pos, k), g)``): the graph replayed is looked up with the value it was made for;
* **bound inside the capture** -- the counter of a fixed loop the captured function runs (``for i in
  range(num_steps): x = self.step(x, i)``): the capture unrolls the loop, each copy at its own constant,
  and every replay runs the same copies.

Positions travel as parameters (``step(x, i)`` -> ``table[i : i + 1]``), so the walk records which
parameters of its function each position comes from (``FunctionFacts.position_roots``, :func:`sources`),
flags a position finding with them (:data:`FLAG`), and records at each call site which argument slots
pass positions made only of parameters and fixed counters (``CallSite.consts``, :func:`arg_sources`);
at a capture site, parameters that key the graph (:func:`graph_keys`) count as constants. The linker
(:class:`GraphConsts`) decides which parameters of captured functions are constants on every call that
the graph context makes, and a finding whose every position source is one is no captured finding:
it keeps only its other contexts (an eager read of a position is a warning; no context, no finding).
A position from a field (``self.pos``), a parameter of the capturing function that keys nothing (one
graph replayed for every position, gpt-fast's ``input_pos``), or a capture entered from where this does
not look (a compiled region, an open root) stays a hazard.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import preorder
from graphlint.static.flowir import last_name
from graphlint.static.hostparams import passed_params
from graphlint.static.oncebound import counts, sole_assignments

FLAG = "pos-roots:"
COUNTER = "#"  # a source that is a fixed loop's counter of the function itself (:mod:`.fixedcounters`)
UNROLLED = "="  # the same, of a loop begun inside a capture region: unrolled there whoever calls the function
_GRAPH_CTORS = ("CUDAGraph",)


# -- the walk ---------------------------------------------------------------------------------
def sources(oracle, node: cst.CSTNode) -> frozenset | None:
    """The parameters (and ``#counter`` names) the positions ``node`` reads come from; None where one
    comes from anything else (a field another object advances, a call, a loop's own position)."""
    fn = oracle.fn
    found: set[str] = set()
    oracle._derives(node, fn.positions, False, found)
    if not found or (oracle.step_fields() and any(
            type(n) is cst.Attribute and oracle.field_kind(n) == "step" for n in preorder(node))):
        return None
    out: set[str] = set()
    for name in found:
        if name in fn.fixed_counters:
            out.add(_counter(fn, name))
        elif name in fn.position_roots:
            roots = fn.position_roots[name]
            if roots is None:
                return None
            out |= roots
        elif name in fn.params or _declared(fn, name):  # ``end_pos = int(end_pos)``: the walk forgot it a parameter
            out.add(name)
        else:
            return None
    return frozenset(out)


def _counter(fn, name: str) -> str:
    return (UNROLLED if fn.fixed_counters[name][1] else COUNTER) + name


def _declared(fn, name: str) -> bool:
    """``name`` is a parameter of the function's def."""
    params = getattr(fn.defn, "params", None)
    return params is not None and any(
        p.name.value == name for p in (*params.posonly_params, *params.params, *params.kwonly_params))


def note_roots(oracle, names, value: cst.BaseExpression | None, tainted: bool) -> None:
    """``kv_seq = cur_pos + 1``: the names keep the sources of the positions the value reads."""
    roots = oracle.fn.position_roots
    got = sources(oracle, value) if tainted and value is not None else None
    for name in names:
        if tainted:
            roots[name] = got
        else:
            roots.pop(name, None)


def widen_roots(oracle, name: str, value: cst.BaseExpression) -> None:
    """``end += n``: ``end`` keeps its sources and gains the value's."""
    fn = oracle.fn
    old = fn.position_roots.get(name, frozenset((name,)) if name in fn.params else None) \
        if name in fn.positions else frozenset()
    got = sources(oracle, value) if oracle.derives_from_position(value) else frozenset()
    fn.position_roots[name] = old | got if old is not None and got is not None else None


def unknown_root(fn, name: str) -> None:
    """A position bound from what :func:`sources` does not follow (a call's per-step result, a cache's length)."""
    fn.position_roots[name] = None


def flag(candidate, oracle, read: list[cst.CSTNode]) -> None:
    """Flag a position finding with the sources of every position it reads (:data:`FLAG`)."""
    found: set[str] = set()
    for node in read:
        if not oracle.derives_from_position(node):
            continue
        got = sources(oracle, node)
        if got is None:
            return
        found |= got
    if found:
        candidate.flags = candidate.flags | {FLAG + ",".join(sorted(found))}


def arg_sources(call: cst.Call, oracle, in_capture: bool) -> tuple:
    """((slot, sources), ...): the arguments passing ints made only of parameters the function never rebinds,
    positions of those and fixed counters (``f(x, cur_pos + 1, K)``); at a capture site, the sources that key
    the graph are dropped (:func:`graph_keys`)."""
    fn = oracle.fn
    if not call.args or not (fn.params or fn.fixed_counters):
        return ()
    keys = None
    out = []
    for i, arg in enumerate(call.args):
        if arg.star:
            break
        got = _int_sources(oracle, arg.value)
        if got is None:
            continue
        if in_capture:  # a literal handed to the capture is one value for every replay: not the graph's own
            if not got:
                continue
            if keys is None:
                keys = graph_keys(fn.defn) if fn.defn is not None else set()
            got = frozenset(s for s in got if s.lstrip(COUNTER + UNROLLED) not in keys)
        out.append((arg.keyword.value if arg.keyword is not None else i, got))
    return tuple(out)


def _int_sources(oracle, node: cst.BaseExpression) -> frozenset | None:
    """:func:`sources` of a position; of a parameter never rebound, itself; of literals and arithmetic on
    those, their union; None for anything else (a field, a call, a local of another kind)."""
    kind = type(node)
    fn = oracle.fn
    if fn.defn is None:
        return None  # a module's own code: no capture records it
    if kind is cst.Name:
        name = node.value
        if name in fn.fixed_counters and counts(fn)[name] == 1:  # ``for i in range(n)``, whatever its name
            return frozenset((_counter(fn, name),))
        if name in fn.positions:
            return sources(oracle, node)
        if name in fn.tensors or name in fn.modules:
            return None  # a tensor or a module handed on is no int of the graph's
        if name not in fn.params:  # ``chunk = 2048``: a local bound once to a literal
            values = sole_assignments(fn, name)
            return frozenset() if len(values) == 1 and type(values[0]) is cst.Integer else None
        return frozenset((name,)) if counts(fn)[name] == 1 else None
    if kind is cst.Integer:
        return frozenset()
    if kind is cst.BinaryOperation:
        parts = [_int_sources(oracle, node.left), _int_sources(oracle, node.right)]
    elif kind is cst.Call and type(node.func) is cst.Name and node.func.value in _INT_BUILTINS and node.args \
            and node.func.value not in fn.params and not any(a.star or a.keyword for a in node.args):
        parts = [_int_sources(oracle, a.value) for a in node.args]  # ``min(ps + chunk, pos_end)``, ``int(k)``
    else:
        return None
    if any(p is None for p in parts) or not any(parts):
        return None
    return frozenset().union(*parts)


_INT_BUILTINS = frozenset(("min", "max", "int", "abs"))


def join_sources(old: tuple, new: tuple) -> tuple:
    """Two calls of one site's spelling: a slot both pass known sources, their union."""
    new_map = dict(new)
    return tuple((slot, got | new_map[slot]) for slot, got in old if slot in new_map)


def graph_keys(defn: cst.FunctionDef) -> set[str]:
    """The names the function keys the graphs it captures by: ``cache[key] = g`` or a call handing ``g``
    with ``key`` (``self._put(self._graphs, (pos, k), g)``, ``graphs.setdefault(pos, g)``), where ``g``
    is a graph the function builds (``torch.cuda.CUDAGraph()``) or records into (``torch.cuda.graph(g)``);
    a local key (``key = (pos, k)``) stands for the names it is bound from."""
    graphs: set[str] = set()
    bound: dict[str, list[cst.BaseExpression]] = {}
    for node in preorder(defn.body):
        if type(node) is cst.Assign:
            for t in node.targets:
                if type(t.target) is cst.Name:
                    bound.setdefault(t.target.value, []).append(node.value)
                    if type(node.value) is cst.Call and last_name_of(node.value.func) in _GRAPH_CTORS:
                        graphs.add(t.target.value)
        elif type(node) is cst.Call and _capture_ctx(node) and node.args and type(node.args[0].value) is cst.Name:
            graphs.add(node.args[0].value.value)  # ``with torch.cuda.graph(g):``
    if not graphs:
        return set()
    keys: list[cst.BaseExpression] = []
    for node in preorder(defn.body):
        if type(node) is cst.Assign and _holds(node.value, graphs):  # ``cache[key] = g`` / ``= (g, out)``
            keys.extend(el.slice.value for t in node.targets if type(t.target) is cst.Subscript
                        for el in t.target.slice if type(el.slice) is cst.Index)
        elif type(node) is cst.Call and any(type(a.value) is cst.Name and a.value.value in graphs for a in node.args):
            keys.extend(a.value for a in node.args if type(a.value) in (cst.Name, cst.Tuple)
                        and not (type(a.value) is cst.Name and a.value.value in graphs))
    out: set[str] = set()
    for key in keys:
        for n in preorder(key):
            if type(n) is cst.Name:
                out.add(n.value)
                for value in bound.get(n.value, ()):  # ``key = (cur_pos, K)``
                    out.update(m.value for m in preorder(value) if type(m) is cst.Name)
    return out


def _holds(value: cst.BaseExpression, graphs: set[str]) -> bool:
    if type(value) is cst.Tuple:
        return any(_holds(el.value, graphs) for el in value.elements)
    return type(value) is cst.Name and value.value in graphs


def last_name_of(func: cst.BaseExpression) -> str:
    return func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else ""


def _capture_ctx(call: cst.Call) -> bool:
    """``torch.cuda.graph(g, ...)`` however it is imported (the walk's imports are not at hand here)."""
    func = call.func
    return type(func) is cst.Attribute and func.attr.value == "graph" and type(func.value) is cst.Attribute \
        and func.value.attr.value == "cuda"


# -- the link ---------------------------------------------------------------------------------
class GraphConsts:
    """Which parameters of captured functions are constants of their graph on every call the graph
    context makes (see the module's docstring)."""

    def __init__(self, infos, raw: dict, graph: dict):
        self.graph = graph  # the graph context's chains: the captured functions
        self.infos = {info.path: info for info in infos}
        self.callers: dict[tuple[str, str], list] = {}
        for caller, edges in raw.items():
            for callee, site in edges:
                if callee in graph and (site.in_capture or caller in graph) and not site.reference:
                    self.callers.setdefault(callee, []).append((caller, site))
        self.memo: dict[tuple, bool] = {}

    def constant(self, path: str, cand) -> bool:
        """A captured finding whose every position comes from constants of the graph."""
        fid = (path, cand.function)
        if fid not in self.graph or cand.in_capture:
            return False
        found = next((f[len(FLAG):] for f in cand.flags if f.startswith(FLAG)), None)
        if found is None:
            return False
        return all(s[0] in (COUNTER, UNROLLED) or self.param(fid, s) for s in found.split(","))

    def param(self, fid: tuple[str, str], name: str) -> bool:
        key = (fid, name)
        if key not in self.memo:
            self.memo[key] = False  # a cycle proves nothing
            self.memo[key] = self._param(fid, name)
        return self.memo[key]

    def _param(self, fid: tuple[str, str], name: str) -> bool:
        sites = self.callers.get(fid)
        params = passed_params(self.infos, fid)
        if not sites or params is None:
            return False  # an open root: called from where this does not look
        short = fid[1].rpartition(".")[2]
        for caller, site in sites:
            if last_name(site.expr) != short and short not in ("forward", "__call__"):
                return False  # a partial, a stored bound method: its arguments may sit elsewhere
            got = _passed(site, params, name)
            if got is None:
                return False
            captured = caller in self.graph
            for s in got:
                if s.startswith(UNROLLED):
                    continue  # a loop the capture region itself unrolls
                if s.startswith(COUNTER):
                    if not captured:
                        return False  # a host loop's counter: each capture freezes the last one
                elif not captured or not self.param(caller, s):
                    return False
        return True


def _passed(site, params: tuple[list[str], tuple[str, ...]], name: str) -> frozenset | None:
    """The sources the site passes parameter ``name`` (positional or keyword); None where unknown."""
    for slot, got in site.consts:
        if slot == name or (type(slot) is int and slot < len(params[0]) and params[0][slot] == name):
            return got
    return None
