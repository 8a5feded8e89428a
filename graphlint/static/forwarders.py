"""Pure forwarders: ``def generate_next(self, *args, **kwargs): return self.generate_one(*args,
**kwargs)``. Such a call passes no value of its own, so what it passes is what every call of the
forwarder passes, position for position: the walker marks the call (:data:`FORWARDED`, the call
site's argument kinds in :mod:`.valuekinds`) and :mod:`.paramkinds` replaces it by the
forwarder's own calls. Kept apart from :mod:`.valuekinds`, which both read (and which is at its
size)."""

from __future__ import annotations

import libcst as cst

from graphlint.static.tensors import TensorOracle

#: a call's argument kinds that stand for what every call of its caller passes, position for
#: position and keyword for keyword (:func:`forwards_own_stars`; expanded by :mod:`.paramkinds`)
FORWARD = "^*"
FORWARDED = ((FORWARD,), ())


def forwards_own_stars(call: cst.Call, oracle: TensorOracle) -> bool:
    """``self.generate_one(*args, **kwargs)`` in ``def generate_next(self, *args, **kwargs)``: the
    call hands on exactly the caller's own ``*args`` (and ``**kwargs``), never rebound."""
    star, double = oracle.fn.star_params
    spelled = [(a.star, a.value.value) for a in call.args if type(a.value) is cst.Name]
    if star is None or len(spelled) != len(call.args) or star in oracle.fn.tensors:
        return False
    return spelled in ([("*", star)], [("*", star), ("**", double)]) and (double is None or len(spelled) == 2)
