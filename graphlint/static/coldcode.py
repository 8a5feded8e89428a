"""What is never hot, whatever calls it: set-up, warm-up and capture functions, prefill-only
functions, and training code.

Decided by name for the first two (``__init__``, ``*warm*``, ``*capture*``, ``*dummy*``,
``setup*``, ``*profile*``, tear-down's ``exit`` and ``shutdown``, but never a predicate such as ``is_dummy``; ``prefill-names``, default ``*prefill*``: a scheduler step calling both
``_prefill`` and ``_decode`` runs the first once per prompt), and by evidence for training: a
function that calls ``.backward()`` (or ``torch.autograd``), and the methods of optimizers, LR
schedulers, data loaders, datasets and samplers -- classes with ``torch.optim``'s or
``torch.utils.data``'s classes among their bases, at any depth (an optimizer's ``step()`` matches
``*step*``; it is training), and quantization's observers and fake quantizers, calibration's
machinery (:mod:`.calibration`).
"""

from __future__ import annotations

from graphlint.static.calibration import calibration_base
from graphlint.static.facts import ModuleInfo
from graphlint.static.index import Index
from graphlint.static.losscode import training_closure, trains_through
from graphlint.static.names import name_matcher
from graphlint.static.options import StaticOptions

FuncId = tuple[str, str]
#: bases that make a class training machinery, never decode code
TRAINING_BASES = ("torch.optim.", "torch.utils.data.")
OPTIMIZER_BASE = TRAINING_BASES[0]
SETUP_NAMES = ("__init__", "*warm*", "*capture*", "*dummy*", "setup*", "_setup*", "*profile*",
               "*reinit*",  # re-initialisation: a rebuild of buffers, graphs or state for a new shape
               # tear-down, set-up's mirror: a worker's ``exit()`` after its serve loop, or the one a
               # follower rank's loop runs by name before it leaves
               "exit", "_exit", "shutdown", "_shutdown", "teardown", "_teardown")
_SETUP = name_matcher(SETUP_NAMES)


#: a predicate asks about a state, it is no phase: ``is_dummy`` (a cache property read every step),
#: ``is_capturing()``, ``has_warmed_up`` run wherever their callers run
PREDICATE_PREFIXES = ("is_", "_is_", "has_", "_has_")


def setup_named(name: str) -> bool:
    return _SETUP.match(name) is not None and not name.startswith(PREDICATE_PREFIXES)


_CAPTURE_SETUP = name_matcher(("*warm*", "*capture*"))


def capture_setup_loop(edges, loop_id: int, fn_of) -> bool:
    """A loop whose body captures or warms up for a capture (``for offset in range(n):
    self.runners[offset] = capture_runner(model, offset)``, one graph per draft offset or batch
    size) is capture set-up, never a per-token loop, whatever it feeds back: a call in it of a
    function that captures (outside a capture-on-first-sight branch) or is named like warm-up or
    capture (not a predicate such as ``is_capturing``). ``edges``: the function's (callee, site).
    Not a capture under a branch of the loop's own that its other calls are not under: a decode
    loop that captures its step lazily, on the iteration a test picks (``if use_graph and i == 1:
    runner.capture(model, tok, ...)``), and runs the step on every iteration, is a decode loop."""
    inside = [(callee, site) for callee, site in edges if loop_id in site.loops]
    least = min((len(site.cond) for _, site in inside), default=0)
    for callee, site in inside:
        if len(site.cond) <= least:
            fn = fn_of(callee)
            if fn.captures or (_CAPTURE_SETUP.match(fn.name) and not fn.name.startswith(PREDICATE_PREFIXES)):
                return True
    return False


def library_family(infos: list[ModuleInfo], index: Index, pred) -> set[FuncId]:
    """The methods of the classes with a library base ``pred`` accepts (its dotted name), at any depth."""
    found = set()
    for info in infos:
        family = {name for name in info.classes if any(
            base[0] == "dotted" and isinstance(base[1], str) and pred(base[1])
            for cinfo, cname in index.mro((info, name)) for base in cinfo.classes[cname].bases)}
        found.update((info.path, qual) for qual, fn in info.functions.items() if fn.cls in family)
    return found


def training_code(infos: list[ModuleInfo], index: Index, calls: dict | None = None) -> set[FuncId]:
    """Functions that train: they call ``.backward()``, always compute a loss (:mod:`.losscode`,
    through ``calls``, the call graph's edges), belong to a training class, or always call a function
    that trains (a training loop: :func:`.losscode.trains_through`)."""
    # what runs a backward pass or an optimizer's step makes its callers training code; what computes a
    # loss only, or reads a dataset, does not (a decode loop may call a forward that a wrong target trains)
    found = trains_through(library_family(infos, index, lambda dotted: dotted.startswith(OPTIMIZER_BASE)) | {
        (info.path, qual) for info in infos for qual, fn in info.functions.items() if fn.trains == "backward"},
        infos, calls or {})
    found |= library_family(infos, index, lambda dotted: dotted.startswith(TRAINING_BASES))
    found.update((info.path, qual) for info in infos for qual, fn in info.functions.items() if fn.trains)
    return trained_only(training_closure(found, infos, calls or {}), calls or {})


def trained_only(found: set[FuncId], calls: dict) -> set[FuncId]:
    """``found`` grown by the functions that only training code calls: a sampler a distillation step
    runs to make its targets (ARC's ``sample_flow_dpmpp_w_intermediates``, called from a step that
    computes a loss) loops over a schedule, but each of its runs is part of one training step, and
    what its loop calls -- a wide ``model(...)`` reaching the conditioners and autoencoders -- is
    never a decode step's. Only functions with a caller in the checked paths, every one of them
    training code (a function passed on as a value has callers no one sees: never so)."""
    callers: dict[FuncId, set[FuncId]] = {}
    passed: set[FuncId] = set()
    for caller, edges in calls.items():
        for callee, site in edges:
            if site.reference:
                passed.add(callee)
            elif callee != caller:
                callers.setdefault(callee, set()).add(caller)
    changed = bool(found)
    while changed:
        changed = False
        for fid, who in callers.items():
            if fid not in found and fid not in passed and who <= found:
                found.add(fid)
                changed = True
    return found


#: words that name the decode phase in a function's name, beside a prefill name (:meth:`ColdCode.both_phases`)
DECODE_WORDS = ("decode", "generat")


class ColdCode:
    """``cold(name, fid)``: whether the function is set-up, prefill-only, training or calibration code."""

    def __init__(self, infos: list[ModuleInfo], index: Index, options: StaticOptions, calls: dict | None = None):
        self._prefill = name_matcher(tuple(options.prefill_names))
        #: observers' and fake quantizers' methods (:mod:`.calibration`): cold, as training is
        self.calibration = library_family(infos, index, calibration_base)
        self.training = training_code(infos, index, calls) | self.calibration

    def prefill(self, name: str) -> bool:
        """Named like prefill-only code: never captured either (a decode graph holds one token per
        sequence; ``if varlens is not None: return self.prefill_forward(...)`` is the prompt's path)."""
        return self._prefill.match(name) is not None

    def both_phases(self, name: str, fid: FuncId | None = None) -> bool:
        """Named for the prompt's pass *and* the decode (``prefill_and_generate``,
        ``prefill_then_decode``): set-up by its prefill name, yet its per-token loop -- only that
        loop's body -- is the decode (:meth:`.entries.Discovery.token_loops`). Not set-up or training
        code by another name, and not a chunked prefill (``chunked_prefill``: no decode named)."""
        low = name.lower()
        return self.prefill(name) and not setup_named(name) and (fid is None or fid not in self.training) \
            and any(word in low for word in DECODE_WORDS)

    def __call__(self, name: str, fid: FuncId | None = None) -> bool:
        return setup_named(name) or self._prefill.match(name) is not None or (
            fid is not None and fid in self.training)
