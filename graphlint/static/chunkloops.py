"""A loop over chunks around a denoising loop of the same function: the nested loop is the step loop.

A video or speech generator denoises one clip (section, chunk) at a time::

    while True:                                  # one clip an iteration
        cond = self.vae.encode([frames_of_last_clip.to(dev)])   # the clip's conditioning
        for i, t in enumerate(timesteps):         # the denoising loop: 25-50 model steps
            noise = self.model(latents, t, cond)
            latents = scheduler.step(noise, t, latents)
        frames_of_last_clip = self.vae.decode(latents)

Both loops feed a model call's output back, so :mod:`.loops` records both. The nested one is a loop
over a sampler's schedule (:mod:`.scheduleloops`) or an integrator's steps (:mod:`.solverloops`): each
pass of the outer loop runs a whole denoising, many model steps. By the labels' rule (an ODE or
denoising loop is a per-step loop wherever it runs; code that runs once around it -- per-chunk
set-up, the encoder before it, the decoder after it -- is not per step), the nested loop is the step
loop and the outer loop's own code runs once per chunk. The model calls the outer loop makes itself
(the VAE's encode and decode) are the chunk's, not a step's: unlike a token loop feeding a prompt
in chunks through a nested loop and then sampling (:meth:`.tokenloops.TokenLoops.wraps_inner_loop`),
the outer loop picks no token from a model's output (``LoopInfo.picked`` / ``sampled`` empty). A
per-token loop whose step runs a denoising head (a speech LM sampling a token, then a flow head over
its latent) picks its token, and stays the per-token loop. The outer loop is listed as an outer loop
(``graphlint entries``), running the nested one."""

from __future__ import annotations

def wraps_denoising(fn, loop_ids: frozenset[int], entered: set[int]) -> bool:
    """Whether the one loop of ``loop_ids`` (a per-token loop of the function ``fn``) runs chunks
    around a denoising loop of ``fn`` that is an entry itself (``entered``: the function's loops
    that are): see the module docstring. A solver loop is no entry of its own (per step where its
    caller is, :mod:`.solverloops`), so only a schedule loop makes the loop around it a chunk loop."""
    mine = [loop for loop in fn.loops if loop.id in loop_ids]
    if len(mine) != 1 or mine[0].picked or mine[0].sampled or mine[0].schedule:
        return False
    return any(loop.id != mine[0].id and loop.schedule and loop.id in entered and inside(loop.where, mine[0].where)
               for loop in fn.loops)


def inside(inner: tuple, outer: tuple) -> bool:
    """Whether the loop at ``inner`` is nested in the loop at ``outer`` (their positions as sites store them)."""
    return len(inner[0]) > len(outer[0]) and inner[0][:len(outer[0])] == outer[0]
