"""Parameters reached indirectly: what a weight cast (GL206) needs to know beyond ``self.w``.

A parameter or buffer of the module is converted every step wherever the code reaches it, not only
as ``self.w.float()``. Two shapes hide it from the class's own facts:

- an element of a parameter container, ``self.gate["bias"].float()`` with ``self.gate =
  nn.ParameterDict({...})`` (or a ``ParameterList``): every element is an ``nn.Parameter``, so a
  subscript of the container is a weight (the container itself is a module: ``self.gate.float()``
  converts it in place, once, and is not one);
- a parameter handed to a helper that casts it: ``attention(q, k, v, self.sinks)`` with ``sinks =
  sinks.view(1, h, g, 1, 1).float()`` inside. The argument's kind is :data:`.valuekinds.WEIGHT`,
  and a helper that casts a parameter (:func:`cast_root`, ``FunctionInfo.cast_names``) learns
  that its parameter holds a weight when SOME caller passes one (:mod:`.valueflow`): whenever that
  caller runs, the cast converts the weight again (a may-fact, as a per-step int is, decided per
  call site; a constructor's call converts once and is left out).

A view of a weight is the weight's data (``w.view(...)``, ``w.T``, ``w[0]``): its cast converts it."""

from __future__ import annotations

import libcst as cst

from graphlint.static.cstwalk import self_attr

#: parameter containers of ``torch.nn``: every element is a parameter
PARAM_CONTAINERS = frozenset(("torch.nn.ParameterDict", "torch.nn.ParameterList",
                              "torch.nn.modules.container.ParameterDict", "torch.nn.modules.container.ParameterList"))
#: the casts GL206 looks at (``rules/allocation.yaml``)
CAST_METHODS = frozenset(("float", "half", "bfloat16", "double", "to", "type"))
#: methods whose result is a view of the receiver's data (the same elements, reshaped)
VIEW_METHODS = frozenset(("view", "reshape", "unsqueeze", "squeeze", "transpose", "permute", "t", "expand",
                          "flatten", "unflatten", "view_as", "reshape_as", "expand_as", "narrow", "detach"))
#: views whose elements are no longer in memory order
REORDERS = frozenset(("transpose", "permute", "t"))


def viewed(node: cst.BaseExpression, also: frozenset = frozenset()) -> cst.BaseExpression:
    """What ``node`` is a view of: ``w.view(...).T[0]`` -> ``w``; ``also``: methods to see through as
    well (casts: ``w.float()[0]`` keeps ``w``'s values)."""
    methods = VIEW_METHODS | also
    while True:
        if type(node) is cst.Subscript:
            node = node.value
        elif type(node) is cst.Attribute and node.attr.value in ("T", "mT"):
            node = node.value
        elif type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value in methods:
            node = node.func.value
        else:
            return node


def transposed(node: cst.BaseExpression) -> bool:
    """A view that reorders the dimensions (``w.t()``, ``w.T``, ``w.transpose(0, 1)``): made contiguous,
    it copies every element, where ``.contiguous()`` of the weight itself returns it unchanged."""
    while True:
        if type(node) is cst.Attribute and node.attr.value in ("T", "mT"):
            return True
        if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value in VIEW_METHODS:
            if node.func.attr.value in REORDERS:
                return True
            node = node.func.value
        elif type(node) is cst.Subscript:
            node = node.value
        else:
            return False


def converts(call: cst.Call) -> bool:
    """A cast (:data:`CAST_METHODS`), or ``.contiguous()`` of a transposed view: a converted copy."""
    func = call.func
    if type(func) is not cst.Attribute:
        return False
    return func.attr.value in CAST_METHODS or func.attr.value == "contiguous" and transposed(func.value)


def cast_root(call: cst.Call) -> str | None:
    """The local name whose data ``call`` converts (``sinks.view(...).float()`` -> ``sinks``), else None."""
    func = call.func
    if type(func) is not cst.Attribute or not converts(call):
        return None
    root = viewed(func.value)
    return root.value if type(root) is cst.Name else None


def is_weight(oracle, node: cst.BaseExpression) -> bool:
    """``self.w`` (or a view of it: ``self.w.T``, ``self.cache[:n]``, ``w.view(...)``) where ``w`` is a
    parameter or buffer (``oracle``: :class:`.tensors.TensorOracle`), a sub-layer's weight
    (``self.embed.weight``), an element of a parameter container, or a parameter some caller hands
    a weight."""
    seen, node = node, viewed(node)
    if type(node) is cst.Name:
        return node.value in oracle.fn.weights
    attr, cls = self_attr(node), oracle.cls
    if cls is None:
        return False
    if attr is not None and node is not seen and attr in cls.param_containers:
        return True  # ``self.gate["bias"]``: an element of an ``nn.ParameterDict``
    if attr is None and type(node) is cst.Attribute:  # ``self.embed.weight``
        layer = self_attr(node.value)
        return layer is not None and node.attr.value in cls.layer_attrs.get(layer, ())
    return attr is not None and attr in cls.weight_attrs and attr not in oracle.fn.converted
