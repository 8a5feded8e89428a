"""Faults planted in a layer: the mHC mixing, the block's norms and positions, the compressor.

Each is a variant (a subclass overriding one method, see :mod:`dsv4.faults.base`) and the
decoder that installs it. The compressor faults undo the full-graph decoder's Phase 2 fix: they
decide on the host, from the step's Python position, whether a compressed block is complete and
how many entries attention may read -- what the seed's engine did, and why it kept attention out
of its graphs.
"""

from __future__ import annotations

import torch

from dsv4 import kernels
from dsv4.attention import Attention, LayerCache
from dsv4.faults.base import Fault, FaultDecoder, Variant
from dsv4.faults.step import IN_GRAPH_POOL, NOT_EVIDENT, SAME_DEVICE
from dsv4.mhc import HyperConnection
from dsv4.model import Block

TWO_STEPS = ("the tracer compares two consecutive steps (1 and 2); this Python value changes only when a "
             "compressed block completes (every `ratio` positions), so both steps run the same ops with the same "
             "arguments")


# -- mHC ----------------------------------------------------------------------------------------
class PeakItemMixing(HyperConnection, Variant):
    def pre(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        y, post, comb = super().pre(x)
        self.peak = y.abs().max().item()  # fault: mhc-item
        return y, post, comb


class MhcItem(FaultDecoder):
    fault = Fault(
        "mhc-item", ("1.1",), "`X.abs().max().item()` in the mHC mixing (2 per layer, 122 syncs/step in the seed)",
        static=("GL101",), category="host-sync", cpu=("GL190",), gpu=("GL190", "GL590"), symptom="capture error")
    variants = {"attn_hc": PeakItemMixing, "ffn_hc": PeakItemMixing}


class FreshOutputMixing(HyperConnection, Variant):
    def pre(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        y, post, comb = super().pre(x)
        out = y.new_empty(y.shape)  # fault: mhc-new-output
        return out.copy_(y), post, comb


class MhcNewOutput(FaultDecoder):
    fault = Fault(
        "mhc-new-output", ("2.8",), "the mHC output written to a tensor made every step, not to a given `out_buf`",
        static=("GL203",), category="allocation", cpu=("GL290",), symptom="slower eager step",
        blind={"gpu": IN_GRAPH_POOL})
    variants = {"attn_hc": FreshOutputMixing, "ffn_hc": FreshOutputMixing}


# -- the block: norm weights, positions ------------------------------------------------------------
class Fp32NormBlock(Block, Variant):
    def attention_norm(self, y: torch.Tensor) -> torch.Tensor:
        return kernels.rms_norm(y, self.attn_norm.to(y.device, torch.float32), self.eps)  # fault: norm-weight-fp32-cast


class NormWeightFp32Cast(FaultDecoder):
    fault = Fault(
        "norm-weight-fp32-cast", ("6.19",), "`attn_norm.to(dev, torch.float32)` every step instead of cached once",
        static=("GL206",), category="allocation", cpu=("GL299",), gpu=("GL299",), symptom="slower step")
    variants = {"": Fp32NormBlock}


class PositionsToRopeBlock(Block, Variant):
    def forward_static(self, x, tokens, cache: LayerCache, pos: torch.Tensor, rope) -> torch.Tensor:
        cos, sin = rope
        pos = pos.to(cos.device)  # fault: positions-to-rope-device
        h, post, comb, q, kv, q_latent = self.pre_attention(x, cos.index_select(0, pos), sin.index_select(0, pos))
        attn_out = self.attn.attend_static(q, kv, q_latent, h, cache, pos, cos, sin)
        return self.post_attention(attn_out, x, post, comb, tokens)


class PositionsToRopeDevice(FaultDecoder):
    """Every layer reads the first device's position buffer and moves it to its RoPE table's
    device inside the captured step (the fix: a position buffer per device, staged outside)."""

    fault = Fault(
        "positions-to-rope-device", ("4.2", "8.1"), "`positions.to(rope_cos.device)` inside the captured layer",
        category="cross-device", gpus=2, gpu2=("GL490",),
        blind={"static": NOT_EVIDENT, "cpu": SAME_DEVICE, "gpu": SAME_DEVICE})
    variants = {"": PositionsToRopeBlock}

    def _layer(self, i: int, x: torch.Tensor, tokens: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        return super()._layer(i, x, tokens, self.inputs.position(self.model.first_device))


# -- the compressor ------------------------------------------------------------------------------
class ItemBoundaryAttention(Attention, Variant):
    def _commit_block(self, cache: LayerCache, pos: torch.Tensor, cos, sin) -> None:
        r = self.ratio
        if ((pos + 1) % r == 0).item():  # fault: compressor-boundary-item
            block = pos // r
            entry = self.compressor.pool(cache.state_kv, cache.state_score,
                                         cos.index_select(0, block * r), sin.index_select(0, block * r))
            cache.comp.index_copy_(0, block, entry)
            if self.indexer is not None:
                cache.index_keys.index_copy_(0, block, self.indexer.key(entry))


class CompressorBoundaryItem(FaultDecoder):
    fault = Fault(
        "compressor-boundary-item", ("3.5", "P2.2"), "the compressor's block-boundary check read on the host with `.item()`",
        static=("GL101",), category="host-sync", cpu=("GL190",), gpu=("GL190", "GL590"), symptom="capture error")
    variants = {"attn": ItemBoundaryAttention}


class HostPositionDecoder(FaultDecoder):
    """Stages the step's Python position on every layer's attention, as the seed's engine passed
    its ``start_pos`` down (the full-graph decoder keeps positions on the device only)."""

    def stage(self, token: int, pos: int) -> None:
        super().stage(token, pos)
        for block in self.model.blocks:
            block.attn.step_pos = pos


class NoneOffBoundaryAttention(Attention, Variant):
    step_pos = 0

    def _commit_block(self, cache: LayerCache, pos: torch.Tensor, cos, sin) -> None:
        entry = self._completed_block(cache, pos, cos, sin, self.step_pos)
        if entry is not None:
            block = pos // self.ratio
            cache.comp.index_copy_(0, block, entry)
            if self.indexer is not None:
                cache.index_keys.index_copy_(0, block, self.indexer.key(entry))

    def _completed_block(self, cache: LayerCache, pos: torch.Tensor, cos, sin, step_pos: int) -> torch.Tensor | None:
        """The pooled entry when the block is complete; ``None`` on every other step."""
        if (step_pos + 1) % self.ratio:  # fault: compressor-returns-none
            return None
        first = pos // self.ratio * self.ratio
        return self.compressor.pool(cache.state_kv, cache.state_score, cos.index_select(0, first), sin.index_select(0, first))


class CompressorReturnsNone(HostPositionDecoder):
    fault = Fault(
        "compressor-returns-none", ("3.5", "P2.2"), "a compressor that returns `None` except on a block's last position",
        static=("GL309",), category="data-dependent", gpu_region=("GL391",), symptom="stale replay",
        blind={"cpu": TWO_STEPS,
               "gpu": "captured at a step that commits nothing, replayed stale from the first boundary on; the "
                      "replay probe names the region, not the line (the branch changes which ops run, not their "
                      "arguments)"})
    variants = {"attn": NoneOffBoundaryAttention}


class PythonNCompAttention(Attention, Variant):
    step_pos = 0

    def _compressed_static(self, h, q_latent, cache: LayerCache, pos: torch.Tensor, cos, sin):
        keys, mask = super()._compressed_static(h, q_latent, cache, pos, cos, sin)
        return self._committed(keys, mask, self.step_pos)

    def _committed(self, keys: torch.Tensor, mask: torch.Tensor, step_pos: int):
        """The committed entries only: a prefix as long as the Python block count."""
        n_comp = (step_pos + 1) // self.ratio
        return keys[:n_comp], mask[:, :n_comp]  # fault: python-n-comp


class PythonNComp(HostPositionDecoder):
    fault = Fault(
        "python-n-comp", ("3.6",), "attention over `comp[:n_comp]` with the compressed length a Python int",
        static=("GL308",), category="data-dependent", gpu_region=("GL391",), symptom="stale replay",
        blind={"cpu": TWO_STEPS,
               "gpu": "the slice is frozen at capture; replay ignores the blocks committed since, from the first "
                      "boundary on; the replay probe traces steps 1 and 2 only, so it names the region, not the line"})
    variants = {"attn": PythonNCompAttention}


class HeadMajorAttention(Attention, Variant):
    def attend_static(self, q, kv, q_latent, h, cache: LayerCache, pos: torch.Tensor, cos, sin) -> torch.Tensor:
        q = q.transpose(1, 2).contiguous().transpose(1, 2)  # fault: contiguous-copy
        return super().attend_static(q, kv, q_latent, h, cache, pos, cos, sin)


class ContiguousCopy(FaultDecoder):
    fault = Fault(
        "contiguous-copy", ("2.7", "6.25"), "`.contiguous()` of a transposed activation every step", control=True)
    variants = {"attn": HeadMajorAttention}
