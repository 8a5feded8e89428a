"""Quantization calibration is tooling, never decode code.

**Observers and fake quantizers** (classes with a base, at any depth, from ``torch.ao.quantization``,
``torch.quantization`` or ``torchao.quantization`` named like an observer or a fake quantizer:
``ObserverBase``, ``MinMaxObserver``, ``UniformQuantizationObserverBase``, ``FakeQuantize``) record
the ranges a post-training quantization (or quantization-aware training) derives its scales from.
They exist between ``prepare`` and ``convert``: converting a model replaces them, so no served model
runs one. Their methods are cold (:mod:`.coldcode`), as an optimizer's are: ``self.lo = min(self.lo,
x.min())`` is calibration's own host read.

**A model that always runs one** is a calibration model (an export model with its observers wired
into every forward, a prepared model): a forward that calls an observer's ``forward`` on every run
-- through calls that run whenever their function does (:attr:`.facts.CallSite.always`: under no
``if``, after no early exit, in no handler, case or conditional operand), every target of such a
call doing so -- is run to calibrate the model or to check the calibrated result (a
quantizer's sanity generation), never as a decode step. Such a forward is no model step
(:meth:`.entries.Discovery.run`), a library ``generate`` driving it is no decode loop
(:mod:`.libloops`) and a ``torch.compile`` of it no captured region. A model whose observer is
optional (``if self.observer is not None: x = self.observer(x)``) stays a model: it may be served
with the observer off.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

FuncId = tuple[str, str]
#: the libraries whose observers and fake quantizers calibrate (a dotted base's prefix)
QUANT_MODULES = ("torch.ao.quantization.", "torch.quantization.", "torchao.quantization.")
#: their class names (the dotted base's last part)
QUANT_CLASSES = ("*Observer", "*ObserverBase", "*FakeQuantize", "FakeQuantize*")
#: the methods a model calls to run an observer
RUN = ("forward", "__call__")


def calibration_base(dotted: str) -> bool:
    """A library observer or fake quantizer, by its dotted name (``torch.ao.quantization.observer.ObserverBase``)."""
    if not dotted.startswith(QUANT_MODULES):
        return False
    last = dotted.rpartition(".")[2]
    return any(fnmatchcase(last, pattern) for pattern in QUANT_CLASSES)


def calibrating(machinery: set[FuncId], calls: dict) -> set[FuncId]:
    """The functions every run of which runs an observer (``machinery``: the calibration classes'
    methods): those methods' ``forward``, and by a fixed point every function with a call site
    outside any branch of its own (``cond``), not a first-iteration call nor a callback passed on,
    each of whose targets is in the set."""
    found = {fid for fid in machinery if fid[1].rpartition(".")[2] in RUN}
    if not found:
        return found
    targets: dict[FuncId, dict[tuple, set]] = {}  # caller -> call expression -> every target it has
    always: dict[FuncId, set[tuple]] = {}  # caller -> the expressions of its calls that always run
    for caller, edges in calls.items():
        for callee, site in edges:
            targets.setdefault(caller, {}).setdefault(site.expr, set()).add(callee)
            if site.always and not (site.cond or site.first_iter or site.reference):
                always.setdefault(caller, set()).add(site.expr)
    changed = True
    while changed:
        changed = False
        for caller, exprs in always.items():
            if caller not in found and any(targets[caller][e] <= found for e in exprs):
                found.add(caller)
                changed = True
    return found
