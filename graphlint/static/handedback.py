"""Whether a model call made after a decode hands its result back to the decode (:mod:`.outerloops`).

A function that runs a decoder (a function holding a per-token or per-step loop) and then a model on
what the decode produced is one of two things. A *speculative step*: the draft loop proposes tokens,
the target model verifies them, and what the verification decides comes back -- returned to the loop
that calls the step, or carried into the next draft's input (``ids = cat(ids, accepted)`` then
``draft(ids)``). Or a *chunk's post-processing*: a video section sampled by a denoising loop, then
decoded by the VAE, read back and written to a file -- the VAE's pixels never reach the sampler
again, and the function returns nothing; the loop calling it once per job, and its own loop over
sections, run whole decodes, once per request or chunk.

Decided from the function's name flow (``FunctionInfo.derives`` and ``arg_calls``, :mod:`.stepflow`,
flow-insensitive): the names the later calls bind, and every name derived from them, must reach
neither the arguments (nor the receiver) of a call that leads to the decoder, nor an object's field
(state the decode may read), and the function must return no value. Whatever is not known -- no name
flow recorded, a later call whose value is used where no name binds it, a call to the decoder whose
arguments were not recorded -- counts as handed back: the loop around stays per-token, as before."""

from __future__ import annotations

from graphlint.static.stepflow import derived


def hands_back(fn, later: list, decoding: list) -> bool:
    """Whether the results of ``later`` (call sites after the first call leading to a decoder, each
    reaching a model) may come back to the decode that ``decoding`` (the calls leading to a decoder)
    run in ``fn`` -- see the module docstring; True when unknown."""
    if not later:
        return False
    if not fn.derives or fn.returns is not None:
        return True
    bound: set[str] = set()
    for site in later:
        for order in _orders(fn, site):
            names = {target for at, target, _ in fn.derives if at == order}
            if not names and not any(a.order == order and a.expr == site.expr and a.dropped for a in fn.arg_calls):
                return True  # its value is used where no name binds it (an argument, a test): unknown
            bound |= names
    reached = derived(bound, fn.derives)
    if any("." in name for name in reached):
        return True  # stored on an object: state the decode may read
    given: set[str] = set()
    for site in decoding:
        calls = [a for a in fn.arg_calls if a.expr == site.expr]
        if not calls:
            return True  # what the decoder is given was not recorded
        given |= _expr_names(site.expr)
        for a in calls:
            given.update(n for names in a.args for n in names)
            given.update(n for _, names in a.kwargs for n in names)
    return bool(reached & given)


def _orders(fn, site) -> set[int]:
    """Every statement making the call ``site`` (``CallSite`` keeps the first place of a callee)."""
    return {site.order} | {a.order for a in fn.arg_calls if a.expr == site.expr}


def _expr_names(expr) -> set[str]:
    """The plain names a callee in flow IR reads: ``drafter`` of ``drafter.generate``."""
    if not isinstance(expr, tuple) or not expr:
        return set()
    if expr[0] == "n" and len(expr) == 2 and isinstance(expr[1], str):
        return {expr[1]}
    out: set[str] = set()
    for part in expr[1:]:
        if isinstance(part, tuple):
            out |= _expr_names(part)
    return out
