"""Faults planted in the decode step itself: one stage of the full-graph step overridden.

Also the seed's "fine by design" rows that live in the step (controls): a one-time ``.item()``
at warm-up, a ``VERBOSE``-gated one, a profiling synchronize behind its flag, the host-side
sampling read-back and a pinned host-to-device copy. Nothing may report those.
"""

from __future__ import annotations

import torch

from dsv4.faults.base import Fault, FaultDecoder
from dsv4.model import DSV4Model
from graphlint.dynamic.target import Region

VERBOSE = False  # the seed's diagnostics switch: off in production, so its .item() calls never run

NO_SYNC_ON_CPU = "a device synchronisation dispatches no op; only torch.cuda._gpu_trace sees it, on CUDA"
NO_BOUNDARY_ON_CPU = "on the CPU host and device memory are the same: there is no host-to-device copy to see"
NOT_EVIDENT = ('`a.to(b.device)` crosses GPUs only when the caller placed `a` and `b` on different ones; the static '
               'half reports `.to(<device>)` where a per-layer device is evident in the function itself (in a loop, '
               'or a device picked per layer: GL402) and stays silent elsewhere, where on one GPU it is a free no-op'
               ' (`mask.to(x.device)` is everywhere in single-GPU engines)')
IN_GRAPH_POOL = ("inside a graph that replays correctly the allocation happens once, at capture, from the graph's "
                 "private pool, and a replay allocates nothing: the harness reports no GL290 there (measured: the "
                 "graph step as fast as the clean one; the cost is in eager steps, where the tracer reports GL290)")
SAME_DEVICE = ("on one device the copy is a no-op (`.to()` returns the tensor itself: nothing is dispatched); "
               "it moves data only when the layers span two GPUs")


class CudaSynchronize(FaultDecoder):
    fault = Fault(
        "cuda-synchronize", ("5.1", "5.2"), "`torch.cuda.synchronize()` after every layer (the profiling syncs, unguarded)",
        static=("GL106",), category="host-sync", gpu=("GL191", "GL590"), symptom="capture error",
        blind={"cpu": NO_SYNC_ON_CPU})

    def _layer(self, i: int, x: torch.Tensor, tokens: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        x = super()._layer(i, x, tokens, pos)
        if x.is_cuda:
            torch.cuda.synchronize(x.device)  # fault: cuda-synchronize
        return x


class ProfileSyncGuarded(FaultDecoder):
    fault = Fault(
        "profile-sync-guarded", ("5.1", "5.2"), "the same synchronize behind the seed's `_profile_detail` flag, off",
        control=True)
    _profile_detail = False

    def _layer(self, i: int, x: torch.Tensor, tokens: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        x = super()._layer(i, x, tokens, pos)
        if self._profile_detail:
            torch.cuda.synchronize(x.device)  # fault: profile-sync-guarded
        return x


class VerboseItem(FaultDecoder):
    fault = Fault("verbose-item", ("1.4",), "a diagnostic `.item()` behind `VERBOSE` (off)", control=True)

    def _layer(self, i: int, x: torch.Tensor, tokens: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        x = super()._layer(i, x, tokens, pos)
        if VERBOSE:
            print(f"layer {i}: max |x| = {x.abs().max().item():.4g}")  # fault: verbose-item
        return x


class WarmupItem(FaultDecoder):
    fault = Fault(
        "warmup-item", ("1.2",), "a one-time `.item()` at the warm-up step, before capture (the seed's warm-up gsa)",
        control=True)

    def prepare(self) -> None:
        self.warmup_peak: float | None = None  # the seed fixed its NVFP4 global scale once, here it is recorded

    def _layer(self, i: int, x: torch.Tensor, tokens: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        if self.warmup_peak is None:
            self.warmup_peak = x.abs().max().item()  # fault: warmup-item
        return super()._layer(i, x, tokens, pos)


class HostSampling(FaultDecoder):
    fault = Fault(
        "host-sampling", ("1.3",), "`int(logits.argmax())` after the step, outside the graph (greedy sampling)",
        control=True,
        blind={"cpu": "the harness drives stage() and the regions; sampling happens in step(), which it never calls",
               "gpu": "as on the CPU: the harness teacher-forces its tokens"})

    @torch.no_grad()
    def step(self, token: int) -> torch.Tensor:
        logits = super().step(token)
        self.sampled = int(logits.argmax())  # fault: host-sampling
        return logits


class PerStepXBuffer(FaultDecoder):
    fault = Fault(
        "per-step-x-buffer", ("2.9",), "the residual streams' buffer allocated every step (the seed's `dec_X_buf`)",
        static=("GL201",), category="allocation", cpu=("GL290",), symptom="slower eager step",
        blind={"gpu": IN_GRAPH_POOL})

    def _embed(self, tokens: torch.Tensor) -> torch.Tensor:
        cfg = self.model.cfg
        x = torch.zeros(tokens.shape[0], cfg.hc_mult, cfg.dim, dtype=self.model.embed.dtype, device=tokens.device)  # fault: per-step-x-buffer
        return x.copy_(super()._embed(tokens))


class ScalarTokenWrite(FaultDecoder):
    fault = Fault(
        "scalar-token-write", ("3.1",), "`tokens[0] = python_int` inside the captured step (the seed's `dec_tid_buf`)",
        static=("GL306",), category="data-dependent", cpu=("GL393",), gpu=("GL393", "GL491", "GL590"),
        symptom="capture error")

    def stage(self, token: int, pos: int) -> None:
        super().stage(token, pos)
        self.host_token = token

    def _embed(self, tokens: torch.Tensor) -> torch.Tensor:
        tokens[0] = self.host_token  # fault: scalar-token-write
        return super()._embed(tokens)


class PageableH2D(FaultDecoder):
    fault = Fault(
        "pageable-h2d", ("3.1",), "the token copied into the graph from pageable host memory (the fix without its pinned buffer)",
        static=("GL420",), category="cross-device", gpu=("GL491", "GL590"), symptom="capture error",
        blind={"cpu": NO_BOUNDARY_ON_CPU})

    def prepare(self) -> None:
        self.host_tokens = torch.zeros(1, dtype=torch.long)  # pageable: no pin_memory
        self.host_view = self.host_tokens.numpy()

    def stage(self, token: int, pos: int) -> None:
        super().stage(token, pos)
        self.host_view[0] = token

    def _embed(self, tokens: torch.Tensor) -> torch.Tensor:
        tokens.copy_(self.host_tokens, non_blocking=True)  # fault: pageable-h2d
        return super()._embed(tokens)


class PinnedTokenCopy(FaultDecoder):
    fault = Fault(
        "pinned-token-copy", ("S.1",), "the token copied into the graph from pinned host memory, `non_blocking=True`",
        control=True)

    def prepare(self) -> None:
        pinned = all(d.type == "cuda" for d in self.model.devices)
        self.host_tokens = torch.zeros(1, dtype=torch.long, pin_memory=pinned)
        self.host_view = self.host_tokens.numpy()

    def stage(self, token: int, pos: int) -> None:
        super().stage(token, pos)
        self.host_view[0] = token

    def _embed(self, tokens: torch.Tensor) -> torch.Tensor:
        tokens.copy_(self.host_tokens, non_blocking=True)  # fault: pinned-token-copy
        return super()._embed(tokens)


class LayerLoopToDevice(FaultDecoder):
    """One capturable region for the whole step, the residual streams moved to each layer's
    device inside it (the seed's first multi-GPU capture); the other faults that need a region
    spanning devices extend this one."""

    fault = Fault(
        "layer-loop-to-device", ("4.1", "8.2"), "`X.to(layer_device)` in the layer loop, inside one captured region",
        static=("GL402",), category="cross-device", gpus=2, gpu2=("GL490",),
        blind={"cpu": SAME_DEVICE, "gpu": SAME_DEVICE})

    def __init__(self, model: DSV4Model, use_graphs: bool | None = None) -> None:
        super().__init__(model, use_graphs)
        first = self.model.first_device
        if self.model.layer_devices[-1] != self.model.last_device:
            raise ValueError(f"{self.fault.name} needs the head on the last layer's device")
        self._regions = [Region(f"step@{first}", self._spanning_step, device=first)]

    def _spanning_step(self) -> None:
        model = self.model
        x = self._embed(self.inputs.token(model.first_device))
        for i, device in enumerate(model.layer_devices):
            x = x.to(device)  # fault: layer-loop-to-device
            x = model.blocks[i].forward_static(x, self.inputs.token(device), self.caches[i],
                                               self.inputs.position(device), model.rope(i))
        self.logits_buf.copy_(model.logits(x))


class GrowingHistory(FaultDecoder):
    """A host-side region after the graph keeps every step's logits: memory grows per token."""

    fault = Fault(
        "growing-history", ("P1.4",), "every step's logits kept in a list by a host-side region after the graph",
        gpu_region=("GL291",), symptom="memory growth",
        blind={"static": "a list that outlives the step is ordinary Python: no rule can tell a leak from a cache",
               "cpu": "the tracer sees one op per step (a copy); only the soak, a GPU probe, measures growth"})

    def __init__(self, model: DSV4Model, use_graphs: bool | None = None) -> None:
        super().__init__(model, use_graphs)
        self.history: list[torch.Tensor] = []
        self._regions.append(Region("record", self._record, device=self.model.last_device, capturable=False))

    def _record(self) -> None:
        self.history.append(self.logits_buf.clone())  # fault: growing-history
