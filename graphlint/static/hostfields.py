"""Fields a constructor is handed a host tensor for: ``KVCache(data, lengths[i])``, with ``lengths``
made with ``device="cpu"``, stores a host tensor in ``self.current_length`` (``self.current_length =
current_length`` in ``__init__``), and the cache's ``self.current_length.item()`` reads host memory.

:mod:`.fieldkinds` answers such a field for the methods of its class (``host_methods``) when every
construction agrees (:meth:`.fieldkinds.FieldKinds._stored`); this only picks the candidates cheaply:
a field an ``__init__`` stores a parameter in, of a class some call passes a host tensor
(:attr:`.facts.CallSite.kinds`). Most projects pass none, and then nothing is asked.
"""

from __future__ import annotations

from graphlint.static.facts import ModuleInfo
from graphlint.static.flowir import last_name
from graphlint.static.valuekinds import HOST


def handed_host(infos: list[ModuleInfo]) -> set[str]:
    """Field names stored from an ``__init__`` parameter of a class some call hands a host tensor."""
    classes = {last_name(site.expr) for info in infos for fn in info.functions.values() for site in fn.calls
               if site.kinds and not site.reference and (HOST in site.kinds[0] or any(k == HOST for _, k in site.kinds[1]))}
    classes.discard(None)
    if not classes:
        return set()
    return {attr for info in infos for attr, values in info.field_stores.items()
            if any(type(v) is tuple and len(v) == 3 and v[0] == "p" and v[1].endswith(".__init__")
                   and v[1][:-9].rpartition(".")[2] in classes for v in values)}
