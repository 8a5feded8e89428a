"""The base every matcher kind extends, and the registry it joins by being defined.

A subclass that sets ``kind`` registers itself (``__init_subclass__``): adding a matcher kind
is adding a module to this package, with nothing to list anywhere else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from graphlint.rules import Rule, RuleError

if TYPE_CHECKING:
    import libcst as cst

    from graphlint.static.tensors import TensorOracle

#: kind -> class, filled as the matcher modules are imported (:func:`graphlint.static.matchers.matcher_kinds`).
REGISTRY: dict[str, type["Matcher"]] = {}

SCOPES = ("hot", "capture", "anywhere")
#: Parameters every rule may carry, read by the linker (see :mod:`graphlint.static.entries`):
#: ``host_step`` -- also reported in the host step around a replay (at most a warning there);
#: ``host_carried_only: true`` -- there only when flagged "loop-carried" (GL207: a local grown round
#: a loop of its function, the step loop's ids; not a request's history nor a once-per-call join);
#: ``result_readback`` -- there, after the last replay, it reads the step's result: ``info``; and
#: in an eager per-token loop, its first read of the step's result is ``info`` (:mod:`..stepresult`);
#: ``eager_result`` -- ``true``: only the latter (a truth test: ``if n_accepted == 0:``); ``false``: not
#: the latter, though a read all the same (``nonzero``: the host learns a size, not the step's data);
#: ``step_data: false`` -- not reported in the host step when it builds the step's data (a buffer
#: filled afterwards, or built from per-step state), not a constant (:func:`..stepflow.mark_step_data`);
#: ``in_compiled: false`` -- not reported in ``torch.compile``'d code (allocations);
#: ``in_graph: false`` -- not reported in captured code (allocations: made once, from the graph pool);
#: ``in_graph_locals: false`` -- not reported there on a local the captured function made itself
#: (a report flagged "call-local": a growing concat whose shape capture fixes);
#: ``in_graph_handed: false`` -- nor on a buffer the caller hands in (flagged "handed-in": an
#: out-of-place rebuild of it there is the graph pool's output, made once at capture);
#: ``eager_host: false`` -- not reported in an eager engine's host logic (the per-token loop's own
#: code and what it calls besides the model step): what only a graph would freeze;
#: ``eager_pinned: false`` -- not reported in eager code on pinned ``non_blocking`` staging
#: (``torch.tensor(x, pin_memory=True).cuda(non_blocking=True)``): the correct copy there too;
#: ``eager_severity`` -- the severity in eager code that no capture runs (a hazard only a graph makes:
#: a Python position frozen at capture costs nothing while nothing captures it);
#: ``symbolic_severity`` -- the severity in code only a ``torch.compile(..., dynamic=True)`` CUDA-graph
#: compile captures: its Python ints are symbolic, recorded per value, not frozen (:mod:`..symbolic`);
#: ``lifted_ok: true`` -- not reported in code only a ``torch.compile`` captures when its host data is
#: a Python constant there: the compile lifts it into its graph, made once (:mod:`..liftedconst`);
#: ``multi_device_severity`` -- the severity when one process captures on several devices;
#: ``selected_device_severity`` -- when the capture's function selects its device from a value;
#: ``restaged: true`` -- reported in the host step on pinned staging of data the same on every step
#: (:mod:`graphlint.static.restaged`): a constant rebuilt every token;
#: ``idle_sync: true`` -- a device-wide synchronize with nothing pending, or one the next read waits
#: for anyway (:mod:`graphlint.static.syncpending`), is ``info``.
LINK_PARAMS: dict[str, type] = {"scope": str, "host_step": bool, "host_carried_only": bool,
                                "result_readback": bool, "eager_result": bool,
                                "step_data": bool, "in_compiled": bool,
                                "in_graph": bool, "in_graph_locals": bool, "in_graph_handed": bool, "eager_host": bool,
                                "eager_pinned": bool, "multi_device_severity": str,
                                "selected_device_severity": str, "eager_severity": str, "restaged": bool, "idle_sync": bool,
                                "symbolic_severity": str, "lifted_ok": bool}


class MatchContext(Protocol):
    """What the walker tells a matcher about where it is (implemented by ``Walker``)."""

    imports: dict[str, str]  # local name -> qualified import target
    oracle: "TensorOracle"  # tensor / position facts for the current function and class
    loop_depth: int
    item_loops: int  # enclosing ``for`` loops over a collection (not ``while``, not ``range``): layer loops
    item_names: set[str]  # the names those loops bind (``layer`` of ``for layer in self.layers``)
    module_loops: int  # enclosing loops over sub-modules (``for layer in self.layers``): layer loops
    class_name: str
    function_name: str
    local_names: set[str]  # module-level defs and classes (they shadow builtins)
    call_name: str | None  # the resolved callee of the Call being visited
    validation_off: bool  # the module calls ``Distribution.set_default_validate_args(False)``

    def report(self, rule: Rule, anchor: "cst.CSTNode", name: str = "") -> None: ...

    def callee_ir(self, call: "cst.Call") -> tuple | None: ...  # the call's callee in flow IR (CallSite.expr)

    def defer(self, rule: Rule, anchor: "cst.CSTNode", name: str = "") -> Any:
        """A report to ``emit`` later (when the class ends), or never; None where no report is ever
        made (lazy one-time initialisation, import-time code)."""

    def emit(self, pending: Any) -> None: ...

    def is_store_target(self, node: "cst.CSTNode") -> bool: ...


class Matcher:
    """Base class: parameter validation shared by every kind."""

    kind: ClassVar[str] = ""
    node_types: ClassVar[tuple[str, ...]] = ()
    params: ClassVar[dict[str, type | tuple[type, ...]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "kind" not in cls.__dict__:
            return  # a helper base class, or a subclass refining a kind it inherits
        known = REGISTRY.get(cls.kind)
        if known is not None and (known.__module__, known.__qualname__) != (cls.__module__, cls.__qualname__):
            raise TypeError(f"matcher kind {cls.kind!r} is defined twice: {known.__module__} and {cls.__module__}")
        REGISTRY[cls.kind] = cls

    def __init__(self, rule: Rule):
        self.rule = rule
        allowed = {**self.params, **LINK_PARAMS}
        for key, value in rule.params.items():
            if key not in allowed:
                raise RuleError(
                    f"{rule.pack}: rule {rule.code}: matcher {self.kind!r} has no parameter {key!r} "
                    f"(allowed: {', '.join(sorted(allowed))})"
                )
            if not isinstance(value, allowed[key]):
                raise RuleError(f"{rule.pack}: rule {rule.code}: parameter {key!r} has the wrong type")
        if rule.params.get("scope", "hot") not in SCOPES:
            raise RuleError(f"{rule.pack}: rule {rule.code}: scope must be one of {', '.join(SCOPES)}")
        for key in ("multi_device_severity", "selected_device_severity"):
            if rule.params.get(key, "error") not in ("error", "warning", "info"):
                raise RuleError(f"{rule.pack}: rule {rule.code}: {key} must be error, warning or info")
        self.setup(rule.params)

    def setup(self, params: dict[str, Any]) -> None:
        """Turn params into attributes; raise RuleError for bad values."""

    def visit(self, node: "cst.CSTNode", ctx: MatchContext) -> None:
        raise NotImplementedError

    def call_index(self) -> dict[str, frozenset[str]] | None:
        """{"callee": names, "method": names}: the walker shows this matcher only the calls of
        those resolved callee names / method names (a dict lookup instead of a visit per call)."""
        return None

    def end_class(self, ctx: MatchContext) -> None:
        """Called when a class body ends (for patterns spread over several methods)."""

    def require(self, params: dict[str, Any], key: str) -> list[str]:
        value = params.get(key)
        if not value or not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise RuleError(f"{self.rule.pack}: rule {self.rule.code}: {self.kind} needs a non-empty {key!r} list")
        return value
