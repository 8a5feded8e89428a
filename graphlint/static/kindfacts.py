"""The second round's kind facts as strings: how :mod:`.valueflow` spells a shape in a fact
(``ret:<callee key>=<shape>``, ``param:...``, ``field:...``) and how the walk of a file reads them
back into its oracle.

Its own unit beside :mod:`.valuekinds` (what a value is, and how kinds join) because it is only
the wire format between the link and the second walk: the spelling changes without the kinds.
"""

from __future__ import annotations

import libcst as cst

from graphlint.static.tensors import TensorOracle
from graphlint.static.valuekinds import AGREED, HOST, MASK, SCALAR, TENSOR, set_kind

#: parameter facts that say every caller passes a tensor
GIVEN_TENSORS = (TENSOR, MASK, SCALAR, HOST)


def encode(shape) -> str:
    return "(" + ",".join(shape) + ")" if isinstance(shape, tuple) else shape


def decode(text: str):
    return tuple(text[1:-1].split(",")) if text.startswith("(") else text


def parse_facts(names: frozenset[str]) -> tuple[dict[str, object], dict[str, list[tuple[str, str]]]]:
    """The second round's facts (:mod:`.valueflow`): ``ret:<callee key>=<shape>`` -> {key: shape};
    ``param:<qualname>:<name>=<kind>`` (what every caller passes) -> {qualname: [(name, kind)]};
    ``field:<qualname>:<obj.f>=<kind>`` (what ``obj``'s class field holds, :mod:`.fieldkinds`) ->
    {qualname: [("." + spelling, kind)]} (a parameter's name has no dot)."""
    returns: dict[str, object] = {}
    params: dict[str, list[tuple[str, str]]] = {}
    for fact in names:
        if fact.startswith("ret:"):
            key, _, shape = fact[4:].rpartition("=")
            returns[key] = decode(shape)
        elif fact.startswith(("param:", "field:")):
            head, _, kind = fact[6:].rpartition("=")
            qualname, _, name = head.rpartition(":")
            params.setdefault(qualname, []).append(("." + name if fact[0] == "f" else name, kind))
    return returns, params


def seed_params(params: list[tuple[str, str]], oracle: TensorOracle) -> None:
    for name, kind in params:
        if name[0] == ".":
            oracle.fn.fields[name[1:]] = kind
        else:
            set_kind(cst.Name(name), kind, oracle)
            if kind in AGREED:  # what every caller passes (STEP and WEIGHT are what some caller does)
                oracle.fn.given.add(name)
            if kind in GIVEN_TENSORS:  # every caller passes a tensor (:mod:`.typetests`)
                oracle.fn.given_tensors.add(name)
