"""Fields that hold a library module's attribute: a kernel binding, an activation, a class -- no model.

:mod:`.installed` gives a call of a field of ``self`` that holds only library values (``self.model(x)``,
a model a loader handed the constructor) every piece of code the program installed into library
modules: such a field may hold a library model whose ``forward`` was patched. A field the program
fills with *an attribute of an imported module* -- ``self.fill = getattr(kernels, "fill_bf16", None)``
(a compiled extension's function, looked up once at construction), ``self.act = F.gelu``,
``self.norm_cls = nn.LayerNorm`` -- holds that module's function or class, never an object the
program built or was handed, so no patched ``forward`` runs when it is called. Measured on flashrt
(fresh32): a static engine's ``self.fill_flat_velocity(...)``, a ``getattr`` of its CUDA extension,
was taken for every hook the package installs into the upstream pipeline's classes -- among them the
UniPC sampler's ``forward`` hook, whose per-schedule coefficient precompute (host reads by design)
then counted as code of the captured velocity step.

A field qualifies when every store of that attribute on ``self``, in any class of the checked code,
is such an attribute chain (``mod.f``, ``mod.sub.f``, an imported name itself) of a name bound by an
``import``, module-level or local; any other store (a call's result, a parameter, a tuple unpacked)
keeps the field open, as before. ``None`` stores are no values and do not count.
"""

from __future__ import annotations

SELF = ("n", "self")


def library_fields(infos) -> frozenset[str]:
    """The attribute names whose every ``self.<name> = ...`` store is an imported module's attribute."""
    kinds: dict[str, bool] = {}
    for info in infos:
        for flow in info.flows.values():
            stmts = getattr(flow, "stmts", None) or ()
            local = {st[1][1] for st in stmts
                     if st[0] == "=" and len(st) > 2 and st[1][0] == "n" and st[2][0] == "i"}
            for st in stmts:
                if st[0] != "=" or len(st) < 3:
                    continue
                target = st[1]
                if target[0] == "a" and target[1] == SELF:
                    kinds[target[2]] = kinds.get(target[2], True) and _imported_attr(st[2], info.imports, local)
                else:
                    for attr in _self_attrs(target):  # a tuple unpacked into fields: open
                        kinds[attr] = False
    return frozenset(attr for attr, library in kinds.items() if library)


def _imported_attr(value: tuple, imports: dict, local: set) -> bool:
    while value[0] == "a":
        value = value[1]
    return value[0] == "n" and (value[1] in imports or value[1] in local)


def _self_attrs(target: tuple):
    if not isinstance(target, tuple) or not target:
        return
    if target[0] == "a" and target[1] == SELF and isinstance(target[2], str):
        yield target[2]
        return
    for part in target[1:]:
        if isinstance(part, tuple):
            yield from _self_attrs(part)
