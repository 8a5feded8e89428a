"""Names bound to a tensor type: ``Activations = jt.Float[torch.Tensor, "*b t d"]``.

A parameter annotated with such an alias is a tensor as much as one annotated ``Tensor``. Read as
any other name, the annotation said "not a tensor" and outranked the presumption a ``forward``'s
bare parameter gets, so model code annotated through a shared typing module (jaxtyping shapes,
``TensorLike = torch.Tensor``) held no tensors at all. A module's own aliases are found in order,
at module level; another module's arrive as second-round facts (``alias:<local spelling>``,
:mod:`.crossfile`), only for the imported spellings the file annotates with.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import libcst as cst

from graphlint.static.names import dotted_name, record_import

#: the fact prefix of an imported alias (:func:`.kindfacts.parse_facts` leaves it alone)
ALIAS = "alias:"


def module_aliases(body: Sequence[cst.CSTNode], imports: dict[str, str], known: frozenset[str],
                   is_tensor) -> frozenset[str]:
    """``known`` (the imported aliases) and the module-level names this body binds to a tensor
    type, in order (an alias of an alias counts): ``X = <annotation>`` or ``X: TypeAlias = ...``.
    A string is no alias (``NAME = "Tensor"`` is data). ``is_tensor``: :func:`.params.is_tensor_annotation`;
    ``imports``: the walk's, still empty before it (the body's own imports are read here, in order)."""
    found, imports = set(known), dict(imports)
    for stmt in body:
        if type(stmt) is not cst.SimpleStatementLine:
            continue
        for small in stmt.body:
            if type(small) in (cst.Import, cst.ImportFrom):
                record_import(small, imports)
                continue
            if type(small) is cst.Assign and len(small.targets) == 1:
                target, value = small.targets[0].target, small.value
            elif type(small) is cst.AnnAssign and small.value is not None:
                target, value = small.target, small.value
            else:
                continue
            if type(target) is cst.Name and type(value) is not cst.SimpleString \
                    and is_tensor(value, imports, frozenset(found)):
                found.add(target.value)
    return frozenset(found)


def own_aliases(aliases: frozenset[str]) -> set[str]:
    """The module's own (a bare name): what other files may import."""
    return {name for name in aliases if "." not in name}


def imported_spellings(node: cst.BaseExpression | None, imports: dict[str, str]) -> Iterable[str]:
    """The dotted names in an annotation that start at an imported name (``at.Activations``,
    ``Activations`` from ``from .types import Activations``): the ones an imported alias may be."""
    stack = [node] if node is not None else []
    while stack:
        node = stack.pop()
        name = dotted_name(node) if type(node) in (cst.Name, cst.Attribute) else None
        if name is not None:
            if name.partition(".")[0] in imports:
                yield name
            continue
        stack.extend(child for child in node.children if isinstance(child, cst.BaseExpression | cst.SubscriptElement
                                                                    | cst.Index | cst.BaseSlice))
