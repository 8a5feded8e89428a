"""Every row of the seed inventory (``../shared/reference/seed-inventory.txt``), in its order.

A row is ``(id, seed category, the seed's wording shortened, faults)``; a row no fault can stand
for says why in ``reason``. Ids: ``C.N`` is the N-th row of the seed's category C, ``S.1`` the
summary's pinned-copy remark, ``P1.N``/``P2.N`` the Phase 1/2 work lists. Several seed rows are
one pattern in different files of the seed's engine (eight GEMM outputs made with ``torch.zeros``);
dsv4 has one analogous place, so they share one fault.
"""

from __future__ import annotations

from dataclasses import dataclass

CATEGORIES = {
    1: "`.item()` syncs on the hot path",
    2: "per-step tensor allocations",
    3: "data-dependent control flow",
    4: "cross-GPU transfers inside the graph",
    5: "`torch.cuda.synchronize()` on the hot path",
    6: "per-step allocations inside capture",
    7: "CuTeDSL `from_dlpack` device mismatch in capture",
    8: "cross-GPU operations inside capture",
    9: "multi-GPU CUDA graph streams",
    "S": "summary",
    "P1": "Phase 1 (remaining work)",
    "P2": "Phase 2 (future)",
}


@dataclass(frozen=True)
class SeedRow:
    id: str
    wording: str
    faults: tuple[str, ...] = ()
    reason: str = ""  # why no fault stands for this row

    @property
    def category(self) -> int | str:
        head = self.id.split(".")[0]
        return int(head) if head.isdigit() else head


NO_SWIZZLE = ("dsv4 runs NVFP4 as fake quantisation on Hopper: there is no 32_4_4 scale swizzle. The seed's "
              "stated cause is not a capture hazard either: reshape/transpose/permute are views, and the copy "
              "`.contiguous()` makes is recorded and replayed (its own 'fine' list, row 6.25)")

ROWS: tuple[SeedRow, ...] = (
    SeedRow("1.1", "mhc.py: `X_next.abs().max().item()` (122 syncs/step)", ("mhc-item",)),
    SeedRow("1.2", "warm-up gsa `.item()`: one-time, outside the graph (OK by design)", ("warmup-item",)),
    SeedRow("1.3", "`argmax(logits).item()`: outside the graph, sampling (OK by design)", ("host-sampling",)),
    SeedRow("1.4", "VERBOSE-gated `.item()` calls: safe at VERBOSE=0", ("verbose-item",)),
    SeedRow("2.1", "linear.py: pre-allocated `_scale_a_buf`", ("per-step-scale-buffer",)),
    SeedRow("2.2", "shared_expert.py: pre-allocated `padded_x_sf_buf` + view", ("per-step-scale-buffer",)),
    SeedRow("2.3", "grouped_linear.py: pre-allocated `_scale_a_buf`", ("per-step-scale-buffer",)),
    SeedRow("2.4", "grouped_linear.py: pre-allocated `_output_buf`", ("zeros-gemm-out",)),
    SeedRow("2.5", "moe.py: `torch.full` -> `self._l1_gsa_buf.fill_()`", ("full-per-step",)),
    SeedRow("2.6", "quantize.py: `torch.zeros_like` -> scalar `0.0`", ("like-factory-clamp",)),
    SeedRow("2.7", "quantize.py: gsa reshape for M=1, contiguous for M>1", ("contiguous-copy",)),
    SeedRow("2.8", "mhc.py init_state: `out_buf` parameter for in-place write", ("mhc-new-output",)),
    SeedRow("2.9", "single_shot_inference: pre-allocated `dec_X_buf`", ("per-step-x-buffer",)),
    SeedRow("3.1", "`dec_tid_buf[0] = python_int` -> pinned CPU buffer + `copy_`",
            ("scalar-token-write", "pageable-h2d")),
    SeedRow("3.2", "grouped_linear.py: `expert_offsets[g] = python_int`", ("offsets-python-write",)),
    SeedRow("3.3", "grouped_linear.py: `if group_offsets[0] != 0`", ("offsets-branch",)),
    SeedRow("3.4", "moe.py: `torch.bincount` (data-dependent shapes) -> `scatter_add_`", ("bincount-counts",)),
    SeedRow("3.5", "compressor returns `None` (Phase 2: eager break at attention)",
            ("compressor-returns-none", "compressor-boundary-item")),
    SeedRow("3.6", "KV `n_comp` Python int (Phase 2: attention outside the graph)", ("python-n-comp",)),
    SeedRow("4.1", "`X.to(f\"cuda:{gpu}\")` in the layer loop", ("layer-loop-to-device",)),
    SeedRow("4.2", "`positions.to(rope_cos.device)`", ("positions-to-rope-device",)),
    SeedRow("4.3", "`token_id.to(x.device)` in moe_forward", ("token-to-layer-device",)),
    SeedRow("5.1", "synchronize at 816, 1041-1065 behind `_profile_detail` (must be False in capture)",
            ("cuda-synchronize", "profile-sync-guarded")),
    SeedRow("5.2", "synchronize at 1088 behind the profile flag", ("cuda-synchronize", "profile-sync-guarded")),
    SeedRow("6.1", "gemm_runner.py:189 `torch.zeros()` in run_nvfp4_grouped_gemm", ("zeros-gemm-out",)),
    SeedRow("6.2", "gemm_runner.py:433 `torch.zeros()` in run_fused_swiglu_grouped_gemm", ("zeros-gemm-out",)),
    SeedRow("6.3", "grouped_linear.py: no pre-allocated GEMM output buffer", ("zeros-gemm-out",)),
    SeedRow("6.4", "moe.py: no pre-allocated L1 output buffer", ("zeros-gemm-out",)),
    SeedRow("6.5", "shared_expert.py: no pre-allocated L1 output buffer", ("zeros-gemm-out",)),
    SeedRow("6.6", "moe.py: no pre-allocated L2 output buffer", ("zeros-gemm-out",)),
    SeedRow("6.7", "shared_expert.py: no pre-allocated L2 output buffer", ("zeros-gemm-out",)),
    SeedRow("6.8", "linear.py: no pre-allocated GEMM output buffer", ("zeros-gemm-out",)),
    SeedRow("6.9", "grouped.py `to_blocked()`: Python view ops 'not graph-capturable' (scale swizzle)",
            reason=NO_SWIZZLE),
    SeedRow("6.10", "moe.py `_assemble_scales_cudagraph_safe`: Python view ops (scale swizzle)", reason=NO_SWIZZLE),
    SeedRow("6.11", "shared_expert.py `_assemble_scales_single_group` (scale swizzle)", reason=NO_SWIZZLE),
    SeedRow("6.12", "CRITICAL: the swizzle buffers overwritten with `None`, so capture took the Python path",
            reason="a logic bug (a buffer allocated, then set to None), not a hazard pattern: graphlint reports "
                   "what the fallback path does, and the seed's fallback was the view ops of rows 6.9-6.11"),
    SeedRow("6.13", "shared_expert.py: `_l1_gsa_buf.copy_(gsa_l1_gpu[:1].reshape(1))`", ("gsa-copy-from-view",)),
    SeedRow("6.14", "shared_expert.py: `_l2_gsa_buf.copy_(gsa_l2_gpu[:1].reshape(1))`", ("gsa-copy-from-view",)),
    SeedRow("6.15", "moe.py: the same gsa copy for L1 and L2", ("gsa-copy-from-view",)),
    SeedRow("6.16", "linear.py: `_gsa_buf.copy_(gsa[:1].reshape(1))`", ("gsa-copy-from-view",)),
    SeedRow("6.17", "grouped_linear.py: `_gsa_buf[:1].copy_()` + `_gsa_buf[1:].copy_(expand(...))`",
            ("gsa-copy-from-view",)),
    SeedRow("6.18", "dense router: `hidden.float() @ gate_bf16.T.float()` in capture", ("router-fp32-weight-cast",)),
    SeedRow("6.19", "CUDAGraphDecoder: `attn_norm_w.to(dev, torch.float32)` in capture", ("norm-weight-fp32-cast",)),
    SeedRow("6.20", "fine: mhc `_dynamic_params` `X_flat.float()`", reason="fine by design; the clean full-graph "
            "decoder does the same (`mhc._stream_mixes`): the baseline row shows neither half reports it"),
    SeedRow("6.21", "fine: `sinkhorn_knopp` kernel returns a new tensor", reason="fine by design; the clean decoder's "
            "`kernels.sinkhorn` does the same (baseline row)"),
    SeedRow("6.22", "fine: `l1_out[padded_dst]` advanced indexing", reason="fine by design; the clean decoder gathers "
            "with `index_select` the same way (baseline row)"),
    SeedRow("6.23", "fine: `deinterleave_l1_weights` (non-fused path only)", reason="not on the decode path "
            "(the seed's non-fused path; dsv4's L1 is fused)"),
    SeedRow("6.24", "fine: `quantize_nvfp4_gpu_fused` returns new tensors", reason="fine by design; the clean "
            "decoder's `kernels.nvfp4_fake_quant` does the same (baseline row)"),
    SeedRow("6.25", "fine: `.contiguous()` calls on non-contiguous tensors", ("contiguous-copy",)),
    SeedRow("7.1", "v1: `torch.cuda.set_device(t.device.index)` before `from_dlpack` (reverted)",
            ("set-device-in-capture",)),
    SeedRow("7.2", "v2: `_DLPatchTensor` forcing `dl_device` (reverted)",
            reason="a reverted attempt at a fix (a DLPack wrapper), not a state the engine shipped in"),
    SeedRow("7.3", "v3: patch `torch.cuda.current_device` so `from_dlpack` sees the tensor's device",
            ("from-dlpack-in-capture", "kernel-without-stream")),
    SeedRow("8.1", "`positions.to(rope_cos.device)` inside forward_layer in capture", ("positions-to-rope-device",)),
    SeedRow("8.2", "`X.to(f\"cuda:{gpu}\")` in the layer loop", ("layer-loop-to-device",)),
    SeedRow("8.3", "`token_id.to(x.device)` in moe_forward", ("token-to-layer-device",)),
    SeedRow("9.1", "capture on cuda:1-7 replays all zeros: explicit `torch.cuda.Stream(device=...)`",
            ("capture-without-stream",)),
    SeedRow("9.2", "GPU 0: empty graph with `torch.cuda.set_device()`", ("capture-without-stream", "kernel-without-stream")),
    SeedRow("9.3", "no sync between the graph streams and the default stream (eager attention)",
            reason="an absent event wait: the static half cannot see an absence, and graphlint's harness orders "
                   "its own streams, so only the engine's own runner with work on two streams shows the race "
                   "(the A/B decoder's eager attention, or two GPUs); a CUDA stream-sanitizer probe would be "
                   "the way to see it (not built)"),
    SeedRow("S.1", "`dec_tid_buf.copy_(dec_tid_pinned)`: a valid pinned memcpy (sync-debug overly strict)",
            ("pinned-token-copy",)),
    SeedRow("P1.1", "gate commits on a capture test", reason="a check, not a fault: `graphlint capture-test` and "
            "the pytest fixture are that gate"),
    SeedRow("P1.2", "optimise stream sync: pre-create events", reason="a per-step host cost outside capture; dsv4's "
            "runner pre-creates its events (`dsv4/graph.py`); no rule reports event creation"),
    SeedRow("P1.3", "long-run stability test (512+ tokens)", reason="a check: the soak probe (`--steps N`)"),
    SeedRow("P1.4", "memory leak check: no growing GPU usage", ("growing-history",)),
    SeedRow("P1.5", "numerical drift check over 512+ steps", reason="a check: the soak probe's drift rule (GL392); "
            "no seed fix to plant"),
    SeedRow("P2.1", "paged KV cache (fixed blocks + block table)", reason="a design, not a fault"),
    SeedRow("P2.2", "device-side compressor boundary detection + fixed-shape output",
            ("compressor-boundary-item", "compressor-returns-none")),
    SeedRow("P2.3", "full graph capture including FMHA", reason="the clean full-graph decoder itself (baseline row)"),
    SeedRow("P2.4", "bucket-by-shape for variable sequence lengths", reason="dsv4 decodes batch 1, one token: one shape"),
)
