"""Find the eager decode loop of a run: which call is the decode step, and what runs around it.

Definition (what ``graphlint record`` calls an *eager step*):

1. **One call site, again and again.** A project function F calls another project function S
   from the same instruction (a site: F's code, the call's bytecode offset, S's code) at least
   ``MIN_STEPS`` (3) times in one activation of F -- a loop in F. Library frames between the two
   (``nn.Module.__call__``, ``torch.no_grad``'s wrapper) are looked through: the site is F's.
2. **Its output feeds the next call.** At one of those calls, an argument is what the previous
   call returned, by one of:
   - *state*: an object that is a part of the previous result (an element of a returned tuple or
     list, a value of a returned dict or ``ModelOutput``, an attribute of a returned object), not
     a tensor or a number, beside a floating tensor (the logits) -- a KV cache handed back
     (``past_key_values``);
   - *token*: an integer tensor that the previous call returned, whole or as a part
     (``next_token, probs = decode_one(model, cur_token, pos)``);
   - *greedy token*: an int (or the last element of an integer tensor) equal to the argmax of the
     last row of a floating tensor the previous call returned, at two calls in a row
     (``tok = int(model.step(tok).argmax())``; the argmax of a hidden state matches a token id
     by chance once in ``dim`` checks, twice in a row hardly ever).
   A result passed back whole is not enough (``x = block(x)`` is a layer loop), nor is a loop
   index (a layer index counts up by one just like a position). A site is judged at most
   ``MAX_CHECKS`` times, never while a graph is being captured; once decided it costs nothing.
3. **The step and the loop.** When F's activation ends, such a site is its decode loop (when
   several qualify -- the logits processor and the stopping check feed back too -- the one whose
   calls ran the most project code, the model): the calls of S are *eager* steps, and what F starts between two of them (prepare the next input,
   sample, stop, bookkeeping: at any depth) is the loop's *host logic* (role ``loop``); F itself
   is the loop's owner. A step whose calls capture or replay a CUDA graph is a host loop instead
   (its functions are ``host`` already, from the replays): its owner is recorded as ``host``.
   Loops inside a step (the layers) are part of the step.

Limits: a decode loop that feeds nothing back through its arguments (the engine keeps the token
in ``self`` and is called with no argument, or samples with a temperature and keeps no cache
object between calls) is not found, and a loop inside it may be taken for it; calls made from
other threads are attributed to the thread that made them.
"""

from __future__ import annotations

import sys
import threading

MIN_STEPS = 3
MAX_CHECKS = 8
_MISSING = object()
_DEAD = object()  # a site decided not to be a decode loop, in an activation's sites
_PRIMITIVE = (int, float, complex, bool, str, bytes, type(None))


# An activation (a project function running, on this thread's stack) is a list, the cheapest
# object to make once per call: [frame, code id, graph events before it, its sites ({(call offset,
# callee id): calls}, made on its first call), the calls (below) of the call that started it or None].
FRAME, CID, EVENTS, CHILDREN, CALLS = range(5)


# The calls of one site in one activation of its caller, also a list: [site (owner id, call offset,
# callee id), spans (start, end, start, end, ... as log positions), the last call's result while
# the site is undecided (else _MISSING), its verdict (True / False / None: undecided), whether a
# call captured or replayed a CUDA graph].
SITE, SPANS, LAST, DECIDED, GRAPHS = range(5)


def _calls(site: tuple, known) -> list:
    return [site, [], _MISSING, known if known is True or known is False else None, False]


class EagerSteps:
    def __init__(self, recorder) -> None:
        self.rec = recorder
        self._local = threading.local()
        self.stacks: list[list[list]] = []
        #: site (owner id, offset, callee id) -> True / False, or (checks so far, argmax hits in a row)
        self.verdict: dict[tuple, object] = {}
        self.eager_spans: list[tuple[int, int]] = []
        self.loop_spans: list[tuple[int, int]] = []
        self._found: dict[tuple, int] = {}  # (owner, callee, kind) -> calls
        self._owners: list[tuple[int, str]] = []
        self.edges: set[tuple[int, int]] | None = None  # (caller id, callee id) when asked for (benchmarks)

    # -- events: called for every start and end of a project function, so kept short -----------
    def callbacks(self):
        """(start(cid, frame), resume(cid, frame), end(frame, value)): closures over locals, for the
        recorder's callbacks (a method call and attribute lookups per event measurably cost)."""
        log, events, verdict, local, stacks = self.rec.log, self.rec.events, self.verdict, self._local, self.stacks
        judge, finish, missing, dead, edges = self._judge, self._finish, _MISSING, _DEAD, self.edges

        def stack_of_thread() -> list:
            stack = local.stack = []
            stacks.append(stack)
            return stack

        def start(cid: int, frame) -> None:
            try:
                stack = local.stack
            except AttributeError:
                stack = stack_of_thread()
            calls = None
            if stack:
                parent = stack[-1]
                if edges is not None:
                    edges.add((parent[CID], cid))
                key = (parent[FRAME].f_lasti, cid)
                children = parent[CHILDREN]
                if children is None:
                    children = parent[CHILDREN] = {}
                calls = children.get(key)
                if calls is None:
                    site = (parent[CID], *key)
                    known = verdict.get(site)
                    calls = children[key] = _calls(site, known) if known is not False else dead
                elif calls is not dead and calls[LAST] is not missing:
                    judge(calls, frame)
                    if calls[DECIDED] is False:
                        calls = children[key] = dead
                if calls is dead:  # no decode loop here: nothing more to keep
                    calls = None
                else:
                    calls[SPANS].append(len(log))
            stack.append([frame, cid, len(events), None, calls])

        def resume(cid: int, frame) -> None:
            """A generator resumed: on the stack again, but no new call."""
            try:
                stack = local.stack
            except AttributeError:
                stack = stack_of_thread()
            stack.append([frame, cid, len(events), None, None])

        def end(frame, value) -> None:
            try:
                stack = local.stack
            except AttributeError:
                return
            if stack and stack[-1][FRAME] is frame:
                act = stack.pop()
                if act[CHILDREN] is None and act[CALLS] is not None:  # the common case: a leaf call
                    calls = act[CALLS]
                    calls[SPANS].append(len(log))
                    if len(events) != act[EVENTS]:
                        calls[GRAPHS] = True
                    calls[LAST] = value if calls[DECIDED] is None else missing
                else:
                    finish(act, value)
                return
            i = len(stack) - 1
            while i >= 0 and stack[i][FRAME] is not frame:
                i -= 1
            if i < 0:
                return  # started before the recorder, or on the way out of a resumed generator's caller
            while len(stack) > i:
                act = stack.pop()
                finish(act, value if act[FRAME] is frame else None)

        return start, resume, end

    def flush(self) -> None:
        """The recording stops: what is still running ends now (a loop cut short by ``sys.exit``)."""
        for stack in self.stacks:
            while stack:
                self._finish(stack.pop(), None)

    def _finish(self, act: list, value) -> None:
        calls = act[CALLS]
        if calls is not None:
            calls[SPANS].append(len(self.rec.log))
            if len(self.rec.events) != act[EVENTS]:
                calls[GRAPHS] = True
            calls[LAST] = value if calls[DECIDED] is None else _MISSING  # kept only while undecided
        if act[CHILDREN]:
            self._close(act)
        act.clear()

    # -- what they decide -------------------------------------------------------------------
    def _close(self, act: list) -> None:
        """The activation of a function ends: is one of its sites its decode loop? Of the sites that
        qualify, the one whose calls ran the most project code is the step (the model, not the logits
        processor or the stopping check that also feed their result back)."""
        best, weight = None, -1
        for calls in act[CHILDREN].values():
            if calls is _DEAD:
                continue
            spans = calls[SPANS]
            if len(spans) < 2 * MIN_STEPS or len(spans) % 2 or self.verdict.get(calls[SITE]) is not True:
                continue
            ran = sum(spans[1::2]) - sum(spans[0::2])
            if ran > weight:
                best, weight = calls, ran
        if best is None:
            return
        spans = best[SPANS]
        pairs = list(zip(spans[0::2], spans[1::2]))
        kind = "host" if best[GRAPHS] else "eager"
        if kind == "eager":
            self.eager_spans += pairs
            self.loop_spans += [(end, start) for (_, end), (start, _) in zip(pairs, pairs[1:]) if start > end]
        found = (act[CID], best[SITE][2], kind)
        self._found[found] = self._found.get(found, 0) + len(spans) // 2
        self._owners.append((act[CID], "loop" if kind == "eager" else "host"))

    def _judge(self, calls: list, frame) -> None:
        site = calls[SITE]
        verdict = self.verdict.get(site, (0, 0))
        if verdict is True or verdict is False:
            calls[DECIDED], calls[LAST] = verdict, _MISSING
            return
        if self.rec.capturing:
            return
        checks, hits = verdict
        try:
            how = fed_back(calls[LAST], frame)
        except Exception:  # noqa: BLE001 - an exotic argument: no verdict from this call
            how = None
        hits = hits + 1 if how == "greedy" else 0
        if how in ("state", "token") or hits >= 2:
            verdict = True
        elif checks + 1 >= MAX_CHECKS:
            verdict = False
        else:
            verdict = (checks + 1, hits)
        self.verdict[site] = verdict
        if verdict is True or verdict is False:
            calls[DECIDED], calls[LAST] = verdict, _MISSING

    # -- the result ---------------------------------------------------------------------------
    def found(self) -> list[tuple[int, int, str, int]]:
        """(owner id, step callee id, "eager" | "host", calls) of every decode loop."""
        return [(owner, callee, kind, calls) for (owner, callee, kind), calls in sorted(self._found.items())]

    def owners(self) -> list[tuple[int, str]]:
        """(owner id, role) once per activation that looped."""
        return list(self._owners)


def fed_back(previous, frame) -> str | None:
    """How an argument of ``frame``'s call comes from ``previous`` (the last call's result): "state",
    "token", "greedy", or None. See the module docstring."""
    args = _arguments(frame)
    if not args:
        return None
    torch = sys.modules.get("torch")
    tensor = torch.Tensor if torch is not None else ()
    if not tensor:
        return None  # a decode step returns tensors
    parts = _parts(previous, tensor)
    by_id = {id(p): p for p in parts}
    logits = next((p for p in [previous, *parts] if isinstance(p, tensor) and p.is_floating_point()
                   and p.dim() >= 1 and p.shape[-1] >= 2), None)
    for arg in args:  # identity says nothing of an int (small ints are shared): those go by value below
        if arg is previous:
            if isinstance(arg, tensor) and _is_token(arg, tensor):
                return "token"
            continue
        if id(arg) in by_id:
            if isinstance(arg, tensor) and _is_token(arg, tensor):
                return "token"
            if logits is not None and not isinstance(arg, (_PRIMITIVE, tensor, type)) and not callable(arg):
                return "state"  # a cache handed back beside the logits
    if logits is not None and logits.numel() <= 1 << 26:
        token = int(logits.detach().reshape(-1, logits.shape[-1])[-1].argmax())
        if any(_token_value(arg, tensor) == token for arg in args):
            return "greedy"
    return None


def _arguments(frame) -> list:
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
    names = code.co_varnames[:count]
    local = frame.f_locals
    out = []
    for name in names:
        value = local.get(name, _MISSING)
        if value is _MISSING or name == "self":
            continue
        out.append(value)
        if isinstance(value, (tuple, list)) and len(value) <= 16:
            out += value
        elif isinstance(value, dict) and len(value) <= 64:
            out += list(value.values())
    return out


def _parts(value, tensor) -> list:
    """The parts of a returned value a loop may hand back: elements, dict values, attributes."""
    if isinstance(value, (tuple, list)):
        return list(value[:32])
    if isinstance(value, dict):
        return list(value.values())[:32]
    if isinstance(value, _PRIMITIVE) or (tensor and isinstance(value, tensor)):
        return []
    attributes = getattr(value, "__dict__", None)
    return list(attributes.values())[:32] if isinstance(attributes, dict) else []


def _is_token(value, tensor) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return bool(tensor) and isinstance(value, tensor) and not value.is_floating_point() \
        and not value.is_complex() and str(value.dtype) != "torch.bool"


def _token_value(value, tensor) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if tensor and isinstance(value, tensor) and _is_token(value, tensor) and 0 < value.numel() <= 1 << 16:
        return int(value.reshape(-1)[-1])
    return None
