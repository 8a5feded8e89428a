"""What a truth test of a parameter reads when every hot call passes it a Python value.

``prev = cache[i] if cache else None`` in an attention ``forward`` whose ``cache`` defaults to ``None``:
unannotated, the walk presumes the parameter a tensor and the test a read-back. Its callers say what
it is: a Python list of per-row caches (``[cache.get(i, b) for b in range(B)] if cache is not None else
None``), the package's own ``KVCache(...)`` (a class with no ``__bool__`` or ``__len__``: Python answers
from identity), ``None`` -- no device data in any of them, so the test reads nothing.

The truth-test rule flags such a test ``py-param:<name>`` (a parameter presumed a tensor, tested as it
came in); :class:`.hostparams.HostParams` drops it when every hot call edge into the function passes
the parameter one of :data:`NO_TENSOR` (:attr:`.facts.CallSite.kinds`), an instance of such a class
(:func:`instance_kind`), or a parameter of its own that every hot edge into the caller passes one, and
so on -- the same walk along the points-to call graph as for a host tensor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphlint.static.tensornames import MODULE_CONTAINERS

if TYPE_CHECKING:  # the walk imports this module through :mod:`.hostparams`, below the kinds' own
    from graphlint.static.facts import ModuleInfo
    from graphlint.static.index import Index

FLAG = "py-param:"
#: argument kinds that hold no tensor, whatever a truth test of them asks: :data:`.valuekinds.NONE`,
#: ``LIST``, ``NUMBER`` (spelled here: :mod:`.valuekinds` imports the walk's oracles, which import this)
NONE, NO_TENSOR = "none", ("none", "list", "number")
#: what answers ``bool(obj)`` of an object besides identity
TRUTH_METHODS = ("__bool__", "__len__")
#: external bases whose instances Python answers a truth test of on the host (``nn.Module`` has neither
#: method; a ``ModuleList``'s ``__len__`` counts its modules)
HOST_BASES = MODULE_CONTAINERS | {"Module"}


def no_tensor(kind: str, info: "ModuleInfo | None", index: "Index") -> bool:
    """An argument of ``kind`` (in the caller's module ``info``) holds no tensor: a list, a number,
    ``None``, or what a constructor of a class :func:`instance_kind` vouches for returned (``@KVCache#``)."""
    if kind in NO_TENSOR:
        return True
    if kind[:1] != "@" or not kind.endswith("#") or info is None:
        return False
    name = kind[1:-1]
    return "." not in name and name[:1].isupper() and instance_kind(info, name, index)


def instance_kind(info: "ModuleInfo", name: str, index: "Index") -> bool:
    """``name(...)`` constructs a class of the project whose truth test Python answers on the host: no
    ``__bool__``/``__len__`` in its classes, and every base one of them, a builtin (not recorded) or an
    ``nn.Module`` container; not a ``torch.Tensor`` subclass or a base the files do not hold."""
    ref = (info, name) if name in info.classes else None
    if ref is None and name in info.imports:
        hit = index.resolve(info, info.imports[name])
        ref = (hit[1], hit[2]) if hit is not None and hit[0] == "class" else None
    if ref is None:
        return False
    for owner, cls in index.mro(ref):
        klass = owner.classes[cls]
        if any(m in klass.methods for m in TRUTH_METHODS):
            return False
        if any(index.class_ref(owner, base) is None and not _host_base(base) for base in klass.bases):
            return False
    return True


def _host_base(base: tuple) -> bool:
    return base[0] == "dotted" and base[1].startswith("torch.nn.") and base[1].rpartition(".")[2] in HOST_BASES
