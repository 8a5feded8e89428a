"""A loop over a sampler's schedule is a step loop: ``for t in timesteps: ...; x = sched.step(out, t, x)``.

A diffusion (or flow) sampler iterates the *values* of its schedule, not ``range(n)``::

    for _, t in enumerate(tqdm(timesteps)):
        model = self._pick_expert(t)           # an expert chosen per step
        eps = model(latents, t=torch.stack([t]))
        latents = [scheduler.step(eps, t, latents[0])[0]]

Each iteration is one denoising step: it runs the model and carries the latent into the next
through the scheduler's step, which takes the step's own value. A loop over layers, images or
requests hands its element to no such step. So a ``for`` over anything whose body calls a ``.step``
method -- of an object the element does not pick -- passing the element (or what the body computed
from it) counts steps like ``range`` (:func:`.loopnames.eligible`); whether it is a per-step loop is
then decided as for any loop: its call must feed its output back and reach a model (:mod:`.loops`,
:mod:`.entries`).

In such a loop a callee chosen from the element is a model switch -- the high- and low-noise
experts of a mixture picked by the timestep -- not a layer the loop walks: the call stays the
loop's model call (:attr:`.loops.LoopFrame.picked` is not filled).

Where the engine captures its step (a captured region, or a replay the call graph reaches), an eager
schedule loop is no entry of its own (:meth:`.tokenloops.TokenLoops.token_loops`): such an engine's
decode step is the captured one, and its eager denoising stage -- a diffusion decoder turning the
generated tokens into video, once per chunk after the decode -- runs once per request, as the
labelled capturing engines read it; a schedule loop the call graph makes a host step (a compiled
denoiser replayed per step) stays one. Where nothing is captured, the denoising loop is the engine's
step loop."""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import preorder
from graphlint.static.loopnames import names_read


def schedule_loop(stmt: cst.For) -> bool:
    """Whether the ``for`` hands its element (or a name bound from it) to a ``.step(...)`` call of an
    object the element does not pick (see the module docstring)."""
    derived = names_read(stmt.target)
    if not derived:
        return False
    steps = []
    for node in preorder(stmt.body):
        if type(node) is cst.Assign and names_read(node.value) & derived:
            for target in node.targets:
                if type(target.target) is cst.Name:
                    derived.add(target.target.value)
        elif type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "step":
            steps.append(node)
    return any(not names_read(call.func.value) & derived
               and any(names_read(a.value) & derived for a in call.args) for call in steps)
