"""Per-step positions a per-token loop makes whatever their names: its own counter and what it carries.

``params.POSITION_NAMES`` finds a position by its name (``start_pos``, ``for cur_pos in range(...)``).
Eager speculative and beam loops name theirs anything: ``for curr in range(prompt_len, total_len):
model(ids[..., :curr]); ids[0, curr] = x``, a draft loop's ``q[0, k] = probs`` and ``ids[0, pos + k] =
xi``, a verify loop's ``pos += n + 1`` and ``out[:, step:step + m] = ids``. What makes each a per-step
position is how it moves: the counter of a step loop (``for c in range(...)``) takes a new value every
iteration, and so does an int the loop carries and only advances (every binding of it in the loop is
``n += k`` / ``n -= k`` / ``n = n + k``: bound before the loop, never reset in it) -- and every host int
computed from them (``drafted = step_draft + 1``, through :meth:`.hosttaint.HostTaint.taint`).

Only a loop that picks tokens makes them (:func:`token_loop`): a loop over layers, beams, attention chunks
or an acceptance walk (``for i in range(gamma): if r[i] > f[i]: n = i; break``: ``n`` is the accepted
count, gpt-fast's rollback rows are false) runs whole inside each step with the same values, and a loop
computing a training loss every iteration serves nothing. Whether the loop runs per token is known only
when linking, so such a name is a position *of its loops* (``FunctionFacts.loop_positions``): an index
that reads no other position carries :data:`FLAG` with those loops, and the placement drops it unless one
of them is a per-token loop of its function (:func:`off_loops`). Only the index rule reads them (GL308): a branch on the
loop's own counter is the loop's control (``if step == 0:``, ``if curr >= limit: break``), no frozen
value of an eager step. A function a capture records is judged as captured (the twenty-ninth session's
rule): a loop inside it is unrolled into the graph, each copy at its own constant (phyai's pi0.5 Euler
loop), so the flag is dropped there too.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import bound_names, preorder
from graphlint.static.iterations import advanced_names
from graphlint.static.loopnames import is_range
from graphlint.static.losscode import always_run, library_loss
from graphlint.static.names import resolve
from graphlint.static.sampledcarry import is_sampler

FLAG = "loop-pos:"
_ADVANCES = (cst.AddAssign, cst.SubtractAssign)


def enter_step_loop(oracle, stmt: cst.For | cst.While, loop_id: int) -> set[str]:
    """At the head of a step loop that picks tokens (:func:`token_loop`): its counter and the ints it
    only advances become positions of it. Returns :func:`.iterations.advanced_names` (what the walker's
    value flow hands calls)."""
    advanced = advanced_names(stmt)
    fn = oracle.fn
    mine = frozenset((loop_id,)) if token_loop(stmt, oracle.imports) else frozenset()
    for name in advanced if mine else ():
        if name not in fn.tensors and name not in fn.positions and _only_advanced(stmt, name):
            fn.loop_positions[name] = fn.loop_positions.get(name, frozenset()) | mine
    if type(stmt) is cst.For and type(stmt.target) is cst.Name and is_range(stmt.iter) \
            and stmt.target.value not in fn.positions:
        # ``range(a, b)`` counts from ``a``: what its start moves with, not its stop (``range(gamma)``)
        args = [a.value for a in stmt.iter.args if a.keyword is None and not a.star]
        counter = (oracle.loop_sources(args[0]) if len(args) >= 2 else frozenset()) | mine
        if counter:
            fn.loop_positions[stmt.target.value] = counter
        else:
            fn.loop_positions.pop(stmt.target.value, None)
    return advanced


def token_loop(stmt: cst.For | cst.While, imports: dict[str, str]) -> bool:
    """A loop that picks tokens in its body (``logits.argmax(-1)``, ``processor.sample(p)``, ``torch.topk``:
    :func:`.sampledcarry.is_sampler`), and computes no loss on every iteration (``loss += F.mse_loss(...)``:
    a training loop over a sequence, :mod:`.losscode`). A loop over attention chunks or layers that feeds
    its output back picks no token: its counter is the same at every step (magi1's ring attention)."""
    body = stmt.body
    if not any(type(n) is cst.Call and is_sampler(n) for n in preorder(body)):
        return False
    return not any(type(n) is cst.Call and library_loss(resolve(n.func, imports))
                   for small in always_run(body, loops=True) for n in preorder(small))


def _only_advanced(stmt: cst.For | cst.While, name: str) -> bool:
    """Every binding of ``name`` in the loop moves it on from its last value (``n += k``, ``n = n + k``)."""
    for node in preorder(stmt.body):
        kind = type(node)
        if kind is cst.AugAssign:
            if name in bound_names(node.target) and type(node.operator) not in _ADVANCES:
                return False
        elif kind is cst.Assign:
            for t in node.targets:
                if name in bound_names(t.target) and not _steps_on(node.value, name):
                    return False
        elif kind in (cst.For, cst.AnnAssign, cst.NamedExpr) and name in bound_names(node.target):
            return False
        elif kind is cst.AsName and name in bound_names(node.name):
            return False
    return True


def _steps_on(value: cst.BaseExpression, name: str) -> bool:
    return type(value) is cst.BinaryOperation and type(value.operator) in (cst.Add, cst.Subtract) \
        and type(value.left) is cst.Name and value.left.value == name


def loops_of(oracle, read: list[cst.CSTNode]) -> frozenset | None:
    """The loops whose positions ``read`` reads, when it reads no other position; else None."""
    fn = oracle.fn
    if not fn.loop_positions or any(oracle.uses(node, fn.positions) for node in read):
        return None
    loops: frozenset = frozenset()
    for node in read:
        for n in preorder(node):
            if type(n) is cst.Name and n.value in fn.loop_positions:
                loops |= fn.loop_positions[n.value]
    return loops or None


def tag_loops(candidate, loops: frozenset | None) -> None:
    if loops:
        candidate.flags = candidate.flags | {FLAG + ",".join(map(str, sorted(loops)))}


def off_loops(placement, fid, cand) -> bool:
    """A candidate read only on loop positions: dropped unless one of its loops is a per-token loop of
    ``fid`` and no capture records the function (see the module's docstring)."""
    flag = next((f for f in cand.flags if f.startswith(FLAG)), None)
    if flag is None:
        return False
    if cand.in_capture or fid in placement.chains["graph"]:
        return True
    loops = {int(x) for x in flag[len(FLAG):].split(",")}
    if loops & placement.loop_bodies["host"].get(fid, frozenset()):
        return True  # a loop that replays a graph: judged as the host step around it (the twenty-ninth session's rule)
    return not loops & placement.loop_bodies["eager"].get(fid, frozenset())
