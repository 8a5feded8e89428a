"""Training code by what it computes: a function that always computes a loss trains.

:mod:`.coldcode` makes a function that calls ``.backward()`` training code. A model's training
forward often does not: it computes the losses and returns them, and the training script (outside
the checked paths, or a library's trainer) runs the backward pass. Such a forward may call a
compiled CUDA-graph module (the feature encoder a decode step compiles), and then looked like a
host step around a replay, its loss masks and noise draws per-step allocations.

A function *computes a loss* when a statement of its own body -- not under an ``if``, a loop or a
``try``; a ``with`` block's body counts -- calls a loss of ``torch.nn.functional``
(``F.mse_loss(pred, target)``, ``F.cross_entropy``, ...), or calls a function whose name says loss
(``self.decoder.compute_loss(...)``) that the call graph resolves to a function that computes one.
So does one whose every path calls such a loss (:func:`every_path_loss`: each arm of an ``if`` with an
``else`` computes one, ``loss_fn = F.cross_entropy if ... else F.nll_loss`` named by a local). A
forward that computes the loss only ``if labels is not None:`` (a decode forward with an optional
training use) is no training code. Functions defined inside training code are training code too
(a closure a loss's ``jvp`` differentiates)."""

from __future__ import annotations

from fnmatch import fnmatchcase

import libcst as cst

from graphlint.static.cstwalk import called_name, ends_in_jump, preorder
from graphlint.static.names import resolve

#: ``torch.nn.functional``'s losses, by name
LOSS_FUNCTIONS = ("*_loss", "cross_entropy", "binary_cross_entropy*", "kl_div", "nll_loss")
LOSS_MODULE = "torch.nn.functional."


def always_run(body: cst.BaseSuite, loops: bool = False):
    """The simple statements ``body`` always runs -- not under an ``if`` or a ``try``; a ``with``
    block's body counts -- and with ``loops``, those each iteration of such a loop always runs, up to
    an ``if`` on a flag that leaves (``if not self.has_ttt: continue``: what follows runs only with
    the flag). A leave on a computed value (``if loss.isnan().any(): return``, a skipped step) is
    an exception to the iteration, not a switch: what follows it still runs every ordinary one."""
    def block(stmts):
        for stmt in stmts:
            if type(stmt) is cst.With or (loops and type(stmt) in (cst.For, cst.While)):
                yield from block(getattr(stmt.body, "body", ()))
            elif type(stmt) is cst.SimpleStatementLine:
                yield stmt
            elif loops and type(stmt) is cst.If and ends_in_jump(stmt.body) \
                    and not any(type(node) is cst.Call for node in preorder(stmt.test)):
                return
    yield from block(getattr(body, "body", ()))


def top_level_loss_calls(body: cst.BaseSuite) -> set[int]:
    """The ids of the calls named like a loss in the statements ``body`` always runs."""
    return {id(node) for stmt in always_run(body) for node in preorder(stmt)
            if type(node) is cst.Call and "loss" in called_name(node.func).lower()}


def spine_calls(body: cst.BaseSuite) -> set[int]:
    """The ids of the calls in the statements ``body`` always runs, and in those each iteration of
    a loop it always runs always runs (``while True: loss = step(batch); backward_step(loss)``)."""
    return {id(node) for stmt in always_run(body, loops=True) for node in preorder(stmt) if type(node) is cst.Call}


def every_path_loss(body: cst.BaseSuite, imports: dict[str, str]) -> bool:
    """Whether every path through ``body`` calls a loss of ``torch.nn.functional``, directly or
    through a local bound to such losses only: in a statement it always runs, or in every arm of an
    ``if`` it always runs that has an ``else``; an arm that returns without one leaves a path out."""
    aliases: set[str] = set()

    def is_loss(node: cst.BaseExpression) -> bool:
        if type(node) is cst.IfExp:
            return is_loss(node.body) and is_loss(node.orelse)
        return (type(node) is cst.Name and node.value in aliases) or library_loss(resolve(node, imports))

    def suite(stmts) -> bool:
        for stmt in stmts:
            if type(stmt) is cst.SimpleStatementLine:
                for small in stmt.body:
                    if type(small) is cst.Assign and len(small.targets) == 1 and type(small.targets[0].target) is cst.Name \
                            and is_loss(small.value):
                        aliases.add(small.targets[0].target.value)
                if any(type(node) is cst.Call and is_loss(node.func) for node in preorder(stmt)):
                    return True
            elif type(stmt) is cst.With and suite(stmt.body.body):
                return True
            elif type(stmt) is cst.If:
                arms, node = [], stmt
                while type(node) is cst.If:
                    arms.append(node.body.body)
                    node = node.orelse
                if node is not None and all(suite(arm) for arm in (*arms, node.body.body)):
                    return True
                if any(type(n) is cst.Return for arm in arms for n in preorder(cst.IndentedBlock(arm))):
                    return False
        return False

    return suite(getattr(body, "body", ()))


def library_loss(name: str | None) -> bool:
    """``torch.nn.functional.mse_loss`` and its kin (``name`` resolved through the imports)."""
    return bool(name) and name.startswith(LOSS_MODULE) and any(
        fnmatchcase(name[len(LOSS_MODULE):], pat) for pat in LOSS_FUNCTIONS)


def trains_through(found: set, infos, calls: dict) -> set:
    """``found`` grown by the functions with a call they always run (:func:`spine_calls`) whose every
    target trains: ``train()``'s loop calls ``train_step()`` each iteration, which calls
    ``backward_step()``, which runs ``model.backward(loss)`` -- the loop trains, it serves nothing."""
    spines = {(info.path, q): fn.spine_calls for info in infos for q, fn in info.functions.items() if fn.spine_calls}
    changed = bool(found)
    while changed:
        changed = False
        for fid, exprs in spines.items():
            if fid in found:
                continue
            edges = [(callee, site.expr) for callee, site in calls.get(fid, ()) if site.expr in exprs and not site.reference]
            if any(all(callee in found for callee, e in edges if e == expr) and any(e == expr for _, e in edges)
                   for expr in exprs):
                found.add(fid)
                changed = True
    return found


def training_closure(found: set, infos, calls: dict) -> set:
    """``found`` (functions that train) grown by the functions whose loss-named top-level call
    resolves to one of them, and by the functions defined inside any of them."""
    losses = {(info.path, q): fn.loss_calls for info in infos for q, fn in info.functions.items() if fn.loss_calls}
    changed = True
    while changed:
        changed = False
        for fid, exprs in losses.items():
            if fid not in found and any(site.expr in exprs and callee in found for callee, site in calls.get(fid, ())):
                found.add(fid)
                changed = True
    if found:
        found.update((info.path, q) for info in infos for q in info.functions if "." in q and _inside(info.path, q, found))
    return found


def _inside(path: str, qual: str, found: set) -> bool:
    while "." in qual:
        qual = qual.rpartition(".")[0]
        if (path, qual) in found:
            return True
    return False
