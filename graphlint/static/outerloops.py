"""What makes a loop per-token: the innermost loop that runs the model step.

A loop that feeds its output back and reaches a model (:mod:`.loops`) is not always a decode
loop. The same shape wraps whole decodes: a transcription driver's loop over 30-second windows
calling ``decode_with_fallback(window)``, whose ``model.decode`` runs a ``DecodingTask`` with the
real token loop; a chat loop over prompts calling ``generate()``; a temperature-fallback or retry
loop around a decode; a server's per-connection loop around a per-frame loop; a request loop
around a scheduler whose step loop replays a captured graph. Each iteration of such a loop runs a
*whole* decode, many tokens, so it runs once per request (window, prompt, attempt), not per token.

**The rule.** A *decoder* is a function holding a per-token loop of its own, or a step loop
around a replay (:mod:`.steploops`). A loop is an **outer loop** when every call of it that
reaches the model (or a replay) runs a decoder -- the callee is one, or reaches one at any depth
through the call graph -- strictly below the loop (the decoder does not lead back to the loop's own
function: under recursion or an imprecise edge that makes two loops each other's callers,
neither is made outer). One call that reaches the model *without* running a decoder (the step's
own ``model(x)`` beside a draft model's ``generate()``) keeps the loop per-token. What decides is
reachability, not the callee's name: ``decode_with_fallback`` -> ``model.decode`` ->
``DecodingTask.run`` -> ``_main_loop`` makes the window loop outer though the encoder, which
``run`` calls directly once per window, is a model forward too: it runs *before* the decode, its
input, once per decode. A model call *after* the call that leads to a decoder, in the same
function, runs on what the decode produced -- a speculative step drafting with a draft model's
``decode_n_tokens`` and verifying with the target model -- and keeps the loop per-token; so does
a decoder that itself runs the model after its own loop (the draft loop and the verification
written in one function: it is one speculative step, not a whole decode).

**Loops inside the model are no decoders.** A loop in code an ``nn.Module``'s ``forward`` (or a
``__call__`` doing device work) reaches -- a weight-shared block applied ``n`` times, a chunked
scan -- is part of the one model step: ``decode_one_token(model, tok, pos)`` calling a forward
with such a loop is still the per-token loop's call.

**What the outer loop's code is: cold.** Its body and the functions only it calls (per-window
segment bookkeeping, word-level alignment, prompt assembly, the fallback's quality checks) run
once per request: they are not reported. This is the same decision as for ``generate()``'s code
before its loop (:meth:`graphlint.static.entries.Discovery.drivers`): once-per-request host code
costs nothing per token, and reporting it at ``info`` would bury the per-token findings of the
real loop under once-per-request noise. A function the inner loop reaches as well stays hot (the
inner loop's spread reaches it). ``graphlint entries`` lists each outer loop and the decoder it
runs, so a user sees why a loop that looks like a decode loop is not one.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from graphlint.static.contexts import Calls, FuncId, bfs, reaching
from graphlint.static.handedback import hands_back

#: :class:`graphlint.static.entries.Discovery` (not imported: it imports this module)
Discovery = Any
MODEL_METHODS = ("forward", "__call__")


@dataclass(frozen=True)
class OuterLoop:
    """A loop that runs whole decodes: ``where`` is its position (as :class:`.facts.Site` stores
    it), ``decoder`` the function holding the per-token (or step) loop one of its calls runs."""

    function: FuncId
    where: tuple
    decoder: FuncId


class OuterLoops:
    """Decides, per loop, whether it runs whole decodes (see the module docstring)."""

    def __init__(self, disc: Discovery, looping: set[FuncId], callers: dict[FuncId, list[FuncId]],
                 reach: set[FuncId]):
        self.calls: Calls = disc.calls
        # the modules, not ``disc.fn``: a bound method of the discovery it belongs to was a reference
        # cycle, and the link (run with the collector paused) kept every replaced discovery's call graph
        self._by_path, self.graph = disc.by_path, disc.graph
        self.reach = reach  # functions that reach a model step
        models = [(fid, (fid,)) for fid in sorted(disc.calls) if _model_method(disc, fid)]
        self.forwards = {fid for fid, _ in models if fid[1].rpartition(".")[2] == "forward"}  # not a processor's __call__
        inside = set(bfs(models, disc.calls)) if models else set()
        self.decoders = {fid for fid in looping if fid not in inside}
        self.runs_decoder = reaching(self.decoders, callers) if self.decoders else set()
        self._below: dict[FuncId, frozenset[FuncId]] = {}
        #: (function, loop position, the decoder one of its calls runs): for ``graphlint entries``
        self.found: list[OuterLoop] = []

    def fn(self, fid: FuncId):
        return self._by_path[fid[0]].functions[fid[1]]

    def decoder_run(self, fid: FuncId, targets: list[FuncId]) -> FuncId | None:
        """The decoder a loop of ``fid`` runs when each of its model-reaching calls (``targets``)
        runs one strictly below it; None when the loop is per-token."""
        if not targets or any(t not in self.runs_decoder for t in targets):
            return None
        first = None
        for target in targets:
            below = self._decoders_below(target, fid)
            if not below:
                return None
            first = first or min(below)
        return first

    def _decoders_below(self, start: FuncId, fid: FuncId) -> list[FuncId]:
        """Decoders ``start`` reaches without going through ``fid``, none of which leads back to it."""
        seen, queue, found = {start}, deque([start]), []
        while queue:
            cur = queue.popleft()
            if cur in self.decoders and cur != fid and fid not in self._reach(cur):
                if self._steps(cur):
                    return []
                found.append(cur)
                continue  # what runs under a decoder is that decoder's business
            if self.verifies(cur):
                return []
            for callee, site in self.calls.get(cur, ()):
                if callee not in seen and callee != fid and not site.reference:
                    seen.add(callee)
                    queue.append(callee)
        return found

    def verifies(self, fid: FuncId, direct: bool = False) -> bool:
        """Whether ``fid`` runs the model on what a decoder it calls produced: a model call after
        the call that leads to the decoder (a speculative step verifying the draft model's tokens
        with the target model), when what it returns may come back to the decode (:mod:`.handedback`:
        a VAE decoding a sampled video section into a file is the section's post-processing). A model
        call before it is the decode's input (an encoder, a prefill), run once per decode like the
        decoder itself. ``direct``: the later call is a
        model's ``forward`` itself, not a helper that may reach one (a ``generate()`` dispatching
        to one of several decoders calls helpers after the dispatch, and drives a whole decode)."""
        edges = [(callee, site) for callee, site in self.calls.get(fid, ())
                 if not site.reference and not (direct and callee == fid)]  # (direct: a call of itself leads nowhere new)
        first = min((site.order for callee, site in edges if callee in self.runs_decoder), default=None)
        if first is None:
            return False
        later = [site for callee, site in edges if site.order > first and callee in self.reach and callee not in
                 self.runs_decoder and (not direct or callee in self.forwards)]
        # a call after the decode whose result never comes back to it is post-processing (:mod:`.handedback`)
        return hands_back(self.fn(fid), later, [site for callee, site in edges if callee in self.runs_decoder])

    def _steps(self, fid: FuncId) -> bool:
        """Whether the decoder ``fid`` is one step of a decode, not a whole one: after its loop, outside
        it, it runs the model on what the loop produced (a speculative step whose draft loop proposes
        ``k`` tokens and whose target model then verifies them, both in one function). The loop that
        calls it once per step is the per-token loop, as when the draft loop is a function of its own
        (:meth:`verifies`). A verification runs on every step; a model call after the loop only under a
        branch (``if self.add_estimator:`` scoring the finished sequences) is an option's
        post-processing of a whole decode, once per decode (:attr:`.facts.CallSite.always`)."""
        fn = self.fn(fid)
        loops = {loop.id for loop in fn.loops}
        first = min(loops, default=None)
        return first is not None and any(  # every call site (the call graph keeps one per callee)
            site.order > first and not site.loops & loops and not site.reference and site.always
            and any(callee in self.reach and callee not in self.runs_decoder
                    for callee in self.graph.targets(fid[0], fid[1], site))
            for site in fn.calls)

    def _reach(self, fid: FuncId) -> frozenset[FuncId]:
        """Everything ``fid`` calls, at any depth (cached: the decoders are few)."""
        known = self._below.get(fid)
        if known is None:
            known = self._below[fid] = frozenset(bfs([(fid, (fid,))], self.calls))
        return known


def _model_method(disc: Discovery, fid: FuncId) -> bool:
    fn = disc.fn(fid)
    return bool(fn.cls) and fn.name in MODEL_METHODS and fn.device_work
