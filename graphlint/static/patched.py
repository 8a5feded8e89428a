"""Objects from outside the project that the checked code patches, followed by the name that patches them.

An overlay that accelerates a library's model patches the object it is handed: ``decoder.static =
StaticStack(blocks)`` on an upstream decoder, ``decoder.precapture = lambda: capture(decoder)``,
then ``capture(decoder)`` records ``decoder.static.step(x)`` under a CUDA-graph capture. A library
object is one value (``("X",)``, :mod:`.objects`), and one the analysis never sees made holds
nothing, so the store is lost and the captured call resolves to nothing: the captured code, and
every hazard in it, is missed.

**The rule.** A name of a function (a parameter or a local, never ``self``/``cls`` and never an
import) that the function stores an attribute on by a literal name (``obj.attr = v``,
``setattr(obj, "attr", v)``) holds one more abstract value, ``("O", path, scope, name)``: the outside
object(s) that name holds there. It flows as any value does -- into the functions the name is
passed to, the closures that read it, what returns it -- and its fields (one node per attribute)
hold what any code stores on it wherever it flows. Reading an attribute never stored on it reads
nothing, as before; calling it runs nothing, as calling a library object runs nothing (the code
installed into library modules, :mod:`.installed`, treats it as one). Identity is the value flow
from the patching name, never an attribute's name alone: ``other.static.step()`` on an object that
did not flow from the patching name resolves to nothing, as before.

A name that also holds the project's own instances keeps them: their stores go to their classes'
fields as before, and the outside object's fields only repeat what was stored through that name.
"""

from __future__ import annotations

from graphlint.static.facts import ScopeFlow
from graphlint.static.flowir import ANY_ATTR

#: the tag of an outside object a name patches; with ``"X"`` the values that are no project object
PATCHED = "O"
OUTSIDE = frozenset(("X", PATCHED))


def patched_names(flow: ScopeFlow) -> list[str]:
    """The names ``flow`` (a function's or the module's scope) stores attributes on by a literal
    name: a parameter or a local, not a method's receiver."""
    if flow.kind == "class":
        return []
    receiver = flow.params[0] if flow.cls and flow.fkind in ("m", "c", "p") and flow.params else None
    found: dict[str, None] = {}
    for stmt in flow.stmts:
        if stmt[0] != "=":
            continue
        target = stmt[1]
        if target[0] == "a" and target[2] != ANY_ATTR and target[1][0] == "n" and target[1][1] != receiver:
            found[target[1][1]] = None
    return [name for name in found if name in flow.locals]


def field_key(value: tuple, attr: str) -> tuple:
    """The solver node's key of ``attr`` on the patched object ``value``."""
    return ("fo", value[1], value[2], value[3], attr)
