"""Parameter facts that overrule an annotation, and the one extra proof they need.

``n: Tensor`` that every caller passes a Python int, ``ids: list[int]`` or an indexing position
``input_pos: int`` that every caller passes a device tensor (:mod:`.valueflow`; a gather by a device
index freezes no Python int): what callers pass is what the parameter holds, and the
annotation is only the author's word for the callers graphlint cannot see. So the annotation
gives way only when every caller is seen: the call sites under the function's name all resolve
(:class:`.paramkinds.ParamKinds`), and no code uses the function as a value (handed to a call,
stored in a table, returned, named by a string) -- whoever receives it calls it with anything.
Facts that agree with the annotation (or where there is none) need no such proof, as before.
"""

from __future__ import annotations

from graphlint.static.facts import FunctionInfo, ModuleInfo
from graphlint.static.valuekinds import MASK, NUMBER, TENSOR


#: decorators whose result calls the function with the arguments it is given
PASS_THROUGH = frozenset(("abstractmethod", "lru_cache", "cache", "no_grad", "inference_mode", "enable_grad",
                          "compile", "disable", "allow_in_graph", "wraps", "contextmanager", "script"))


def overrules(fn: FunctionInfo, name: str, kind: str) -> bool:
    """The fact says the parameter is what its annotation says it is not."""
    return (kind == NUMBER and name in fn.annotated_tensors) or (kind in (TENSOR, MASK) and name in fn.annotated_lists) \
        or (kind == TENSOR and name in fn.annotated_ints)


def used_as_values(infos: list[ModuleInfo], names: set[str], methods: frozenset[str] | set[str] = frozenset()) -> set[str]:
    """Those of ``names`` some scope's flow (:mod:`.flows`) uses other than by calling them: a name or
    an attribute spelled so (``hooks.add(pad)``, ``{"pad": self.pad}``, ``return pad``) or an
    identifier string (``getattr(self, "pad")``). A spelling matches whatever it names: a miss costs
    a fact, never a finding. Of ``methods`` (names only methods bear) a bare name counts only in a
    class body: elsewhere ``apply_pos_emb`` is a local flag spelled like the method (``Config(apply_pos_emb=
    apply_pos_emb)``), and the method itself is reached only through an attribute or a string."""
    found: set[str] = set()
    if not names:
        return found
    functions = names - methods
    for info in infos:
        for scope, flow in info.flows.items():
            bare = names if scope in info.classes else functions
            for stmt in flow.stmts:
                if stmt[0] == "=":
                    _scan(stmt[2], names, bare, found)
                    if stmt[1][0] in ("a", "s"):
                        _scan(stmt[1][1], names, bare, found)
                elif stmt[0] in ("e", "r", "in"):
                    _scan(stmt[1], names, bare, found)
                elif stmt[0] != "*":
                    _scan(stmt[1:], names, bare, found)
    return found


def _scan(node, names: set[str], bare: set[str], found: set[str]) -> None:
    stack = [node]
    while stack:
        node = stack.pop()
        if type(node) is not tuple and type(node) is not list:
            continue
        if not node:
            continue
        tag = node[0]
        if type(tag) is not str:
            stack.extend(node)
            continue
        if len(node) == 2 and (tag == "str" and node[1] in names or tag == "n" and node[1] in bare):
            found.add(node[1])
        elif tag == "a" and len(node) == 3:
            if node[2] in names:
                found.add(node[2])
            stack.append(node[1])
        elif tag == "c" and len(node) >= 2:
            func = node[1]  # the callee itself is a call, not a use as a value
            if type(func) is tuple and func and func[0] == "a" and len(func) == 3:
                stack.append(func[1])
            elif not (type(func) is tuple and func and func[0] == "n"):
                stack.append(func)
            stack.extend(node[2:])
        elif tag == "dec" and len(node) == 3:
            inner = node[2]  # ``@registry.add`` hands the function over; ``@torch.no_grad()`` calls it as given
            if type(inner) is tuple and inner and inner[0] == "d" and node[1] is not None \
                    and _last(node[1]) not in PASS_THROUGH and inner[1].rsplit(".", 1)[-1] in names:
                found.add(inner[1].rsplit(".", 1)[-1])
            stack.extend(node[1:])
        elif tag not in ("i", "d", "k"):
            stack.extend(node[1:])


def _last(decorator) -> str:
    """``("c", ("a", ("n", "torch"), "no_grad"), (), ())`` -> "no_grad"."""
    if type(decorator) is tuple and decorator and decorator[0] == "c":
        decorator = decorator[1]
    if type(decorator) is tuple and len(decorator) == 3 and decorator[0] == "a":
        return decorator[2]
    if type(decorator) is tuple and len(decorator) == 2 and decorator[0] == "n":
        return decorator[1].rsplit(".", 1)[-1]
    return ""


def overruling_facts(infos: list[ModuleInfo], agreed, spelled_alike) -> dict[str, set[str]]:
    """{path: ``param:`` facts} that overrule an annotation where it matters -- numbers for a tensor
    a truth test reads, a tensor for a list that indexes or is read back (``ids.item()``: no list has
    the method) -- from what every resolved call passes
    (``agreed``) or, where some call under the name is not resolved, every call spelled with the
    function's name (``spelled_alike``: whatever such a call runs, this function gets that if it
    is the one), for functions no code uses as a value."""
    wanted: list[tuple[str, str, str, str]] = []
    for info in infos:
        for fn in info.functions.values():
            names = (fn.annotated_tensors & fn.test_names) | (fn.annotated_lists & (fn.index_names | fn.read_names)) \
                | fn.annotated_ints
            for name in sorted(names):
                target = (info.path, fn.qualname)
                kind = agreed.of(target).get(name) or spelled_alike.of(target).get(name, "")
                if overrules(fn, name, kind):
                    wanted.append((info.path, fn.qualname, fn.name, f"{name}={kind}", bool(fn.cls)))
    methods = {name for *_, name, _, method in wanted if method} - {name for *_, name, _, method in wanted if not method}
    handed = used_as_values(infos, {name for _, _, name, _, _ in wanted}, methods)
    out: dict[str, set[str]] = {}
    for path, qualname, name, fact, _ in wanted:
        if name not in handed:
            out.setdefault(path, set()).add(f"param:{qualname}:{fact}")
    return out
