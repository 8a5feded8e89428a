"""What the check took for the decode path, in one record: :class:`DecodePath`.

The reports open with it (``Decode path: 2 captured regions (...), 1 host step, ...; 61 functions,
3 unresolved calls``) because a hook that cannot see the model it guards must say so: the
captured regions, host steps and per-token loops found, whether the path was only *guessed* from
function names (then nothing it finds fails the gate), how many functions it holds, how many
calls inside them the call graph could not follow (:mod:`.unresolved`), and the functions named
like decode code that hold a hazard but are never reached (a new ``decode_step`` nothing calls is
not checked, and the report says so instead of a silent "No findings").

Built from what linking already has -- entries, contexts and the call edges -- by
:func:`decode_path`, which asks the call graph for its unresolved calls through one callable
(the points-to call graph's, :func:`graphlint.static.unresolved.from_call_graph`); lines are
looked up only when a report prints them (:mod:`graphlint.static.decode_record`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from graphlint.rules import Rule
from graphlint.static.contexts import Calls, FuncId
from graphlint.static.coldcode import setup_named
from graphlint.static.entries import Contexts, Entry
from graphlint.static.facts import ModuleInfo
from graphlint.static.names import name_matcher
from graphlint.static.options import StaticOptions
from graphlint.static.outerloops import OuterLoop
from graphlint.static.unresolved import UnresolvedCall

#: the call graph's unresolved calls of the hot functions (see :func:`.unresolved.from_call_graph`)
FindUnresolved = Callable[[Mapping[FuncId, "frozenset[int] | None"]], list[UnresolvedCall]]


@dataclass(frozen=True)
class Unreached:
    """A function named like decode code (``hot-names``) that holds a hazard candidate but is on
    no decode path: ``why`` says why, ``hazards`` which (line, rule code) were not checked."""

    function: FuncId
    why: str
    hazards: tuple[tuple[int, str], ...] = ()


@dataclass
class DecodePath:
    """The decode path the check analysed (see the module docstring)."""

    entries: list[Entry] = field(default_factory=list)
    functions: int = 0  # functions on the decode path (graph, host and eager, loop bodies included)
    guessed_functions: int = 0  # of those, reached only through entries chosen by name
    unresolved: list[UnresolvedCall] = field(default_factory=list)
    unreached: list[Unreached] = field(default_factory=list)
    names_on: bool = False  # the hot-names heuristic ran (no capture, replay or per-token loop; no --entry)
    #: branches decided by the values reaching them (:mod:`.argvalues`): not on the decode path
    decided: int = 0
    #: loops that run whole decodes, once per request or window (:mod:`.outerloops`): not checked
    outer_loops: list[OuterLoop] = field(default_factory=list)
    #: calls on a receiver only an unbound parameter gives, resolved to the package's own classes
    #: that define the method (:mod:`.openreceivers`): listed, no longer unresolved
    by_class: list[UnresolvedCall] = field(default_factory=list)

    @property
    def evidence(self) -> list[Entry]:
        return [e for e in self.entries if not e.guessed]

    @property
    def guessed(self) -> bool:
        """No evidence at all: every entry was chosen by its name."""
        return bool(self.entries) and not self.evidence


def hot_map(contexts: Contexts) -> dict[FuncId, frozenset[int] | None]:
    """The decode path's functions: None for all of a function, or the ids of its hot loops (a
    per-token loop's body only)."""
    placement = contexts.placement
    hot: dict[FuncId, frozenset[int] | None] = {}
    for context in ("graph", "eager", "host"):
        for fid, loops in placement.loop_bodies[context].items():
            if hot.get(fid, frozenset()) is not None:
                hot[fid] = hot.get(fid, frozenset()) | loops
        for fid in placement.chains[context]:
            hot[fid] = None
    return hot


def decode_path(infos: list[ModuleInfo], calls: Calls, contexts: Contexts, options: StaticOptions,
                rules: dict[str, Rule], find_unresolved: FindUnresolved, by_class=()) -> DecodePath:
    placement = contexts.placement
    hot = hot_map(contexts)
    names_on = not contexts.evidence and not options.entries and not options.recorded
    guessed = {f for f in placement.guessed if f in hot}
    return DecodePath(
        entries=list(contexts.entries), functions=len(hot), guessed_functions=len(guessed),
        unresolved=find_unresolved(hot),
        unreached=unreached(infos, calls, set(hot), options, rules, names_on), names_on=names_on,
        decided=contexts.decided, outer_loops=list(contexts.outer_loops),
        by_class=[UnresolvedCall(fid, site.expr, kind="by-class", targets=targets)
                  for fid, site, targets in by_class if fid in hot],
    )


def unreached(infos: list[ModuleInfo], calls: Calls, hot: set[FuncId], options: StaticOptions,
              rules: dict[str, Rule], names_on: bool) -> list[Unreached]:
    """Hot-named functions holding a candidate of an enabled, hot-scoped rule that no decode path
    reaches (setup, warm-up, prefill-only and ``test_*`` names excepted: they are never hot)."""
    match, prefill = name_matcher(tuple(options.hot_names)), name_matcher(tuple(options.prefill_names))
    tests_hot = any(p.startswith("test") for p in options.hot_names)
    lines: dict[FuncId, set[tuple[int, str]]] = {}
    for info in infos:
        for cand in info.candidates:
            fid = (info.path, cand.function)
            rule = rules.get(cand.code)
            if fid in hot or rule is None or cand.code not in options.enabled:
                continue
            if rule.params.get("scope", "hot") != "hot":  # reported wherever it is: nothing goes unchecked
                continue
            fn = info.functions.get(cand.function)
            if fn is None or cand.function == "<module>" or fn.device_code or not match.match(fn.name):
                continue
            if setup_named(fn.name) or prefill.match(fn.name) or (fn.name.startswith("test_") and not tests_hot):
                continue
            lines.setdefault(fid, set()).add((cand.line, cand.code))
    if not lines:
        return []
    callers: dict[FuncId, list[FuncId]] = {}
    for caller, edges in calls.items():
        for callee, site in edges:
            if callee in lines and callee != caller and not site.reference:
                callers.setdefault(callee, []).append(caller)
    out = []
    for fid in sorted(lines):
        why = _why(fid, callers.get(fid, []), options, names_on)
        out.append(Unreached(fid, why, tuple(sorted(lines[fid]))))
    return out


def _why(fid: FuncId, callers: list[FuncId], options: StaticOptions, names_on: bool) -> str:
    if callers:
        names = sorted({"module-level code" if c[1] == "<module>" else c[1] for c in callers})
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        return f"called only from {shown}, off the decode path"
    if options.entries:
        return "no caller; the decode path is the given entries"
    if names_on and fid[1].endswith("__call__"):
        return "its class is never built here: someone else calls it"
    if names_on:
        return "no caller on the decode path"
    return "no caller; the decode path comes from the captures found"
