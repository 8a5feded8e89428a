"""Reads of a parameter that every hot caller hands a host tensor: no device read.

A video model builds its grid of patch sizes from shapes, on the host (``grid = torch.stack(
[torch.tensor(u.shape[2:]) for u in x])``), and hands it down through its blocks to the rotary helper,
which walks ``grid.tolist()`` and slices by the sizes. Inside the helper the parameter is just a
tensor, so the walk reports the ``.tolist()`` as a read-back and every slice by its numbers as
data-dependent. What the callers pass is known only along the call graph the linker builds: the
blocks are called through a ``ModuleList`` that is also wrapped for sharding, the attention through
a field whose ``forward`` a parallel mode replaces -- calls the value rounds (:mod:`.valueflow`) cannot
count, but the points-to graph resolves.

So the walk marks a read-back whose every source is a parameter read directly (``p.tolist()``,
``p[0].item()``, ``int(p)``; and host numbers computed only from such reads, ``for f, h, w in
p.tolist(): n = f * h * w``) with the parameters it reads (flag ``host-param:p,...``, on the read-back
rules :data:`RULES`); the linker drops it when every hot call edge into the function passes each of
them a host tensor (:attr:`.facts.CallSite.kinds`: ``host``), or passes on a parameter of its own that
every hot call edge into the caller passes one, and so on. An entry point (called from outside), a
function no hot edge calls, an edge whose arguments are unknown, a parameter an edge leaves to its
default, an edge spelled with another name than the function's (a ``partial``, a stored bound method:
its arguments may not sit where the function's parameters do): unknown, and the report stays.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import children
from graphlint.static.flowir import last_name
from graphlint.static.readbacks import is_readback
from graphlint.static.truthkinds import FLAG as PY_FLAG, NONE, no_tensor

#: the rules whose hazard is the read-back itself, or a host value computed from one
RULES = frozenset(("GL101", "GL102", "GL311", "GL312", "GL313"))
FLAG = "host-param:"


# -- the walk ---------------------------------------------------------------------------------
def read_params(node: cst.CSTNode, oracle) -> frozenset[str] | None:
    """The parameters the read-backs in ``node`` read, directly or through the host numbers made from
    them (``fn.readback_roots``); None where one reads anything else, or none is there."""
    fn = oracle.fn
    found: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        kind = type(current)
        if kind is cst.Name and current.value in fn.readbacks:
            roots = fn.readback_roots.get(current.value)
            if roots is None:
                return None
            found |= roots
            continue
        if kind is cst.Call:
            if is_readback(current, oracle):
                param = _read_param(current, fn)
                if param is None:
                    return None
                found.add(param)
                continue
            if type(current.func) is cst.Name and current.func.value == "len":
                continue
        stack.extend(children(current))
    return frozenset(found) if found else None


def _read_param(call: cst.Call, fn) -> str | None:
    """``p.tolist()``, ``p[i].item()``, ``int(p[0])``: the parameter ``p``, never rebound (yet)."""
    read = call.func.value if type(call.func) is cst.Attribute else call.args[0].value if call.args else None
    while type(read) is cst.Subscript:
        read = read.value
    return read.value if type(read) is cst.Name and read.value in fn.params and read.value not in fn.readbacks else None


def note_roots(names, value: cst.BaseExpression | None, oracle) -> None:
    """After a binding taints ``names`` as read-backs: the parameters their value reads (or forget)."""
    fn = oracle.fn
    names = [n for n in names if n in fn.readbacks or n in fn.readback_roots]
    roots = read_params(value, oracle) if value is not None and names else None
    for name in names:
        if roots is not None and name in fn.readbacks:
            fn.readback_roots[name] = roots
        else:
            fn.readback_roots.pop(name, None)


def param_flags(code: str, anchor: cst.CSTNode, oracle) -> tuple[str, ...]:
    """``host-param:p,q`` for a read-back rule's report whose every source is a parameter read."""
    if code not in RULES:
        return ()
    params = read_params(anchor, oracle)
    return (FLAG + ",".join(sorted(params)),) if params else ()


# -- the link ---------------------------------------------------------------------------------
class HostParams:
    """Which parameters every hot call edge into their function hands a host tensor -- or, for a truth
    test flagged ``py-param:`` (:mod:`.truthkinds`), a value that is no tensor at all."""

    def __init__(self, infos, raw: dict, hot: set, open_: set, index=None):
        self.index = index
        self.callers: dict[tuple[str, str], list] = {}
        for caller, edges in raw.items():
            if caller in hot:
                for callee, site in edges:
                    self.callers.setdefault(callee, []).append((caller, site))
        self.open, self.infos = open_, {info.path: info for info in infos}
        self.memo: dict[tuple, bool] = {}

    def dropped(self, path: str, cand) -> bool:
        for flag, want in ((FLAG, "host"), (PY_FLAG, "py")):
            flags = [f for f in cand.flags if f.startswith(flag)]
            if flags and all(self.host((path, cand.function), p, want) for f in flags for p in f[len(flag):].split(",")):
                return True
        return False

    def host(self, fid: tuple[str, str], param: str, want: str = "host") -> bool:
        key = (fid, param, want)
        if key not in self.memo:
            self.memo[key] = False  # while computed: a cycle hands nothing known
            self.memo[key] = self._host(fid, param, want)
        return self.memo[key]

    def _host(self, fid: tuple[str, str], param: str, want: str) -> bool:
        edges = self.callers.get(fid)
        params = self._params(fid)
        if not edges or fid in self.open or params is None or param not in (*params[0], *params[1]):
            return False
        name = fid[1].rpartition(".")[2]
        info = self.infos.get(fid[0])
        left = NONE if want == "py" and info.functions[fid[1]].defaults.get(param) == ("c", None) else None
        for caller, site in edges:
            if last_name(site.expr) != name and name not in ("forward", "__call__"):
                return False  # ``f = partial(g, a)``, a stored bound method: its arguments may sit elsewhere
            kind = _passed(site, params, param) or (left if _unsplatted(site) else None)
            if kind == "host" if want == "host" else kind is not None and no_tensor(kind, self.infos.get(caller[0]), self.index):
                continue
            if kind is None or kind[:1] != "^" or kind.endswith("["):
                return False
            if not self.host(caller, kind[1:].rstrip("!"), want):
                return False
        return True

    def _params(self, fid: tuple[str, str]) -> tuple[list[str], tuple[str, ...]] | None:
        return passed_params(self.infos, fid)


def passed_params(infos: dict, fid: tuple[str, str]) -> tuple[list[str], tuple[str, ...]] | None:
    """(its positional parameters after the receiver, its keyword-only ones); ``infos``: path -> module."""
    info = infos.get(fid[0])
    flow = info.flows.get(fid[1]) if info is not None else None
    fn = info.functions.get(fid[1]) if info is not None else None
    if flow is None or fn is None:
        return None
    params = list(flow.params)
    return (params[1:] if fn.cls and flow.fkind in ("m", "c") and params else params), tuple(flow.kwonly)


def _passed(site, params: tuple[list[str], tuple[str, ...]], param: str) -> str | None:
    """What one call site passes ``param`` (positional or keyword); None where unknown or left out."""
    kinds = site.kinds
    if kinds is None or site.reference or len(kinds[0]) > len(params[0]):
        return None
    passed = dict(zip(params[0], kinds[0]))
    passed.update(kinds[1])
    return passed.get(param) or None


def _unsplatted(site) -> bool:
    """Every call of the site's spelling names its arguments (no ``*args``, no ``**kw``): one it leaves out
    takes its default."""
    return site.kinds is not None and not site.reference and site.args is not None \
        and all(spelling[2] is False and spelling[3] is False for spelling in site.args)


def py_flags(operand: cst.BaseExpression, fn) -> tuple[str, ...]:
    """``py-param:p`` for a truth test of ``p``, a parameter presumed a tensor, as it came in (:mod:`.truthkinds`)."""
    if type(operand) is cst.Name and operand.value in fn.presumed and operand.value in fn.params:
        return (PY_FLAG + operand.value,)
    return ()
