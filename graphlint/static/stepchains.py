"""Per-step ints carried down a chain of calls: the decode loop's counter reaches the layer that
slices by it through every forward in between.

litgpt's compiled ``next_token(..., input_pos_maxp1=n)`` hands the count its loop advances to
``GPT.forward``, which hands it to each ``Block.forward``, which hands it to
``CausalSelfAttention.forward``, where ``k[..., :input_pos_maxp1, :]`` makes a new shape -- a new
CUDA-graph recording -- every token. Each call passes the caller's own parameter on
(``^input_pos_maxp1``, :func:`.argkinds.arg_kinds`); the value flow's rounds learn one hop
each, so a slice three forwards down was never reached. Here the hops are followed to a fixed
point in one pass: a caller's parameter passed on is a per-step int where that parameter is one
(:data:`.valuekinds.STEP`, a may-fact as :func:`.valueflow._stepped`'s), over the call sites the
value flow resolves, a module's calls of its layers included (``block(x, ...)`` for each
``block`` of ``self.blocks``: :mod:`.instancecalls`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from graphlint.static.valuekinds import STEP

#: a chain longer than this many forwards is not followed further (a recursion stops on its own:
#: a fixed point adds nothing new)
MAX_HOPS = 12


def step_chains(infos_by_path: dict, targets: dict[tuple[str, str], list[tuple]],
                stepped: Callable, fields=None) -> dict[tuple[str, str], set[str]]:
    """{(path, qualname): its parameters some chain of calls hands a per-step int}; ``targets``: each
    function's call sites as (site, caller's module, caller); ``stepped(info, fn, sites)``: the
    parameters those sites pass a per-step int (:func:`.valueflow._stepped`); ``fields``: the
    :class:`.fieldclasses.FieldClasses` that resolve a module's calls of its layers (:func:`layer_calls`)."""
    if fields is not None:
        layer_calls(infos_by_path, targets, fields)
    found: dict[tuple[str, str], set[str]] = {t: set() for t in targets}
    for _ in range(MAX_HOPS):
        changed = False
        for target, sites in targets.items():
            info = infos_by_path[target[0]]
            names = stepped(info, info.functions[target[1]], [_lifted(entry, found) for entry in sites])
            if not names <= found[target]:
                found[target] |= names
                changed = True
        if not changed:
            break
    return found


def _lifted(entry: tuple, found: dict[tuple[str, str], set[str]]) -> tuple:
    """The call site with each of the caller's own parameters it passes on (``^name``) that is a
    per-step int in the caller read as one."""
    site, info, caller = entry
    mine = found.get((info.path, caller.qualname))
    if not mine or site.kinds is None:
        return entry

    def lift(kind: str, value) -> str:
        if kind[:1] == "^":
            return STEP if kind[1:] in mine else kind  # ``^x!`` (a tensor) / ``^x[`` stay
        return STEP if (not kind or kind[:1] == "@") and _passed_on(value) in mine else kind

    kinds = site.kinds
    spelled = getattr(site, "args", None)
    values = spelled[0] if spelled else ((), ())
    by_key = dict(values[1]) if len(values) > 1 else {}
    lifted = (tuple(lift(k, values[0][i] if i < len(values[0]) else None) for i, k in enumerate(kinds[0])),
              tuple((n, lift(k, by_key.get(n))) for n, k in kinds[1]), *kinds[2:])
    if lifted == kinds:
        return entry
    clone = copy.copy(site)
    clone.kinds = lifted
    return clone, info, caller


def layer_calls(infos_by_path: dict, targets: dict[tuple[str, str], list[tuple]], fields) -> None:
    """Add to ``targets`` the calls of a module's layers the value flow leaves unresolved: ``self.attn(...)``
    and ``block(...)`` for a ``block`` taken from ``self.blocks`` (``enumerate``, ``self.transformer.h``
    alike) run the ``forward`` of every project class the field's stores construct, however deep in a
    ``ModuleList`` / ``ModuleDict`` display. Loose (a may-resolution), so only for what passes a
    parameter on or a per-step int."""
    known = {id(entry[0]) for sites in targets.values() for entry in sites}
    for info in infos_by_path.values():
        for fn in info.functions.values():
            if not fn.cls:
                continue
            for site in fn.calls:
                if id(site) in known or site.kinds is None or not any(
                        k[:1] == "^" or k == STEP for k in (*site.kinds[0], *(k for _, k in site.kinds[1]))):
                    continue
                for target in _layer_targets(info, fn, site.expr, fields):
                    targets.setdefault(target, []).append((site, info, fn))


def _layer_targets(info, fn, expr: tuple, fields) -> list[tuple[str, str]]:
    cls = fn.cls
    if expr[:2] == ("a", ("n", "self")):
        field = expr[2]
    elif expr[0] == "n":
        flow = info.flows.get(fn.qualname)
        values = [st[2] for st in flow.stmts if st[0] == "=" and st[1] == expr] if flow is not None else []
        roots = {f for v in values if v is not None and v[0] == "s" for f in _self_fields(v)}
        if len(roots) != 1:
            return []
        field = roots.pop()
    else:
        return []
    out: dict[tuple[str, str], None] = {}
    for owner_info, _, by_field in fields.methods(info, cls):
        for value in by_field.get(field, ()):
            for ref in _constructed(value, owner_info, fields, 0):
                hit = fields.index.call_forward(ref)
                if hit is not None:
                    out[(hit[0].path, hit[1])] = None
    return list(out)


def _self_fields(ir) -> set[str]:
    """``F`` of each ``self.F`` in an IR expression."""
    out: set[str] = set()
    stack = [ir]
    while stack:
        node = stack.pop()
        if type(node) is not tuple or not node:
            continue
        if node[0] == "a" and len(node) == 3 and node[1] == ("n", "self"):
            out.add(node[2])
            continue
        stack.extend(child for child in (node if type(node[0]) is tuple else node[1:]) if type(child) is tuple)
    return out


def _constructed(ir, info, fields, depth: int) -> list:
    """The project classes an IR expression constructs anywhere in it (``ModuleList(Block(...) for ...)``)."""
    if type(ir) is not tuple or not ir or depth > 16:
        return []
    out = []
    if ir[0] == "c" and type(ir[1]) is tuple:
        ref = fields.class_of(info, ir[1]) if ir[1] and ir[1][0] in ("n", "a", "k") else None
        if ref is not None:
            out.append(ref)
    for child in ir if type(ir[0]) is tuple else ir[1:]:  # a tuple of nodes, or a node's operands
        if type(child) is tuple:
            out.extend(_constructed(child, info, fields, depth + 1))
    return out


def _passed_on(value) -> str | None:
    """The caller's parameter an argument hands on, where :mod:`.valuefacts` says it is that parameter
    or None (``x = None`` on the other branch: ``if maxp1 is not None: ... else: maxp1 = None``)."""
    if type(value) is not tuple or not value:
        return None
    if value[0] == "p":
        return value[1]
    if value[0] != "l":
        return None
    names = {b[0][1] for b in value[1] if type(b[0]) is tuple and b[0][0] == "p"}
    rest = [b[0] for b in value[1] if not (type(b[0]) is tuple and b[0][0] == "p")]
    return names.pop() if len(names) == 1 and all(r == ("c", None) for r in rest) else None
