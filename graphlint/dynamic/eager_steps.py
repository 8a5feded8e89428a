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
     a tensor or a number -- a KV cache handed back (``past_key_values``);
   - *token*: an integer tensor (or int) that the previous call returned, whole or as a part
     (``next_token, probs = decode_one(model, cur_token, pos)``);
   - *greedy token*: an int (or the last element of an integer tensor) equal to the argmax of the
     last row of a floating tensor the previous call returned, at two calls in a row
     (``tok = int(model.step(tok).argmax())``; the argmax of a hidden state matches a token id
     by chance once in ``dim`` checks, twice in a row hardly ever).
   A result passed back whole is not enough (``x = block(x)`` is a layer loop), nor is a loop
   index (a layer index counts up by one just like a position). A site is judged at most
   ``MAX_CHECKS`` times, never while a graph is being captured; once decided it costs nothing.
3. **The step and the loop.** When F's activation ends, each such site is a decode loop: the
   calls of S are *eager* steps, and what F starts between two of them (prepare the next input,
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
_PRIMITIVE = (int, float, complex, bool, str, bytes, type(None))


class _Activation:
    __slots__ = ("frame", "cid", "children", "site", "events")

    def __init__(self, frame, cid: int, events: int) -> None:
        self.frame, self.cid, self.events = frame, cid, events  # events: graph events before it started
        self.children: dict | None = None  # (call offset, callee id) -> _Calls
        self.site: tuple | None = None  # (parent, key, calls) when a project function called it


class _Calls:
    __slots__ = ("count", "spans", "last", "graphs")

    def __init__(self) -> None:
        self.count, self.spans, self.last = 0, [], _MISSING  # spans: start, end, start, end, ...
        self.graphs = False  # a call captured or replayed a CUDA graph


class EagerSteps:
    def __init__(self, recorder) -> None:
        self.rec = recorder
        self.stacks: dict[int, list[_Activation]] = {}
        #: site (owner id, offset, callee id) -> True / False, or (checks so far, argmax hits in a row)
        self.verdict: dict[tuple, object] = {}
        self.eager_spans: list[tuple[int, int]] = []
        self.loop_spans: list[tuple[int, int]] = []
        self._found: dict[tuple, int] = {}  # (owner, callee, kind) -> calls
        self._owners: list[tuple[int, str]] = []

    # -- events ------------------------------------------------------------------------------
    def start(self, cid: int, frame) -> None:
        stack = self._stack()
        act = _Activation(frame, cid, len(self.rec.events))
        if stack:
            parent = stack[-1]
            key = (parent.frame.f_lasti, cid)
            if parent.children is None:
                parent.children = {}
            calls = parent.children.get(key)
            if calls is None:
                calls = parent.children[key] = _Calls()
            elif calls.last is not _MISSING:
                self._judge((parent.cid, *key), calls, frame)
            calls.count += 1
            calls.spans.append(len(self.rec.log))
            act.site = (parent, key, calls)
        stack.append(act)

    def resume(self, cid: int, frame) -> None:
        """A generator resumed: on the stack again, but no new call."""
        self._stack().append(_Activation(frame, cid, len(self.rec.events)))

    def end(self, frame, value) -> None:
        stack = self._stack()
        i = len(stack) - 1
        while i >= 0 and stack[i].frame is not frame:
            i -= 1
        if i < 0:
            return  # started before the recorder, or on the way out of a resumed generator's caller
        while len(stack) > i:
            act = stack.pop()
            self._finish(act, value if act.frame is frame else None)

    def flush(self) -> None:
        """The recording stops: what is still running ends now (a loop cut short by ``sys.exit``)."""
        for stack in self.stacks.values():
            while stack:
                self._finish(stack.pop(), None)

    # -- what they decide -------------------------------------------------------------------
    def _stack(self) -> list[_Activation]:
        ident = threading.get_ident()
        stack = self.stacks.get(ident)
        if stack is None:
            stack = self.stacks[ident] = []
        return stack

    def _finish(self, act: _Activation, value) -> None:
        if act.site is not None:
            parent, key, calls = act.site
            calls.spans.append(len(self.rec.log))
            calls.graphs |= len(self.rec.events) != act.events
            verdict = self.verdict.get((parent.cid, *key))
            if verdict is not True and verdict is not False:
                calls.last = value  # kept only while the site is undecided
            else:
                calls.last = _MISSING
        if act.children:
            self._close(act)
        act.frame = act.children = act.site = None

    def _close(self, act: _Activation) -> None:
        for (offset, callee), calls in act.children.items():
            spans = calls.spans
            if calls.count < MIN_STEPS or len(spans) % 2 or self.verdict.get((act.cid, offset, callee)) is not True:
                continue
            pairs = list(zip(spans[0::2], spans[1::2]))
            kind = "host" if calls.graphs else "eager"
            if kind == "eager":
                self.eager_spans += pairs
                self.loop_spans += [(end, start) for (_, end), (start, _) in zip(pairs, pairs[1:]) if start > end]
            found = (act.cid, callee, kind)
            self._found[found] = self._found.get(found, 0) + calls.count
            self._owners.append((act.cid, "loop" if kind == "eager" else "host"))

    def _judge(self, site: tuple, calls: _Calls, frame) -> None:
        verdict = self.verdict.get(site, (0, 0))
        if verdict is True or verdict is False or self.rec.capturing:
            return
        checks, hits = verdict
        try:
            how = fed_back(calls.last, frame)
        except Exception:  # noqa: BLE001 - an exotic argument: no verdict from this call
            how = None
        if how in ("state", "token"):
            self.verdict[site] = True
            return
        hits = hits + 1 if how == "greedy" else 0
        if hits >= 2:
            self.verdict[site] = True
        elif checks + 1 >= MAX_CHECKS:
            self.verdict[site] = False
        else:
            self.verdict[site] = (checks + 1, hits)

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
    parts = _parts(previous, tensor)
    by_id = {id(p): p for p in parts}
    for arg in args:
        if arg is previous:
            if _is_token(arg, tensor):
                return "token"
            continue
        if id(arg) in by_id:
            if _is_token(arg, tensor):
                return "token"
            if not isinstance(arg, _PRIMITIVE) and not (tensor and isinstance(arg, tensor)) \
                    and not isinstance(arg, type) and not callable(arg):
                return "state"
    if tensor:
        for part in [previous, *parts]:
            if isinstance(part, tensor) and part.is_floating_point() and part.dim() >= 1 and part.shape[-1] >= 2 \
                    and part.numel() <= 1 << 26:
                token = int(part.detach().reshape(-1, part.shape[-1])[-1].argmax())
                if any(_token_value(arg, tensor) == token for arg in args):
                    return "greedy"
                break
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
