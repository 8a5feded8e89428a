"""Faults planted in the mixture of experts and its router.

The seed's MoE ran grouped NVFP4 GEMMs with host-built group offsets and output buffers made per
call; dsv4's graph-ready MoE has neither, so the GEMM-output, scale-buffer and offset faults put
back exactly the allocation or host write the seed removed, at the analogous place, and change
nothing else.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dsv4.faults.base import Fault, FaultDecoder, Variant
from dsv4.faults.step import IN_GRAPH_POOL, NOT_EVIDENT, NO_BOUNDARY_ON_CPU, SAME_DEVICE
from dsv4.moe import MoE, swiglu
from dsv4.router import Router


# -- allocations ---------------------------------------------------------------------------------
class ZerosGemmOutMoE(MoE, Variant):
    def _routed_static(self, xq: torch.Tensor, weights: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        flat_ids = ids.flatten()
        x_slots = xq.unsqueeze(1).expand(-1, self.top_k, -1).reshape(-1, xq.shape[1], 1)
        l1 = torch.zeros(flat_ids.shape[0], self.w13.shape[1], 1, dtype=xq.dtype, device=xq.device)  # fault: zeros-gemm-out
        torch.bmm(self.w13.index_select(0, flat_ids), x_slots, out=l1)
        act = self.quant(swiglu(l1.squeeze(-1), self.limit))
        y = torch.bmm(self.w2.index_select(0, flat_ids), act.unsqueeze(-1)).squeeze(-1)
        return (y.float().view(xq.shape[0], self.top_k, -1) * weights.unsqueeze(-1)).sum(1)


class ZerosGemmOut(FaultDecoder):
    fault = Fault(
        "zeros-gemm-out", ("2.4", "6.1", "6.2", "6.3", "6.4", "6.5", "6.6", "6.7", "6.8"),
        "the experts' L1 GEMM output made with `torch.zeros()` every step, not a pre-allocated `out`",
        static=("GL201",), category="allocation", cpu=("GL290",), symptom="slower eager step",
        blind={"gpu": IN_GRAPH_POOL})
    variants = {"moe": ZerosGemmOutMoE}


class ScaleBufferMoE(MoE, Variant):
    def shared_expert(self, xq: torch.Tensor) -> torch.Tensor:
        act = swiglu(F.linear(xq, self.shared_w13), self.limit)
        quantised = torch.empty(act.shape, dtype=act.dtype, device=act.device)  # fault: per-step-scale-buffer
        return F.linear(quantised.copy_(self.quant(act)), self.shared_w2)


class PerStepScaleBuffer(FaultDecoder):
    fault = Fault(
        "per-step-scale-buffer", ("2.1", "2.2", "2.3"),
        "the quantised activation's buffer made with `torch.empty()` every step (the seed's `_scale_a_buf`)",
        static=("GL201",), category="allocation", cpu=("GL290",), symptom="slower eager step",
        blind={"gpu": IN_GRAPH_POOL})
    variants = {"moe": ScaleBufferMoE}


class FullLimitMoE(MoE, Variant):
    def shared_expert(self, xq: torch.Tensor) -> torch.Tensor:
        limit = torch.full((1,), self.limit, dtype=xq.dtype, device=xq.device)  # fault: full-per-step
        gate, up = F.linear(xq, self.shared_w13).chunk(2, dim=-1)
        act = F.silu(torch.minimum(gate, limit)) * torch.maximum(torch.minimum(up, limit), -limit)
        return F.linear(self.quant(act), self.shared_w2)


class FullPerStep(FaultDecoder):
    fault = Fault(
        "full-per-step", ("2.5",), "a constant made with `torch.full` every step instead of a buffer filled once",
        static=("GL201",), category="allocation", cpu=("GL290",), symptom="slower eager step",
        blind={"gpu": IN_GRAPH_POOL})
    variants = {"moe": FullLimitMoE}


class LikeFactoryMoE(MoE, Variant):
    def shared_expert(self, xq: torch.Tensor) -> torch.Tensor:
        gate, up = F.linear(xq, self.shared_w13).chunk(2, dim=-1)
        gate = torch.minimum(gate, torch.full_like(gate, self.limit))  # fault: like-factory-clamp
        act = F.silu(gate) * up.clamp(-self.limit, self.limit)
        return F.linear(self.quant(act), self.shared_w2)


class LikeFactoryClamp(FaultDecoder):
    fault = Fault(
        "like-factory-clamp", ("2.6",), "a `*_like` tensor made to clamp against a scalar (the seed's `zeros_like`)",
        static=("GL202",), category="allocation", cpu=("GL290",), symptom="slower eager step",
        blind={"gpu": IN_GRAPH_POOL})
    variants = {"moe": LikeFactoryMoE}


# -- data-dependent ------------------------------------------------------------------------------
class BincountMoE(MoE, Variant):
    def adopt(self) -> None:
        self.load = torch.zeros(self.w13.shape[0], dtype=torch.long, device=self.w13.device)

    def _routed_static(self, xq: torch.Tensor, weights: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        self.load += torch.bincount(ids.flatten(), minlength=self.load.shape[0])  # fault: bincount-counts
        return super()._routed_static(xq, weights, ids)


class BincountCounts(FaultDecoder):
    fault = Fault(
        "bincount-counts", ("3.4",), "tokens per expert counted with `torch.bincount` (not `scatter_add_` into a buffer)",
        static=("GL301",), category="data-dependent", cpu=("GL390",), gpu=("GL390", "GL590"), symptom="capture error")
    variants = {"moe": BincountMoE}


class OffsetsWriteMoE(MoE, Variant):
    def adopt(self) -> None:
        self.expert_offsets = torch.zeros(self.w13.shape[0] + 1, dtype=torch.long, device=self.w13.device)

    def _routed_static(self, xq: torch.Tensor, weights: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        for g in range(self.expert_offsets.shape[0]):
            self.expert_offsets[g] = g * self.top_k  # fault: offsets-python-write
        return super()._routed_static(xq, weights, ids)


class OffsetsPythonWrite(FaultDecoder):
    fault = Fault(
        "offsets-python-write", ("3.2",), "`expert_offsets[g] = python_int`, one host write per expert group",
        static=("GL306",), category="data-dependent", gpu=("GL491", "GL590"), symptom="capture error",
        blind={"cpu": NO_BOUNDARY_ON_CPU + "; the values are the same every step, so nothing looks frozen either"})
    variants = {"moe": OffsetsWriteMoE}


class GuardedRouter(Router, Variant):
    def forward(self, h: torch.Tensor, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        scores = self.scores(h)
        ids = self.tid2eid.index_select(0, tokens) if self.hashed else (scores + self.bias).topk(self.top_k, dim=-1).indices
        weights = scores.gather(1, ids)
        total = weights.sum(-1, keepdim=True)
        if total[0, 0] != 0:  # fault: offsets-branch
            weights = weights / total
        return weights * self.route_scale, ids


class OffsetsBranch(FaultDecoder):
    fault = Fault(
        "offsets-branch", ("3.3",), "a Python `if` on a device value (`if offsets[0] != 0:`), here guarding a division",
        static=("GL105",), category="host-sync", cpu=("GL190",), gpu=("GL190", "GL590"), symptom="capture error")
    variants = {"moe.router": GuardedRouter}


# -- casts and devices ---------------------------------------------------------------------------
class Fp32GateRouter(Router, Variant):
    def scores(self, h: torch.Tensor) -> torch.Tensor:
        return torch.sqrt(F.softplus(F.linear(h.float(), self.gate.float())))  # fault: router-fp32-weight-cast


class RouterFp32WeightCast(FaultDecoder):
    fault = Fault(
        "router-fp32-weight-cast", ("6.18",), "`hidden.float() @ gate.float().T`: the router weight cast to fp32 every step",
        static=("GL206",), category="allocation", cpu=("GL299",), gpu=("GL299",), symptom="slower step")
    variants = {"moe.router": Fp32GateRouter}


class TokensToDeviceRouter(Router, Variant):
    def forward(self, h: torch.Tensor, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        scores = self.scores(h)
        if self.hashed:
            ids = self.tid2eid.index_select(0, tokens.to(h.device))  # fault: token-to-layer-device
        else:
            ids = (scores + self.bias).topk(self.top_k, dim=-1).indices
        weights = scores.gather(1, ids)
        return weights / weights.sum(-1, keepdim=True) * self.route_scale, ids


class TokenToLayerDevice(FaultDecoder):
    """Every layer reads the first device's token buffer; hash-routed layers move it to their
    own device inside the captured step (the fix: a token buffer per device)."""

    fault = Fault(
        "token-to-layer-device", ("4.3", "8.3"), "`token_id.to(x.device)` in the hash-routed MoE, inside the capture",
        category="cross-device", gpus=2, gpu2=("GL490",),
        blind={"static": NOT_EVIDENT, "cpu": SAME_DEVICE, "gpu": SAME_DEVICE})
    variants = {"moe.router": TokensToDeviceRouter}

    def _layer(self, i: int, x: torch.Tensor, tokens: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        return super()._layer(i, x, self.inputs.token(self.model.first_device), pos)


# -- controls ------------------------------------------------------------------------------------
class ViewCopyMoE(MoE, Variant):
    def adopt(self) -> None:
        self.gsa = torch.zeros(1, dtype=torch.float32, device=self.w13.device)

    def shared_expert(self, xq: torch.Tensor) -> torch.Tensor:
        self.gsa.copy_(xq.float().abs().amax(-1)[:1].reshape(1))  # fault: gsa-copy-from-view
        return super().shared_expert(xq)


class GsaCopyFromView(FaultDecoder):
    fault = Fault(
        "gsa-copy-from-view", ("6.13", "6.14", "6.15", "6.16", "6.17"),
        "`gsa_buf.copy_(gsa[:1].reshape(1))`: a device-to-device copy from a view", control=True)
    variants = {"moe": ViewCopyMoE}
