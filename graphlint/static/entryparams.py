"""An entry's parameters: unknown, since its users call it -- but for an option every call of the
analysed code leaves at None.

A per-step loop's function is called from outside (:func:`.link._hot`: its parameters are unknown to
:class:`.argvalues.ArgValues`), yet the package often calls it itself: a diffusion sampler's
``p_sample_loop_progressive(model, shape, cond_fn=None, ...)`` is what ``p_sample_loop`` runs, which
the package's text-to-speech API calls with no ``cond_fn``. A parameter that defaults to None and that
every call of it in the analysed code, hot or not, leaves at None (spelled, omitted, or handed on from
a caller's own parameter that every call leaves so, :meth:`.argvalues.ArgValues.any_caller`) is None:
its ``if cond_fn is not None:`` branch -- classifier guidance nobody asks for -- is no step's. Nothing
calls the function, or one call passes something else or something unknown: unknown, as before.
"""

from __future__ import annotations

NONE_ONLY = frozenset((None,))


def outside_env(values, fid) -> dict | None:
    """The environment of an entry ``fid`` for :meth:`.argvalues.ArgValues.solve`: None (unknown,
    :data:`.argvalues.TOP`) unless some parameter is an option every analysed call leaves at None;
    then each parameter unknown but those, and its ``*args`` / ``**kwargs`` unknown."""
    flow, fn = values.fns.get(fid, (None, None))
    if flow is None:
        return None
    names = (*flow.call_params(), *flow.kwonly)
    none = [n for n in names if fn.defaults.get(n) == ("c", None) and values.any_caller(fid, n) == NONE_ONLY]
    if not none:
        return None
    env: dict = dict.fromkeys((*names, "*", "**"), None)
    env.update(dict.fromkeys(none, NONE_ONLY))
    return env
