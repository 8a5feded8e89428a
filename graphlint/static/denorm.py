"""Module trees whose ``weight_norm`` the program removes, wherever it does (GL212's fix applied in
another file than the wrapped layers').

``weight_norm`` recomputes a wrapped layer's weight on every call until something removes it:
``remove_weight_norm(m)`` or ``parametrize.remove_parametrizations(m, "weight")``. A loader that
does it for a whole tree after loading (``for m in model.modules(): remove_parametrizations(m,
"weight")``, ``model.apply(fold)`` with ``def fold(m): remove_weight_norm(m)``, or
``model.apply(lambda m: ...)``) leaves plain weights in every module of it. The walker records,
per function, the root of each such removal (``ModuleInfo.denorm``):

- ``(function, "tree", root)``: a removal on the loop variable of ``for m in root.modules()`` /
  ``for _, m in root.named_modules()``, or in a lambda handed to ``root.apply``;
- ``(function, "param", None)``: the function removes on its own first parameter (an ``apply`` callback);
- ``(function, "apply", root, callback)``: ``root.apply(callback)``, a tree root when the callback
  is such a function.

When linking, the classes the roots hold (points-to) and every class their ``__init__`` builds, at
any depth, are the de-normed trees; a GL212 report on a layer class of one is dropped. A removal on
one module alone (``remove_weight_norm(self.conv)``) stays the per-file rule's (:mod:`.matchers.weight_norm`).
"""

from __future__ import annotations

from collections import deque

import libcst as cst

from graphlint.static.cstwalk import called_name, preorder

REMOVERS = frozenset(("remove_weight_norm", "remove_parametrizations"))
TREE_METHODS = frozenset(("modules", "named_modules"))
FLAG = "weight-normed:"  # a GL212 report's flag: the wrapping class it enters


def _removed(call: cst.BaseExpression) -> str | None:
    """The name a removal (``remove_weight_norm(m)``, ``remove_parametrizations(m, "weight")``) applies to."""
    if type(call) is not cst.Call or called_name(call.func) not in REMOVERS or not call.args:
        return None
    first = call.args[0].value
    return first.value if type(first) is cst.Name else None


def _picks_types(node: cst.CSTNode, name: str) -> bool:
    """``isinstance(name, ...)`` / ``type(name)`` anywhere in ``node``: the removal is kept to some layer
    types, which may not be the wrapped ones (so the tree is not taken for folded)."""
    return any(type(n) is cst.Call and type(n.func) is cst.Name and n.func.value in ("isinstance", "type") and n.args
               and type(n.args[0].value) is cst.Name and n.args[0].value.value == name for n in preorder(node))


def _tree_root(name: str, loops: list[cst.CSTNode]) -> cst.BaseExpression | None:
    """``X`` of the innermost enclosing ``for name in X.modules()`` (``for _, name in X.named_modules()``)
    whose body removes from every module it visits, whatever its type."""
    for loop in reversed(loops):
        if type(loop) is not cst.For or type(loop.iter) is not cst.Call or type(loop.iter.func) is not cst.Attribute:
            continue
        if loop.iter.func.attr.value not in TREE_METHODS:
            continue
        target = loop.target
        if type(target) is cst.Tuple and target.elements:
            target = target.elements[-1].value
        if type(target) is cst.Name and target.value == name:
            return None if _picks_types(loop.body, name) else loop.iter.func.value
    return None


def note_call(at, call: cst.Call) -> None:
    """The walker's call ``call`` (in ``at.func``): a removal, or ``root.apply(callback)``."""
    func, info, qual = call.func, at.info, at.func.qualname
    name = _removed(call)
    if name is not None:
        root = _tree_root(name, at.loop_nodes)
        ir = at.flows.ir.expr(root) if root is not None else None
        if ir is not None:
            info.denorm.append((qual, "tree", ir, None))
        elif name in at.flows.scope.call_params()[:1] and at.oracle.fn.defn is not None \
                and not _picks_types(at.oracle.fn.defn, name):
            info.denorm.append((qual, "param", None, None))  # not ``if not isinstance(m, C): return`` first
        return
    if type(func) is not cst.Attribute or func.attr.value != "apply" or len(call.args) != 1 or call.args[0].keyword:
        return
    root, callback = at.flows.ir.expr(func.value), call.args[0].value
    if root is None:
        return
    if type(callback) is cst.Lambda:
        params = callback.params.params
        if params and any(_removed(node) == params[0].name.value for node in _calls_in(callback.body)) \
                and not _picks_types(callback.body, params[0].name.value):
            info.denorm.append((qual, "tree", root, None))
        return
    handed = at.flows.ir.expr(callback)
    if handed is not None:
        info.denorm.append((qual, "apply", root, handed))


def _calls_in(node: cst.CSTNode):
    return (n for n in preorder(node) if type(n) is cst.Call)


def denormed_classes(infos, graph, calls) -> set[tuple[str, str]]:
    """(path, class) of every class in a tree whose weight_norm some code removes."""
    removing = {(info.path, qual) for info in infos for qual, kind, _, _ in info.denorm if kind == "param"}
    roots = []
    for info in infos:
        for qual, kind, root, callback in info.denorm:
            if kind == "tree":
                roots.append((info.path, qual, root))
            elif kind == "apply" and removing:
                node = graph.node(info.path, qual, callback)
                if node is not None and any(fid in removing for fid in graph.callees(node, classes=False)):
                    roots.append((info.path, qual, root))
    found: set[tuple[str, str]] = set()
    for path, qual, root in roots:
        node = graph.node(path, qual, root)
        if node is not None:
            found.update((v[1], v[2]) for v in graph.solver.values(node) if v[0] in ("I", "S"))
    queue = deque((path, f"{cls}.__init__") for path, cls in found)
    seen = set(queue)
    while queue:  # what the roots' constructors build, at any depth
        for callee, site in calls.get(queue.popleft(), ()):
            if callee not in seen and not site.reference:
                seen.add(callee)
                queue.append(callee)
                if callee[1].endswith(".__init__"):
                    found.add((callee[0], callee[1][: -len(".__init__")]))
    return found
