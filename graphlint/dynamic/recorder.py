"""Record which of a project's functions run, and in which role: the engine of ``graphlint record``,
of ``inventory --record`` and of the functions ``stage()`` runs (:func:`graphlint.dynamic.frames.staged`).

Every start of a project function is appended to one log (a code id per start, 4 bytes); a role
is a set of spans of that log, and each start takes the strongest role whose span holds it
(captured > host > eager > loop). Spans come from:

- graph events (:meth:`Recorder.capture_begin` / ``capture_end`` / ``replay``, fed by
  :mod:`graphlint.dynamic.graph_hooks` or by a test's emulator): a capture is ``captured``; the
  starts between two replays of the same graph are ``host``;
- eager decode loops (:mod:`graphlint.dynamic.eager_steps`): ``eager`` and ``loop``;
- declared windows (:meth:`Recorder.window`): the target protocol's roles, which the probes know.

Only the project's files count (``is_source``, asked once per code object). The cost is kept off
everything else: on Python >= 3.12 with ``sys.monitoring``, whose callback returns ``DISABLE`` for
a code object that is not the project's, so torch's and the standard library's functions cost one
callback each for the whole run; before 3.12 with ``sys.setprofile``, whose callback sees every
call and returns at once for the rest (measured in docs/benchmarks.md). Torch-free.
"""

from __future__ import annotations

import sys
import threading
from array import array
from collections import Counter
from contextlib import contextmanager
from typing import Callable

from graphlint.decode_path_file import ROLES, RecordedDecodePath, RecordedFunction, RecordedStep

PRIORITY = {"loop": 1, "eager": 2, "host": 3, "captured": 4}
ROLE_OF = {p: r for r, p in PRIORITY.items()}
_TOOL_IDS = (2, 3, 4)  # sys.monitoring.PROFILER_ID, then the unnamed free ids


def qualname(code) -> str:
    """The qualname the static analyzer uses: nested functions without ``<locals>``."""
    name = getattr(code, "co_qualname", None) or _qualname_310(code)
    return name.replace(".<locals>", "")


def _qualname_310(code) -> str:
    """Python 3.10 has no ``co_qualname``: the function object's ``__qualname__`` (asked once per code)."""
    import gc

    for ref in gc.get_referrers(code):
        if getattr(ref, "__code__", None) is code and hasattr(ref, "__qualname__"):
            return ref.__qualname__
    return code.co_name


class Recorder:
    """``is_source(filename)``: whether a file is the project's. ``detect_steps``: also find eager
    decode loops (``graphlint record``; the target protocol declares its roles instead)."""

    def __init__(self, is_source: Callable[[str], bool], *, detect_steps: bool = False, backend: str = "") -> None:
        self.is_source = is_source
        self.ids: dict = {}  # code -> id (>= 0) or -1: not the project's
        self.codes: list = []  # id -> code, in order of first start
        self.log = array("i")
        self.spans: dict[str, list[tuple[int, int]]] = {role: [] for role in ROLES}
        self.events: list[int] = []  # log positions of capture begins and replays
        self.forced: dict[int, str] = {}  # id -> role of every start (a torch.compile'd CUDA-graph function)
        self.compiled_graph_codes: set = set()
        self._capture_depth, self._capture_start = 0, 0
        self._last_replay: dict = {}
        self.captures = self.replays = 0
        self.backend = backend or ("monitoring" if hasattr(sys, "monitoring") else "profile")
        self._tool: int | None = None
        self._previous_profile = None
        self.running = False
        if detect_steps:
            from graphlint.dynamic.eager_steps import EagerSteps

            self.steps: EagerSteps | None = EagerSteps(self)
        else:
            self.steps = None

    # -- what the hooks and probes call -------------------------------------------------------
    @property
    def capturing(self) -> bool:
        return self._capture_depth > 0

    def capture_begin(self) -> None:
        if self._capture_depth == 0:
            self._capture_start = len(self.log)
            self.events.append(len(self.log))
            self.captures += 1
        self._capture_depth += 1

    def capture_end(self) -> None:
        if self._capture_depth == 0:
            return
        self._capture_depth -= 1
        if self._capture_depth == 0:
            self.spans["captured"].append((self._capture_start, len(self.log)))

    def replay(self, graph_key) -> None:
        """A replay of the graph ``graph_key``: what ran since its previous replay is the host step."""
        now = len(self.log)
        self.events.append(now)
        self.replays += 1
        previous = self._last_replay.get(graph_key)
        if previous is not None and now > previous:
            self.spans["host"].append((previous, now))
        self._last_replay[graph_key] = now

    def compiled_graph(self, code) -> None:
        """``torch.compile(fn, mode="reduce-overhead")``: ``fn``'s body runs in a CUDA graph tree."""
        self.compiled_graph_codes.add(code)
        cid = self.ids.get(code)
        if cid is not None and cid >= 0:
            self.forced[cid] = "captured"

    @contextmanager
    def window(self, role: str):
        """Every project function started inside runs in ``role`` (unless a stronger one holds)."""
        start = len(self.log)
        try:
            yield
        finally:
            self.spans[role].append((start, len(self.log)))

    # -- switching on and off -----------------------------------------------------------------
    @contextmanager
    def recording(self):
        self.start()
        try:
            yield self
        finally:
            self.stop()

    def start(self) -> None:
        if self.running:
            return
        if self.backend == "monitoring" and self._start_monitoring():
            self.running = True
            return
        self.backend = "profile"
        self._previous_profile = sys.getprofile()
        self._profile = _profile_callback(self)
        self._imports = _Imports(self._profile, self._previous_profile)
        threading.setprofile(self._profile)
        sys.setprofile(self._profile)
        self._imports.install()
        self.running = True

    def stop(self) -> None:
        if not self.running:
            return
        self.running = False
        if self._tool is not None:
            self._imports.uninstall()
            mon = sys.monitoring
            mon.set_events(self._tool, 0)
            for event in (mon.events.PY_START, mon.events.PY_RESUME, mon.events.PY_RETURN, mon.events.PY_YIELD,
                          mon.events.PY_UNWIND):
                mon.register_callback(self._tool, event, None)
            mon.free_tool_id(self._tool)
            self._tool = None
        else:
            self._imports.uninstall()
            sys.setprofile(self._previous_profile)
            threading.setprofile(None)
        if self.steps is not None:
            self.steps.flush()

    def _start_monitoring(self) -> bool:
        mon = sys.monitoring
        tool = next((t for t in _TOOL_IDS if mon.get_tool(t) is None), None)
        if tool is None:  # three profilers at once: fall back to sys.setprofile
            return False
        mon.use_tool_id(tool, "graphlint record")
        self._tool = tool
        events = mon.events.PY_START
        self._imports = _Imports()
        self._imports.install()
        callbacks = _monitoring_callbacks(self, self._imports)
        mon.register_callback(tool, mon.events.PY_START, callbacks[0])
        if self.steps is not None:
            mon.register_callback(tool, mon.events.PY_RESUME, callbacks[1])
            mon.register_callback(tool, mon.events.PY_RETURN, callbacks[2])
            mon.register_callback(tool, mon.events.PY_YIELD, callbacks[2])
            mon.register_callback(tool, mon.events.PY_UNWIND, callbacks[3])
            events |= mon.events.PY_RESUME | mon.events.PY_RETURN | mon.events.PY_YIELD | mon.events.PY_UNWIND
        mon.restart_events()  # locations an earlier recorder (another project) disabled count again
        mon.set_events(tool, events)
        return True

    # -- the callbacks: as little as possible per call ----------------------------------------
    def _register(self, code) -> int:
        filename, name = code.co_filename, code.co_name
        if filename.startswith("<") or (name[0] == "<" and name != "<module>") or not self.is_source(filename):
            # a comprehension, lambda or generator expression is part of its function: never named
            # in the record, and its calls are its function's calls
            self.ids[code] = -1
            return -1
        cid = self.ids[code] = len(self.codes)
        self.codes.append(code)
        if code in self.compiled_graph_codes:
            self.forced[cid] = "captured"
        return cid

    # -- the result -----------------------------------------------------------------------------
    def roles(self) -> dict[int, Counter]:
        """code id -> Counter(role -> starts in that role)."""
        n = len(self.log)
        strongest = bytearray(n)
        spans = {role: list(self.spans[role]) for role in ROLES}
        if self.steps is not None:
            spans["eager"] += self.steps.eager_spans
            spans["loop"] += self.steps.loop_spans
        for role in sorted(ROLES, key=PRIORITY.get):
            mark = PRIORITY[role]
            for start, end in spans[role]:
                if end > start:
                    strongest[start:end] = bytes((mark,)) * (end - start)
        out: dict[int, Counter] = {}
        forced = {cid: PRIORITY[role] for cid, role in self.forced.items()}
        for (cid, mark), calls in Counter(zip(self.log, strongest)).items():
            mark = max(mark, forced.get(cid, 0))
            if mark:
                out.setdefault(cid, Counter())[ROLE_OF[mark]] += calls
        if self.steps is not None:
            for owner, role in self.steps.owners():
                out.setdefault(owner, Counter())[role] += 1
        return out

    def result(self, name: Callable[[object], tuple[str, str] | None], command: str = "") -> RecordedDecodePath:
        """The record: ``name(code)`` gives (path, qualname) as the file spells them, or None to
        leave a function out (a lambda, a comprehension)."""
        functions, names = [], {}
        owners = {owner for owner, _ in self.steps.owners()} if self.steps is not None else set()
        for cid, roles in self.roles().items():
            named = name(self.codes[cid])
            if named is None or (named[1] == "<module>" and cid not in owners):
                continue  # import-time code runs once, unless a decode loop is written at module level
            names[cid] = f"{named[0]}:{named[1]}"
            functions.append(RecordedFunction(named[0], named[1], tuple((r, roles[r]) for r in ROLES if roles[r])))
        steps = []
        if self.steps is not None:
            for owner, callee, kind, calls in self.steps.found():
                callee_name = name(self.codes[callee])
                if owner in names and callee_name is not None:
                    steps.append(RecordedStep(names[owner], f"{callee_name[0]}:{callee_name[1]}", kind, calls))
        merged = {}
        for f in functions:  # two code objects of one name (a redefinition): one entry
            known = merged.get((f.path, f.function))
            if known is not None:
                roles = Counter(dict(known.roles)) + Counter(dict(f.roles))
                f = RecordedFunction(f.path, f.function, tuple((r, roles[r]) for r in ROLES if roles[r]))
            merged[(f.path, f.function)] = f
        return RecordedDecodePath(list(merged.values()), steps, command)


def _monitoring_callbacks(rec: Recorder, imports: "_Imports"):
    """``sys.monitoring`` callbacks (PY_START, PY_RESUME, PY_RETURN/PY_YIELD, PY_UNWIND): a code
    object that is not the project's is disabled at its first event and never calls back again."""
    ids_get, register, log_append, getframe = rec.ids.get, rec._register, rec.log.append, sys._getframe
    disable = sys.monitoring.DISABLE
    start, resume, end = rec.steps.callbacks() if rec.steps is not None else (None, None, None)

    def on_start(code, offset):
        cid = ids_get(code)
        if cid is None:
            cid = register(code)
        if cid < 0:
            return disable
        if imports.depth:
            return None
        if start is not None:
            start(cid, getframe(1))
        log_append(cid)

    def on_resume(code, offset):
        cid = ids_get(code)
        if cid is None or cid < 0:
            return disable
        resume(cid, getframe(1))

    def on_return(code, offset, value):
        cid = ids_get(code)
        if cid is None or cid < 0:
            return disable
        end(getframe(1), value)

    def on_unwind(code, offset, exc):  # cannot be disabled: kept cheap
        cid = ids_get(code)
        if cid is not None and cid >= 0:
            end(getframe(1), None)
    return on_start, on_resume, on_return, on_unwind


def _profile_callback(rec: Recorder):
    """The ``sys.setprofile`` callback (Python < 3.12): it sees every call and C call of the
    process, so everything it touches is a local: a function that is not the project's costs one
    dict lookup per call and per return."""
    ids_get, register, log_append = rec.ids.get, rec._register, rec.log.append
    start, resume, end = rec.steps.callbacks() if rec.steps is not None else (None, None, None)
    generator_flags = 0x2A0  # CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR
    first_offsets: dict = {}

    def profile(frame, event, arg):
        if event == "call":
            code = frame.f_code
            cid = ids_get(code)
            if cid is None:
                cid = register(code)
            if cid < 0:
                return
            if code.co_flags & generator_flags:  # a "call" event also when a generator resumes
                first = first_offsets.get(code)
                if first is None:
                    first = first_offsets[code] = _first_resume(code)
                if frame.f_lasti > first:
                    if resume is not None:
                        resume(cid, frame)
                    return
            if start is not None:
                start(cid, frame)
            log_append(cid)
        elif event == "return" and end is not None:
            cid = ids_get(frame.f_code)
            if cid is not None and cid >= 0:
                end(frame, arg)
    return profile


def _first_resume(code) -> int:
    """The instruction a generator's frame is at when it starts (3.11+: its first ``RESUME``; 3.10: -1)."""
    import dis

    resume = dis.opmap.get("RESUME")
    if resume is None:
        return -1
    raw = code.co_code
    return next((i for i in range(0, len(raw), 2) if raw[i] == resume), -1)


class _Imports:
    """Import-time code is never a decode step: while a module is imported, nothing is recorded (a
    function the project calls while importing is not). Under ``sys.setprofile`` the callback is
    switched off meanwhile (``profile`` given): importing torch and transformers runs millions of
    calls that would each pay for it; under ``sys.monitoring``, which disables a library's function
    after its first call anyway, the callbacks only look at ``depth``."""

    def __init__(self, profile=None, previous=None) -> None:
        self.profile, self.previous, self.depth = profile, previous, 0
        self.original = None

    def install(self) -> None:
        import builtins

        self.original = builtins.__import__
        original, guard = self.original, self

        def __import__(name, globals=None, locals=None, fromlist=(), level=0):
            if name in sys.modules and not fromlist:  # already imported: a lookup, nothing runs
                return original(name, globals, locals, fromlist, level)
            guard.depth += 1
            if guard.depth == 1 and guard.profile is not None:
                sys.setprofile(guard.previous)
            try:
                return original(name, globals, locals, fromlist, level)
            finally:
                guard.depth -= 1
                if guard.depth == 0 and guard.profile is not None:
                    sys.setprofile(guard.profile)
        builtins.__import__ = __import__

    def uninstall(self) -> None:
        import builtins

        if self.original is not None:
            builtins.__import__ = self.original
            self.original = None
