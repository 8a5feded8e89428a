"""The tracer probe: one warmed-up step under a TorchDispatchMode, on CPU or GPU.

It sees every aten op the step dispatches and attributes it to the first user frame. Host
syncs, dynamic-output-shape ops, device transitions, factory allocations and casts of a
parameter (an ``nn.Parameter`` reaches dispatch as itself) are properties of single ops. Two
things need more than one op: a Python value frozen into a graph shows up
as an op whose non-tensor arguments differ between two consecutive steps, a tensor that
grows every step (an op that takes the tensor it made the step before and makes one of
another shape, the ``keys = torch.cat([keys, new])`` of a dynamic KV cache), and
device/stream/event synchronisations, which dispatch no op at all, arrive through
``torch.cuda._gpu_trace`` callbacks (CUDA only; that trace cannot be switched off again, so
the per-GPU worker runs the tracer in its own process, apart from the captures).

The tracer names what it observes (:data:`OBSERVATIONS`); which rule reports an observation is
the runtime pack's ``observes:`` (:func:`graphlint.rules.observation_codes`), so no rule code is
spelled here. An observation no loaded rule claims is not recorded.
"""

from __future__ import annotations

import warnings
import weakref
from collections import Counter
from contextlib import contextmanager

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from graphlint.dynamic import declared
from graphlint.dynamic.frames import (UserFrame, current_user_frame, region_entries, region_sources, staged,
                                      ran_during, with_staged)
from graphlint.dynamic.target import Region, regions_of
from graphlint.dynamic.verdicts import make_finding
from graphlint.inventory import DeviceResult, ProbeOutcome
from graphlint.rules import observation_codes

#: Everything the tracer (and sync-debug mode, which it hosts) can observe.
OBSERVATIONS = (
    "host-read",  # an op whose output the host reads (data_dependent_output): .item(), bool(t)
    "sync-warning",  # sync-debug mode warned about a synchronizing call
    "explicit-sync",  # a device/stream/event synchronize, seen through torch.cuda._gpu_trace
    "device-to-host-copy",
    "pageable-host-to-device-copy",  # (from pinned memory it is fine)
    "cross-device-copy",  # between two devices, or off the CPU when the region runs on the CPU
    "factory-allocation",  # a fresh tensor from a factory call or torch.tensor(...)
    "parameter-cast",  # an nn.Parameter converted to another dtype
    "dynamic-output-shape",
    "step-varying-python-value",  # a Python number an op takes differs between two steps
    "growing-state-tensor",  # an op took the tensor it made the step before and made another shape
)

_TRANSITIONS = {"aten._to_copy.default", "aten.copy_.default"}
_ACTIVE: "StepTracer | None" = None
_GPU_TRACE_ON = False


def _is_factory(func) -> bool:
    """A tensor constructor: no tensor argument, or an ``*_like`` / ``new_*`` allocation."""
    name = func.__name__.split(".")[0]
    if name.endswith("_like") or name.startswith("new_"):
        return True
    returns_tensor = any(isinstance(r.type, torch.TensorType) for r in func._schema.returns)
    takes_tensor = any(
        isinstance(a.type, torch.TensorType) or "Tensor" in str(a.type) for a in func._schema.arguments
    )
    return returns_tensor and not takes_tensor


def classify_transition(src: torch.device, dst: torch.device, home: torch.device, pinned: bool) -> str | None:
    """What a copy ``src -> dst`` inside a region running on ``home`` is (an observation), if a hazard.

    With an accelerator home, host->device is an H2D copy (a hazard only from pageable
    memory), device->host a D2H copy, anything else between devices a cross-device copy. With
    a CPU home every copy off the CPU leaves the engine's device (CPU CI uses ``meta`` as the
    stand-in peer device).
    """
    if src == dst:
        return None
    if home.type == "cpu":
        return "cross-device-copy"
    if src.type == "cpu" and dst.type != "cpu":
        return None if pinned else "pageable-host-to-device-copy"
    if dst.type == "cpu":
        return "device-to-host-copy"
    return "cross-device-copy"


def _is_python_scalar(t) -> bool:
    """A 0-dim CPU tensor: how torch wraps a Python number (``buf[0] = n``) for one op."""
    return isinstance(t, torch.Tensor) and t.device.type == "cpu" and t.dim() == 0


def _is_parameter_cast(args, kwargs) -> bool:
    """``weight.float()`` / ``weight.to(dev, torch.float32)`` of an ``nn.Parameter``: a dtype change
    (a device change is a transition, reported as one)."""
    dtype = kwargs.get("dtype")
    return isinstance(args[0], torch.nn.Parameter) and dtype is not None and dtype != args[0].dtype


def _pinned(t) -> bool:
    try:
        return bool(t.is_pinned())
    except RuntimeError:
        return False


class StepTracer(TorchDispatchMode):
    def __init__(self, rules, device_label: str) -> None:
        super().__init__()
        self.rules, self.device_label = rules, device_label
        self.codes = observation_codes(rules.values())
        self.region: Region | None = None
        self.step = 0
        # (rule, path, line) -> [where, region, detail, Counter of (step, evidence), {region name: True}]
        self.hits: dict[tuple[str, str, int], list] = {}
        self.signatures: dict[int, dict[tuple, tuple]] = {}
        # op key -> ((data_ptr, shape, stride, dtype), a weak reference) of its output, this step
        self.made: dict[tuple, tuple] = {}
        self._made_before: dict[tuple, tuple] = {}  # the same, the step before
        self._occurrence: Counter = Counter()
        self._syncs_in_op = 0

    # -- bookkeeping ---------------------------------------------------------------
    def begin_step(self, step: int) -> None:
        self.step = step
        self.signatures[step] = {}
        self._occurrence = Counter()
        self._made_before, self.made = self.made, {}

    def hit(self, observation: str, where: UserFrame | None, evidence: str, detail: str) -> None:
        code = self.codes.get(observation)
        if code not in self.rules or where is None:
            return
        key = (code, where.path, where.line)
        entry = self.hits.setdefault(key, [where, self.region, detail, Counter(), {}])
        entry[3][(self.step, evidence)] += 1
        if self.region is not None:
            entry[4][self.region.name] = True  # every region the line ran in, in order

    # -- ops ----------------------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self._syncs_in_op = 0
        out = func(*args, **kwargs)
        where = current_user_frame()
        observed = self._check_op(func, args, kwargs, where)
        if self._syncs_in_op and not observed:
            self.hit("explicit-sync", where, f"tracer:gpu_trace:{func}", f"{func} synchronizes the stream")
        if self.region is not None and self.region.capturable and where is not None:
            key = self._record_signature(func, args, kwargs, where)
            self._check_growth(key, func, args, kwargs, out, where)
        return out

    def _check_op(self, func, args, kwargs, where) -> list[str]:
        """Record this op's hazards; returns what was observed."""
        name = str(func)
        home = torch.device(self.region.device) if self.region else torch.device("cpu")
        observed: list[tuple[str, str, str]] = []  # (observation, evidence, detail)
        if torch.Tag.data_dependent_output in func.tags:
            observed.append(("host-read", f"tracer:{name}", f"{name} reads a device value on the host"))
        if torch.Tag.dynamic_output_shape in func.tags and self._really_dynamic(name, args):
            observed.append(("dynamic-output-shape", f"tracer:{name}", f"{name} has a data-dependent output shape"))
        if name in _TRANSITIONS:
            observed += self._transition(name, args, kwargs, home)
        elif name == "aten.lift_fresh.default":
            fresh = args[0]
            if _is_python_scalar(fresh):
                pass  # `buf[0] = n`: a Python number wrapped for one op; its value is watched across steps
            elif fresh.device.type != "cpu" and home.type != "cpu":
                observed.append(("pageable-host-to-device-copy", f"tracer:{name}",
                                 "torch.tensor(...) copies Python data to the device"))
            else:
                observed.append(("factory-allocation", f"tracer:{name}",
                                 "torch.tensor(...) builds a fresh tensor every step"))
        elif _is_factory(func):
            observed.append(("factory-allocation", f"tracer:{name}", f"{name} allocates every step"))
        if name == "aten._to_copy.default" and _is_parameter_cast(args, kwargs):
            observed.append(("parameter-cast", f"tracer:{name}", f"a parameter converted from {args[0].dtype} to "
                             f"{kwargs['dtype']} every step"))
        for observation, evidence, detail in observed:
            self.hit(observation, where, evidence, detail)
        return [o[0] for o in observed]

    @staticmethod
    def _really_dynamic(name: str, args) -> bool:
        if name != "aten.index.Tensor":
            return True
        return any(i is not None and i.dtype in (torch.bool, torch.uint8) for i in args[1])

    def _transition(self, name, args, kwargs, home):
        if name == "aten._to_copy.default":
            src_t, dst = args[0], kwargs.get("device") or args[0].device
            non_blocking = kwargs.get("non_blocking", False)
        else:
            src_t, dst = args[1], args[0].device
            non_blocking = args[2] if len(args) > 2 else kwargs.get("non_blocking", False)
        observed = classify_transition(src_t.device, torch.device(dst), home, _pinned(src_t))
        if observed is None:
            return []
        detail = f"{name} {src_t.device} -> {dst}" + (" non_blocking=True" if non_blocking else "")
        if _is_python_scalar(src_t):
            detail += " (a Python number written into a device tensor, `buf[i] = n`)"
        if observed == "pageable-host-to-device-copy" and non_blocking:
            detail += " (sync-debug mode does not warn about this one)"
        return [(observed, f"tracer:{name}", detail)]

    def _record_signature(self, func, args, kwargs, where) -> None:
        leaves, _ = tree_flatten((args, kwargs))
        scalars = tuple(repr(v) for v in leaves if isinstance(v, (int, float)) and not isinstance(v, bool))
        if str(func) == "aten.lift_fresh.default" and _is_python_scalar(args[0]):
            scalars += (repr(args[0].item()),)
        key = (where.path, where.line, str(func))
        self._occurrence[key] += 1
        self.signatures[self.step][(*key, self._occurrence[key])] = (scalars, where, self.region)
        return (*key, self._occurrence[key])

    def _check_growth(self, key, func, args, kwargs, out, where) -> None:
        """growing-state-tensor: this op took the tensor it made the step before and made another shape.

        "The tensor it made" must still be alive (a weak reference), not merely have had the address:
        a temporary freed after step 1 and a new one of the same shape at the same address in step 2
        (address reuse, by malloc or the caching allocator) is nothing kept, and made this rule
        flaky on dsv4's sliding-window keys (``torch.cat`` of a fresh stack)."""
        made = _tensor_signature(out)
        if made is None:
            return
        first = out[0] if isinstance(out, (tuple, list)) else out
        self.made[key] = (made, weakref.ref(first))
        before, kept = self._made_before.get(key, (None, None))
        if before is None or before[1] == made[1]:
            return
        inputs, _ = tree_flatten((args, kwargs))
        # alive, its address cannot have been reused: an input there with its layout is that tensor
        if kept() is not None and any(_tensor_signature(t) == before for t in inputs if isinstance(t, torch.Tensor)):
            self.hit("growing-state-tensor", where, f"tracer:{func}", f"{func} turned the {before[3]}"
                     f"{list(before[1])} it made at step {self.step - 1} into {list(made[1])} at step {self.step}")

    # -- syncs without an op --------------------------------------------------------
    def on_sync(self, kind: str) -> None:
        """A gpu_trace sync callback: inside an op it belongs to that op, else to the user line."""
        if torch.cuda.is_current_stream_capturing():
            return
        if self._inside_dispatch():
            self._syncs_in_op += 1
            return
        self.hit("explicit-sync", current_user_frame(), f"tracer:gpu_trace:{kind}", f"{kind} synchronization")

    @staticmethod
    def _inside_dispatch() -> bool:
        import sys

        frame = sys._getframe(1)
        while frame is not None:
            if frame.f_code is StepTracer.__torch_dispatch__.__code__:
                return True
            frame = frame.f_back
        return False

    # -- results --------------------------------------------------------------------------
    def findings(self, first_step: int):
        out = []
        for (code, _path, _line), (where, region, detail, counts, regions) in self.hits.items():
            evidence = sorted({ev for (_s, ev) in counts})
            per_step = sum(n for (s, _ev), n in counts.items() if s == first_step) or sum(counts.values())
            finding = make_finding(
                self.rules[code], where, device=self.device_label, region=region.name if region else "",
                evidence=evidence[0], detail=detail + (f" ({per_step} times per step)" if per_step > 1 else ""),
                count=per_step,
            )
            out.append(finding.with_(evidence=tuple(evidence), in_graph=_in_graph(region),
                                     regions=tuple(regions) if len(regions) > 1 else ()))  # one line, several regions
        return out + self.frozen_values()

    def frozen_values(self):
        steps = sorted(self.signatures)
        code = self.codes.get("step-varying-python-value")
        if len(steps) < 2 or code not in self.rules:
            return []
        first, second = self.signatures[steps[0]], self.signatures[steps[1]]
        seen, out = set(), []
        for key, (scalars, where, region) in first.items():
            other = second.get(key)
            if other is None or other[0] == scalars or (where.path, where.line) in seen:
                continue
            seen.add((where.path, where.line))
            detail = f"{key[2]} got {', '.join(scalars)} at step {steps[0]} and {', '.join(other[0])} at step {steps[1]}"
            f = make_finding(self.rules[code], where, device=self.device_label, region=region.name,
                             evidence=f"tracer:{key[2]}", detail=detail)
            out.append(f.with_(in_graph=_in_graph(region)))
        return out


def _tensor_signature(value) -> tuple | None:
    """(data_ptr, shape, stride, dtype) of a tensor (the first of a tuple of outputs), else None."""
    if isinstance(value, (tuple, list)):
        value = value[0] if value else None
    if not isinstance(value, torch.Tensor):
        return None
    try:
        return value.data_ptr(), tuple(value.shape), tuple(value.stride()), str(value.dtype).removeprefix("torch.")
    except RuntimeError:  # a tensor without storage
        return None


def _in_graph(region: Region | None) -> bool:
    return bool(region and region.capturable)


def _dispatch_sync(kind: str):
    def callback(*_args) -> None:
        if _ACTIVE is not None:
            _ACTIVE.on_sync(kind)
    return callback


def _activate_gpu_trace() -> None:
    """Register the sync callbacks once per process; they stay inert unless a tracer is active."""
    global _GPU_TRACE_ON
    if _GPU_TRACE_ON:
        return
    from torch.cuda import _gpu_trace

    _gpu_trace.register_callback_for_device_synchronization(_dispatch_sync("device"))
    _gpu_trace.register_callback_for_stream_synchronization(_dispatch_sync("stream"))
    _gpu_trace.register_callback_for_event_synchronization(_dispatch_sync("event"))
    torch._C._activate_gpu_trace()
    _GPU_TRACE_ON = True


@contextmanager
def _sync_debug(tracer: StepTracer, enabled: bool):
    """sync-debug mode 'warn', each warning routed to the user frame that caused it."""
    if not enabled:
        yield
        return

    def show(message, category, filename, lineno, file=None, line=None):
        text = str(message)
        if "synchroniz" in text.lower():
            tracer.hit("sync-warning", current_user_frame(), "sync-debug", text.split("\n")[0][:160])

    previous = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show
        torch.cuda.set_sync_debug_mode("warn")
        try:
            yield
        finally:
            torch.cuda.set_sync_debug_mode(previous)


def run_tracer(target, regions: list[Region], rules, device_label: str, *, cuda: bool,
               steps: tuple[int, int] = (1, 2)) -> tuple[list, list[ProbeOutcome], StepTracer]:
    """Trace ``steps`` (the caller ran step 0 as warm-up). Returns findings and probe outcomes."""
    global _ACTIVE
    tracer = StepTracer(rules, device_label)
    if cuda:
        _activate_gpu_trace()
    for step in steps:
        with declared.step(step), declared.role("host"):  # inventory --record on the CPU: step 1's roles
            target.stage(step)
        tracer.begin_step(step)
        _ACTIVE = tracer
        try:
            with _sync_debug(tracer, cuda), tracer:
                for region in regions:
                    tracer.region = region
                    with declared.step(step), declared.role(declared.region_role(region)):
                        region.fn()
                tracer.region = None
        finally:
            _ACTIVE = None
        for device in {torch.device(r.device) for r in regions if torch.device(r.device).type == "cuda"}:
            torch.cuda.synchronize(device)
    outcomes = [ProbeOutcome("tracer", "ran", f"traced steps {steps[0]} and {steps[1]} after a warm-up step"
                             + ("" if cuda else "; no CUDA: device/stream/event syncs not observable"))]
    outcomes.append(ProbeOutcome("sync-debug", "ran", "torch.cuda.set_sync_debug_mode('warn')") if cuda
                    else ProbeOutcome("sync-debug", "skipped", "needs CUDA (sync-debug mode is a CUDA feature)"))
    return tracer.findings(steps[0]), outcomes, tracer


def trace_phase(factory, devices, options, rules, label: str) -> DeviceResult:
    """Build the target, run step 0 as warm-up (lazy init and compilation are not per-step
    hazards), then trace steps 1 and 2."""
    target = factory(devices, **options)
    regions = regions_of(target)
    ran: list[str] = []
    stage_functions = staged(target.stage, 0, ran)
    ran += ran_during(lambda: [region.fn() for region in regions])
    cuda = any(torch.device(d).type == "cuda" for d in devices)
    findings, outcomes, _ = run_tracer(target, regions, rules, label, cuda=cuda)
    return DeviceResult(label, findings=findings, probes=outcomes, regions=[r.name for r in regions],
                        entries=with_staged(region_entries(regions), stage_functions), sources=region_sources(regions),
                        ran=list(dict.fromkeys(ran)))
