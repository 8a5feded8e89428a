"""Where a class's tensor fields live as its load method leaves them: the offloading pattern.

An offloading engine keeps each layer's weights on the host in objects of a small class and, every
step, copies one object's fields into a device slot of the same class while another slot computes
(``self.w.copy_(other.w, non_blocking=True)``). Whether that copy is a DMA or a synchronous staging
through a bounce buffer is decided where the host tensors were made: a field its load method binds
with ``.pin_memory()`` (or ``pin_memory=True``) is pinned; one bound to a library model's tensor
(``block.attn.proj.weight.detach()``) and never pinned is pageable -- *if* it is on the host at all.
The load method does not say where the library model lives, so a bound field counts as host memory
only with evidence from the class itself:

- a method moves the field to a device (``self.w = self.w.to(device)``): as loaded it is elsewhere;
- the same method pins another field taken from the same parameter (``self.q =
  module.q.detach().pin_memory()`` beside ``self.bias = module.bias.detach()``): ``pin_memory()``
  only works on host tensors, so the parameter's tensors are on the host;
- or the field is bound to a device-less torch factory (:mod:`.pageable`).

A field some method pins is never reported (it may be pinned before the copies run). The copy is
reported (GL420, :mod:`.matchers.host_copy`) from a parameter annotated with a class of the file
(``def fill(self, other: BlockWeights)``), into a ``self`` field some binding of which puts it on a
device (the slot the class reserves with ``torch.empty_like(other.w).to(device)``). A class with no
such evidence (its tensors may live on the GPU: a copy between two device objects) says nothing.
Decided per file, when both classes are read to their end.
"""

from __future__ import annotations

from collections import defaultdict

import libcst as cst

from graphlint.static.joins import JOINS
from graphlint.static.matchers.call_args import keyword, positional
from graphlint.static.names import resolve
from graphlint.static.pageable import KEEP_DEVICE, is_factory_call
from graphlint.static.staging import is_pinned_value

#: what a field binding says (one per binding; a field may have several)
PINNED, DEVICE, MOVED, LOADED, HOST = "pinned", "device", "moved", "loaded", "host"
#: calls and attributes that keep a tensor where it is, besides :data:`.pageable.KEEP_DEVICE`
_KEEP = KEEP_DEVICE | {"detach", "data", "t_", "requires_grad_"}


def strip(node: cst.BaseExpression) -> cst.BaseExpression:
    """The tensor under views, casts and ``.detach()`` / ``.data`` (``w.detach().contiguous()`` -> ``w``)."""
    while True:
        kind = type(node)
        if kind is cst.Subscript:
            node = node.value
        elif kind is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value in _KEEP:
            node = node.func.value
        elif kind is cst.Attribute and node.attr.value == "data":
            node = node.value
        else:
            return node


def param_root(node: cst.BaseExpression, params: set[str]) -> str | None:
    """``block.attn.proj.weight`` (under views and casts) -> "block" when ``block`` is a parameter."""
    node = strip(node)
    if type(node) is not cst.Attribute:
        return None
    while type(node) is cst.Attribute:
        node = node.value
    return node.value if type(node) is cst.Name and node.value in params and node.value not in ("self", "cls") else None


def _placed(call: cst.Call, imports: dict[str, str]) -> bool:
    """``x.to(device)`` (not a dtype), ``x.cuda()``, ``torch.empty_like(x, device=d)`` (not the CPU)."""
    func = call.func
    if type(func) is cst.Attribute and func.attr.value == "cuda":
        return True
    if type(func) is cst.Attribute and func.attr.value == "to":
        args = positional(call)
        device = keyword(call, "device") or (args[0] if args else None)
        return device is not None and _names_device(device, imports)
    device = keyword(call, "device")
    return device is not None and (resolve(func, imports) or "").startswith("torch.") and _names_device(device, imports)


def _names_device(node: cst.BaseExpression, imports: dict[str, str]) -> bool:
    """A device, not a dtype nor the CPU: a string other than "cpu", a name or attribute spelling a
    device (``device``, ``self.device``, ``x.device``), ``torch.device(...)`` of one."""
    if type(node) is cst.SimpleString:
        return str(node.evaluated_value).split(":")[0] not in ("cpu", "meta")
    if type(node) is cst.Call and resolve(node.func, imports) == "torch.device":
        args = positional(node)
        return bool(args) and _names_device(args[0], imports)
    name = node.value if type(node) is cst.Name else node.attr.value if type(node) is cst.Attribute else ""
    return "device" in name.lower() or name in ("dev", "gpu")


def binding(attr: str, value: cst.BaseExpression, params: set[str], oracle, imports: dict[str, str]) \
        -> tuple[str, str | None] | None:
    """What ``self.<attr> = value`` says of the field: (kind, the parameter it was loaded from)."""
    if type(value) is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value == "pin_memory":
        return PINNED, param_root(value.func.value, params)
    if is_pinned_value(value, oracle):
        return PINNED, None
    if type(value) is not cst.Call and type(value) is not cst.Attribute and type(value) is not cst.Subscript:
        return None
    if type(value) is cst.Call:
        if _placed(value, imports):
            inner = strip(value.func.value) if type(value.func) is cst.Attribute else None
            moved = type(inner) is cst.Attribute and type(inner.value) is cst.Name and inner.value.value == "self" \
                and inner.attr.value == attr
            return (MOVED if moved else DEVICE), None
        if is_factory_call(value, imports, oracle.default_device):
            return HOST, None
        if resolve(value.func, imports) in JOINS and value.args and type(value.args[0].value) in (cst.List, cst.Tuple):
            roots = {param_root(el.value, params) for el in value.args[0].value.elements}
            root = roots.pop() if len(roots) == 1 else None
            return (LOADED, root) if root is not None else None
    root = param_root(value, params)
    return (LOADED, root) if root is not None else None


class LoadedFields:
    """Per class of one file, what every ``self.<field> = ...`` in its methods said."""

    def __init__(self):
        #: class short name -> field -> [(kind, method, root)]
        self.seen: dict[str, dict[str, list[tuple[str, str, str | None]]]] = defaultdict(lambda: defaultdict(list))
        self.done: dict[str, tuple[frozenset[str], frozenset[str]]] = {}  # class -> (pageable, on a device)

    def note(self, cls: str, method: str, attr: str, found: tuple[str, str | None] | None) -> None:
        if found is not None:
            self.seen[cls][attr].append((found[0], method, found[1]))

    def finish(self, cls: str, pinned_attrs: set[str], pageable_attrs: set[str]) -> None:
        """The class is read to its end: its pageable fields and its fields put on a device."""
        fields = self.seen.pop(cls, {})
        pinned_roots = {(method, root) for entries in fields.values() for kind, method, root in entries
                        if kind == PINNED and root is not None}
        pageable, placed = set(), set()
        for attr, entries in fields.items():
            kinds = {kind for kind, _, _ in entries}
            if kinds & {DEVICE, MOVED}:
                placed.add(attr)
            if PINNED in kinds or attr in pinned_attrs:
                continue
            loaded = [(method, root) for kind, method, root in entries if kind == LOADED]
            if HOST in kinds or attr in pageable_attrs or loaded and (
                    MOVED in kinds or any(pair in pinned_roots for pair in loaded)):
                pageable.add(attr)
        self.done[cls] = (frozenset(pageable), frozenset(placed))

    def pageable_copy(self, source_cls: str, attr: str, dest_cls: str, dest_attr: str) -> bool | None:
        """Whether copying ``source_cls``'s field into ``dest_cls``'s field is a pageable upload;
        None while either class is not read to its end."""
        if source_cls not in self.done or dest_cls not in self.done:
            return None
        return attr in self.done[source_cls][0] and dest_attr in self.done[dest_cls][1]
