"""From entries to contexts, and from a candidate's contexts to its finding.

:mod:`.entries` finds the roots; this module spreads them along the call graph and decides, per candidate, whether
and how it is reported:

- **graph** spreads through everything captured code calls. Every rule applies, except the allocation rules marked
  ``in_graph: false``: a factory inside a captured graph allocates once, at capture, from the graph's private pool,
  and replay allocates nothing; nor a Python constant a ``torch.compile`` lifts (``lifted_ok``: :mod:`.liftedconst`).
- **eager** spreads through everything, setup/warm-up functions and constructors excepted (an object built in the
  step is built once per cache or per generation); a ``torch.compile``\\ d function it enters is *compiled* there
  (rules with ``in_compiled: false`` skip it: inductor plans its memory); its host logic (the per-token loops' own
  code and what it calls outside the model step) is skipped by rules with ``eager_host: false``: a value read back
  there only costs its read-back, capture would never freeze it.
- **host** spreads like eager but stops at graph roots: calling the captured callable from the host step (a replay
  of a compiled function, or an eager fallback for batch sizes no graph was captured for) runs graph code, whose
  hazards are graph's to report. In each host function, a read-back made once the step has replayed -- directly, or
  in a function called after the replay (an overlap scheduler processing the previous step's sampled ids) -- reads
  the step's result: ``info``; in a host step loop, only the read the eager loop's definition takes for the step's
  first (:func:`.hostreads.host_result_reads`), and never a read there of what the step did not produce (the loop's
  device position, read after the replay, is a sync of its own).

A candidate in several contexts takes the strictest that applies to its rule: eager or graph (the rule's severity),
else host (at most a warning; ``info`` for the result read-back). A candidate eager only through entries chosen by
their name (``hot-names``, no evidence) is at most a warning: a guess never fails the gate; so is one eager only
through a per-token loop no entry point runs, beside one an entry point runs (:meth:`.entries.Discovery.unused`).
"""

from __future__ import annotations

from collections import deque

from graphlint.rules import Rule
from graphlint.static.acceptance import NOTE as ACCEPT_NOTE
from graphlint.static.facts import CallSite, Candidate
from graphlint.static.fixedcounters import off_the_step
from graphlint.static.restaged import restaged_params
from graphlint.static.shapetests import varies_at_capture
from graphlint.static.backendflags import BACKEND_CAND_NOTE, BACKEND_NOTE, backend_flag
from graphlint.static.liftedconst import lifted
from graphlint.static.symbolic import SYMBOLIC_NOTE
from graphlint.static.syncplaced import QuietCalls, idle_placed  # noqa: F401 (QuietCalls: the placement's)

FuncId = tuple[str, str]
Chain = tuple[FuncId, ...]
Calls = dict[FuncId, list[tuple[FuncId, CallSite]]]
HOST_NOTE = " (host step around the graph replay: costs time every step)"
ROUND_NOTE = (" (a round the host step runs beside its replay: it runs the model itself, no graph, every step;"
              " what it builds for the model is allocated per step)")
RESTAGED_NOTE = (" (host step around the graph replay: the data is the same on every step, staged again every"
                 " token; build it once per request)")
OPTIONAL_NOTE = (" (captured only when `{}` is on, off by default: the default path runs this step"
                 " eagerly, every token)")
RESULT_NOTE = " (after the step's replay: the result the host needs; by design once per step)"
LOOP_RESULT_NOTE = (" (the step loop's one read of the step's result, its stop test: by design once per step;"
                    " a second read of it in the step would be reported)")
EAGER_RESULT_NOTE = (" (the per-token loop's first read of the step's result: by design once per step;"
                     " a second read of it in the step would be reported)")
GUESSED_NOTE = " (on a decode path guessed from function names: at most a warning)"
UNUSED_NOTE = (" (on a per-token loop that ranks below the decode path -- no entry point of the checked paths runs"
               " it, or its carry goes through fields alone in a model's forward: at most a warning)")
UNCALLED_NOTE = (" (captured only by a function nothing in the checked paths calls, while other captures are called:"
                 " not on the decode path they show; at most a warning)")
REPLACED_NOTE = (" (reached only through the forward of a module the project may swap at load time for a subclass,"
                 " a wrapper named after it or a module a call of it is written for, built from a computed class:"
                 " it runs only where the load-time rules keep the original; at most a warning)")
POLICY_NOTE = (" (reached only through a method replacement a load-time policy describes as data for a class"
               " outside the project: which policy applies to which model is not read, so any library model call"
               " may run it; at most a warning)")
OPT_IN_NOTE = " (only under `{}`, a measurement switch off by default: not on the default decode path; at most a warning)"
SHAPE_NOTE = (" (in captured code only under a branch on tensor shapes: in the graph only if it was captured"
              " for such shapes; at most a warning)")


def bfs(roots: list[tuple[FuncId, Chain]], calls: Calls, stop: set[FuncId] | frozenset = frozenset()) -> dict:
    """Shortest call chain from a root to every function reached; ``stop`` is never entered."""
    chains: dict[FuncId, Chain] = {}
    queue = deque()
    for fid, chain in sorted(roots):
        if fid not in chains:
            chains[fid] = chain
            queue.append(fid)
    while queue:
        fid = queue.popleft()
        for callee, _ in calls.get(fid, ()):
            if callee not in chains and callee not in stop:
                chains[callee] = chains[fid] + (callee,)
                queue.append(callee)
    return chains


def called_per_device(calls: Calls) -> set[FuncId]:
    """Functions called, at any depth, from inside a loop over devices (``for d in devices:
    self._capture_on(d)``): a capture there runs on several devices from one process."""
    roots = [(callee, (caller, callee)) for caller, edges in calls.items() for callee, site in edges
             if site.multi_device and not site.reference]
    return set(bfs(roots, calls)) if roots else set()


def callers_of(calls: Calls) -> dict[FuncId, list[FuncId]]:
    out: dict[FuncId, list[FuncId]] = {}
    for caller, edges in calls.items():
        for callee, site in edges:
            if not site.reference:
                out.setdefault(callee, []).append(caller)
    return out


def reaching(targets: set[FuncId], callers: dict[FuncId, list[FuncId]],
             stop: set[FuncId] | frozenset = frozenset()) -> set[FuncId]:
    """``targets`` and every function that calls one of them, at any depth (never entering ``stop``)."""
    found = set(targets)
    queue = deque(found)
    while queue:
        for caller in callers.get(queue.popleft(), ()):
            if caller not in found and caller not in stop:
                found.add(caller)
                queue.append(caller)
    return found


def spread(roots: list[tuple[FuncId, Chain]], calls: Calls, stop: set[FuncId],
           compiled_roots: set[FuncId]) -> tuple[dict[FuncId, Chain], set[FuncId]]:
    """Chains of a context, entering compiled functions last: returns (chains, compiled-only).
    Roots in ``stop`` are dropped too (a host loop's call of the captured callable is a replay)."""
    roots = [(f, c) for f, c in roots if f not in stop]
    direct = bfs([(f, c) for f, c in roots if f not in compiled_roots], calls, stop | compiled_roots)
    entered = [(callee, direct[f] + (callee,)) for f in direct for callee, site in calls.get(f, ())
               if callee in compiled_roots and callee not in stop and callee not in direct and not site.reference]
    entered += [(f, c) for f, c in roots if f in compiled_roots]
    compiled = {f: c for f, c in bfs(entered, calls, stop).items() if f not in direct}
    return {**compiled, **direct}, set(compiled)


def post_replay(host: dict[FuncId, Chain], loop_bodies: dict[FuncId, frozenset[int]], calls: Calls,
                replay_reach: set[FuncId], replay_orders: dict[FuncId, int],
                stop: set[FuncId], followed: set[FuncId] = frozenset(),
                conds: dict[FuncId, tuple] | None = None) -> tuple[dict[FuncId, tuple], set[FuncId]]:
    """Per host function, the statement ordinal of its first replay (or call that leads to one), and
    the functions called only after that point (what processes the step's result). From the first
    replay on, the step's result exists: reading it back (the sampled ids, a speculative step's
    accepted length) is what the host is there for; a wait before it is an extra sync. Not a
    function that anything called before the replay reaches too (the allocator both the staging
    and the clean-up call: what it reads is its own state), nor what a ``followed`` function calls
    (:mod:`.hostreads`: there the data says which read is the result). A point is every (ordinal,
    branch conditions) that replays (``conds``: the function's own replays; a call leading to one)."""
    points: dict[FuncId, tuple] = {}
    after: list[tuple[FuncId, Chain]] = []
    before: list[tuple[FuncId, Chain]] = []
    for fid in (*host, *loop_bodies):
        point = replay_orders.get(fid, 0)
        events = list((conds or {}).get(fid, ()))
        if point and point not in {order for order, _ in events}:  # a compiled step's call: no branch known
            events.append((point, ()))
        for callee, site in calls.get(fid, ()):
            if callee in replay_reach and not site.reference:
                point = min(point or site.order, site.order)
                events.append((site.order, site.cond))
        if not point:
            continue
        points[fid] = tuple(sorted(events, key=lambda e: e[0]))
        for callee, site in calls.get(fid, ()):
            if callee in replay_reach or site.reference:
                continue
            if site.order <= point:
                before.append((callee, (fid, callee)))
            elif fid not in followed:
                after.append((callee, (fid, callee)))
    reached_after = bfs(after, calls, stop | replay_reach)
    reached_before = bfs(before, calls, stop | replay_reach) if reached_after else {}
    return points, {f for f in reached_after if f not in reached_before}


def in_graph(params: dict, cand: Candidate) -> bool:
    """Whether the rule applies in captured code: not an allocation rule marked ``in_graph: false`` (the
    pool allocates once, at capture), nor a growing local the function made (``in_graph_locals: false``: the
    capture fixes its shape), nor a handed-in buffer rebuilt out of place (``in_graph_handed: false``)."""
    return params.get("in_graph") is not False and not (
        params.get("in_graph_locals") is False and "call-local" in cand.flags) and not (
        params.get("in_graph_handed") is False and "handed-in" in cand.flags)


class Placement:
    """Decides each candidate's finding from the contexts (see the module docstring)."""

    def __init__(self, chains: dict[str, dict[FuncId, Chain]], loop_bodies: dict[str, dict[FuncId, frozenset[int]]],
                 compiled_only: dict[str, set[FuncId]], points: dict[FuncId, int], after_replay: set[FuncId], *,
                 multi_device: set[FuncId] | frozenset = frozenset(), eager_host: set[FuncId] | frozenset = frozenset(),
                 guessed: set[FuncId] | frozenset = frozenset(), unused: set[FuncId] | frozenset = frozenset(),
                 eager_results: set | frozenset = frozenset(), advanced_attrs: set[str] | frozenset = frozenset(),
                 host_results: tuple[set, set, set, set] = (frozenset(),) * 4,
                 uncalled: set[FuncId] | frozenset = frozenset(), optional: dict[FuncId, str] | None = None):
        self.chains, self.loop_bodies, self.compiled_only = chains, loop_bodies, compiled_only
        self.points, self.after_replay = points, after_replay
        self.multi_device = multi_device  # functions called, at any depth, from a loop over devices
        self.eager_host = eager_host  # an eager engine's host logic (see ``Discovery.eager_host_logic``)
        self.guessed = guessed  # eager only through entries chosen by name (``hot-names``) alone
        #: eager only through per-token loops no entry point runs (:meth:`.entries.Discovery.unused`)
        self.unused = unused
        #: captured only through branches on tensor shapes (:func:`graphlint.static.link.shaped`)
        self.shaped: set[FuncId] = set()
        #: per context, reached only through a module's forward a load-time rule may replace (:mod:`.replaced`)
        self.replaced: dict[str, set[FuncId]] = {}
        #: per context, reached only through a class built only for another backend (:mod:`.backends`)
        self.backend: dict[str, dict[FuncId, tuple[str, str]]] = {}
        #: per context, reached only through a method a library-tied policy record replaces (:mod:`.policies`)
        self.policy: dict[str, set[FuncId]] = {}
        self.eager_results = eager_results  # an eager loop's first read of its step's result (:mod:`.stepresult`)
        self.advanced_attrs = advanced_attrs  # attributes the project advances in place: per-step state
        #: a host step loop's first reads of its step's result, and every read of it the walk met
        #: (:func:`.hostreads.host_result_reads`): the same definition as the eager loop's
        self.host_first, self.host_judged, self.host_others, self.host_followed = host_results
        self.uncalled = uncalled  # captured only by functions nothing calls (:mod:`.uncalled`)
        #: captured only by compiles under a switch off by default: the default path runs them eagerly
        self.optional = optional or {}
        #: host functions that run the captured model themselves, no replay (:func:`.hoststeps.eager_rounds`)
        self.eager_rounds: set[FuncId] = set()
        #: per host-step function, the parameters every host-step call passes the same on every step (:mod:`.restaged`)
        self.restaged: dict[FuncId, set[str]] = {}
        self.symbolic: set[FuncId] = set()  # captured only by dynamic=True compiles (:mod:`.symbolic`)

    def chain(self, context: str, fid: FuncId, cand: Candidate) -> Chain | None:
        chain = self.chains[context].get(fid)
        if chain is not None:
            return chain
        loops = self.loop_bodies[context].get(fid)
        return (fid,) if loops and loops.intersection(cand.loops) else None

    def place(self, rule: Rule, fid: FuncId, cand: Candidate, captured: bool = True,
              eager: bool = True) -> tuple[Chain, str, str] | None:
        """(chain, severity, message note), or None when the candidate does not cost anything per step;
        ``captured`` / ``eager`` False: no capture / eager per-token call takes its branch
        (:mod:`.capturedvalues`), only other contexts count."""
        params = rule.params
        severity = rule.severity
        if params.get("multi_device_severity") and ("multi-device" in cand.flags or fid in self.multi_device):
            severity = params["multi_device_severity"]
        elif params.get("selected_device_severity") and "device-selected" in cand.flags:
            severity = params["selected_device_severity"]
        scope = params.get("scope", "hot")
        if scope == "hot" and cand.flags and (self.first_step_only(fid, cand) or off_the_step(self, fid, cand)):
            return None  # once per decode, or on a fixed loop's counter inside the step (:mod:`.fixedcounters`)
        if "op-output" in cand.flags:  # a custom kernel's output buffer (:func:`.stepflow.mark_step_data`)
            return None
        placed = self._place(rule, fid, cand, captured, severity, scope, eager)
        if placed and placed[1] != "info" and params.get("idle_sync"):  # nothing pending (:mod:`.syncpending`)
            placed = idle_placed(placed, fid, cand, self.loop_bodies, self.chains, getattr(self, "quiet", None))
        switch = next((f[7:] for f in cand.flags if f.startswith("opt-in:")), None) if placed else None
        if switch is not None and placed[1] == "error":  # ``if benchmark:`` runs only when asked for
            return placed[0], "warning", placed[2] + OPT_IN_NOTE.format(switch)
        if placed and placed[1] == "error" and scope == "hot":  # ``if use_torch_npu:``: another device's code
            note = self.backend_note(fid, cand, placed[0])
            if note:
                return placed[0], "warning", placed[2] + note
        return placed

    def backend_note(self, fid: FuncId, cand: Candidate, chain: Chain) -> str:
        """Why an error runs only on another backend than CUDA (:mod:`.backends`), else ""."""
        flag = backend_flag(cand.cond) if cand.cond else None
        if flag is not None:
            return BACKEND_CAND_NOTE.format(flag)
        contexts = [c for c in ("graph", "eager") if fid in self.chains[c]]
        gates = [self.backend.get(c, {}).get(fid) for c in contexts]
        if contexts and all(gates):
            return BACKEND_NOTE.format(*gates[0])
        return ""

    def _place(self, rule: Rule, fid: FuncId, cand: Candidate, captured: bool, severity: str,
               scope: str, eager_too: bool = True) -> tuple[Chain, str, str] | None:
        params = rule.params
        symbolic = fid in self.symbolic and "symbolic_severity" in params and not cand.in_capture  # (:mod:`.symbolic`)
        graph = self.chain("graph", fid, cand) if captured else None
        if scope == "capture":
            return ((graph or (fid,)), severity, "") if cand.in_capture or graph else None
        eager, host = self.chain("eager", fid, cand) if eager_too else None, self.chain("host", fid, cand)
        if scope == "anywhere":
            return (eager or graph or host or (fid,)), severity, ""
        compiled_ok = params.get("in_compiled") is not False
        if eager and (compiled_ok or fid not in self.compiled_only["eager"]) and not (
                (params.get("eager_host") is False or "read-position" in cand.flags) and fid in self.eager_host) and not (
                params.get("eager_pinned") is False and "pinned" in cand.flags):
            captured = (graph or cand.in_capture) and in_graph(params, cand) and not symbolic
            if not captured and "acceptance" in cand.flags:
                return eager, "info", ACCEPT_NOTE  # a rejection sampler's read (:mod:`.acceptance`)
            if not captured and params.get("eager_severity"):  # only a capture would freeze it
                severity = params["eager_severity"]
            if (params.get("result_readback") or params.get("eager_result")) and not captured and cand.reads \
                    and (fid[0], cand.line, cand.col, cand.code) in self.eager_results:
                # the eager loop's read of its result; a host step reaching the function from elsewhere
                # may read per row there (not a loop that is both: the read is that loop's)
                other = self._place(rule, fid, cand, captured, severity, scope, False) \
                    if host and fid not in self.loop_bodies["host"] else None
                return other if other and other[1] != "info" else (eager, "info", EAGER_RESULT_NOTE)
            if not captured and cand.reads and self.host_loop_read(rule, fid, cand):
                return eager, "info", LOOP_RESULT_NOTE if self.loop_exit(fid, cand) or {"stop-check", "stop-check-end"} & cand.flags \
                    else RESULT_NOTE
            if fid in self.guessed and severity == "error" and not captured:  # a guess never fails the gate
                return eager, "warning", GUESSED_NOTE
            if fid in self.unused and severity == "error" and not captured:  # nor a loop the engine never runs
                return eager, "warning", UNUSED_NOTE
            if severity == "error" and fid in self.replaced.get("eager", ()) and (
                    not captured or fid in self.replaced.get("graph", ())):  # nor a module a rule may swap out
                return eager, "warning", REPLACED_NOTE
            if severity == "error" and fid in self.policy.get("eager", ()) and (
                    not captured or fid in self.policy.get("graph", ())):  # nor a policy's replacement
                return eager, "warning", POLICY_NOTE
            if not captured or (fid not in self.guessed and fid not in self.unused):
                return eager, severity, ""
        if (graph or cand.in_capture) and in_graph(params, cand):
            if lifted(self, params, fid, cand):  # a constant the compile lifts into its graph: made once
                return None
            if symbolic:  # a dynamic compile's int is recorded per value, not frozen
                return graph or (fid,), params["symbolic_severity"], SYMBOLIC_NOTE
            if severity == "error" and (fid in self.shaped or any(varies_at_capture(c) for c in cand.cond)):
                return graph or (fid,), "warning", SHAPE_NOTE
            if severity == "error" and fid in self.replaced.get("graph", ()):
                return graph or (fid,), "warning", REPLACED_NOTE
            if severity == "error" and fid in self.uncalled:
                return graph or (fid,), "warning", UNCALLED_NOTE
            if severity == "error" and fid in self.policy.get("graph", ()):
                return graph or (fid,), "warning", POLICY_NOTE
            return graph or (fid,), severity, ""
        if graph and fid in self.optional and not cand.in_capture:  # a per-step cost the capture would hide
            if self.step_data(cand):
                return None  # the step's data, built where the step runs (as in the host step)
            return graph, params.get("eager_severity", severity), OPTIONAL_NOTE.format(self.optional[fid])
        if host is not None and params.get("restaged") and self.restaged_step(fid, cand):
            return host, "warning", RESTAGED_NOTE
        if host is None or not params.get("host_step") or "pinned" in cand.flags:
            return None
        if params.get("host_carried_only") and "loop-carried" not in cand.flags:
            return None  # GL207: only a local grown round the step loop is the host step's (growing_concat)
        if not compiled_ok and fid in self.compiled_only["host"]:
            return None
        if params.get("step_data") is False and self.step_data(cand) and fid not in self.eager_rounds:
            return None
        if params.get("result_readback") and self.host_result(fid, cand) or "acceptance" in cand.flags:
            return host, "info", RESULT_NOTE if "acceptance" not in cand.flags else ACCEPT_NOTE
        if params.get("eager_result") and self.loop_exit(fid, cand) and \
                (fid[0], cand.line, cand.col, cand.code) in self.host_first:
            return host, "info", LOOP_RESULT_NOTE  # the stop test the step loop's data takes for its one read
        return host, "warning" if severity == "error" else severity, ROUND_NOTE if fid in self.eager_rounds else HOST_NOTE

    def restaged_step(self, fid: FuncId, cand: Candidate) -> bool:
        """Pinned staging of data the same on every step: a constant rebuilt every token (:mod:`.restaged`)."""
        needed = restaged_params(cand.flags)
        return needed is not None and fid in self.restaged and needed <= self.restaged[fid]

    def host_loop_read(self, rule: Rule, fid: FuncId, cand: Candidate) -> bool:
        """The read a host step loop takes for its one read (:mod:`.hostreads`; a truth test only as
        the loop's exit test), in a loop that is also an eager per-token loop (the same loop runs
        the model eagerly when no graph is captured): one read per step either way, by the host
        step loop's definition -- the loop replays a graph, it is no eager reference loop."""
        params = rule.params
        return (params.get("result_readback") or (params.get("eager_result") and self.loop_exit(fid, cand))) \
            and (fid[0], cand.line, cand.col, cand.code) in self.host_first \
            and bool(self.loop_bodies["host"].get(fid, frozenset()).intersection(cand.loops))

    def loop_exit(self, fid: FuncId, cand: Candidate) -> bool:
        """A truth test a host step loop may stop on: ``while t:``, ``if t: break``; or a batch stop
        check ``if done.all(): ...; break`` sitting in the step loop itself (not in a loop nested in
        it, nor in a function it calls). A plain test whose body ends in ``break`` is not: an
        acceptance walk's ``if tok == eos: terminal = True; break`` is another loop's exit, and a
        second read there (sequoia's, labelled true) stays one."""
        return "loop-exit" in cand.flags or ("stop-check-end" in cand.flags and bool(cand.loops)
                                             and cand.loops[-1] in self.loop_bodies["host"].get(fid, ()))

    def first_step_only(self, fid: FuncId, cand: Candidate) -> bool:
        """Under ``if i == 0:`` of its function's per-token or step loop (:mod:`.iterations`), or in a
        block that leaves it (:mod:`.loopexits`): once per decode, like the prompt's pass before the
        loop, not once per step -- when every such loop around it runs it at most once (a block that
        leaves an inner per-token loop still runs once per step of an outer one)."""
        loops = {int(f[11:]) for f in cand.flags if f.startswith("first-iter:")}
        if not loops:
            return False
        hot = {loop for kind in ("eager", "host") for loop in self.loop_bodies[kind].get(fid, ()) if loop in cand.loops}
        return bool(hot) and hot <= loops

    def step_data(self, cand: Candidate) -> bool:
        """A factory that builds the host step's data, not a constant rebuilt every step (see
        :func:`.stepflow.mark_step_data`): the step's input, staged for the graph."""
        return "step-data" in cand.flags or any(
            f.startswith("arg-attr:") and f[9:] in self.advanced_attrs for f in cand.flags)

    def host_result(self, fid: FuncId, cand: Candidate) -> bool:
        """The host step's one read of its result: in a host step loop, the read the eager loop's
        definition takes for the first (:mod:`.stepresult`: not a second read, nor one per row, nor
        an intermediate the sampler reads to go on); elsewhere (a replaying function no step loop
        calls, an overlap scheduler's later call) any read once the step has replayed."""
        key = (fid[0], cand.line, cand.col, cand.code)
        if key in self.host_first:
            return True
        if key in self.host_others:
            return False  # the loop's own state read after the replay (a position): an extra sync
        if fid in self.host_followed:
            return False  # the data decides there (:mod:`.hostreads`): a read of something else
        return key not in self.host_judged and self.after_last_replay(fid, cand)

    def after_last_replay(self, fid: FuncId, cand: Candidate) -> bool:
        """After a replay on the way to ``cand``: one before it in the function, not in an arm of an
        ``if`` the other arm of which holds ``cand`` (a prefill replay is no step's for the decode arm)."""
        events = self.points.get(fid)
        if events is None:
            return fid in self.after_replay
        return any(order <= cand.order and not exclusive(cond, cand.cond) for order, cond in events)


def exclusive(a: tuple, b: tuple) -> bool:
    """Whether two conjunctions of branch conditions (:attr:`.facts.CallSite.cond`) hold on no run
    together: one has a test the other negates."""
    return any(("not", c) in b for c in a) or any(("not", c) in a for c in b)
