"""Reproducer: a Mixtral/Qwen3-MoE decode step fails CUDA-graph capture in float32 at
transformers/integrations/moe.py ``_grouped_mm`` (``torch.nn.functional.grouped_mm(..., offs=offs)``),
and (expected, to confirm on the GPU) captures in bfloat16.

Why: transformers picks the grouped_mm experts path whenever ``torch.nn.functional.grouped_mm``
exists and the GPU is SM80+ (``_can_use_grouped_mm``). PyTorch's CUDA grouped_mm has a fast path
for bf16 on SM90/SM100 only; any other dtype (float32, float16) or GPU takes a fallback that reads
``offs`` on the host and loops over the groups: a device-to-host copy and a sync in every MoE layer
of every step, and under capture "Cannot copy between CPU and CUDA tensors during CUDA graph
capture". graphlint's zoo saw exactly that with a float32 tiny Mixtral on an H200 (GL590 at
moe.py:332, GL191: 4 stream syncs per step).

    python reports/zoo/repro/moe_grouped_mm.py        # needs CUDA: torch alone, then a tiny Mixtral

Plain torch + transformers; nothing of graphlint. Written for graphlint's zoo (issue 21).
"""

import inspect
import subprocess
import sys

import torch
from transformers import MixtralConfig, MixtralForCausalLM, StaticCache


def try_capture(fn, label):
    fn()  # warm-up, eager
    torch.cuda.synchronize()
    graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    try:
        with torch.cuda.graph(graph, stream=stream):
            out = fn()
    except Exception as exc:  # noqa: BLE001 - the point of the reproducer
        print(f"{label}: capture FAILED: {type(exc).__name__}: {str(exc).splitlines()[0]}")
        torch.cuda.synchronize()
        return
    expected = fn()
    graph.replay()
    torch.cuda.synchronize()
    print(f"{label}: captured; replay max |diff| vs eager = {(out - expected).abs().max().item():.3g}")


def grouped_mm_alone(dtype):
    x = torch.randn(8, 64, device="cuda", dtype=dtype)
    w = torch.randn(4, 64, 32, device="cuda", dtype=dtype)
    offs = torch.tensor([2, 4, 6, 8], device="cuda", dtype=torch.int32)
    try_capture(lambda: torch.nn.functional.grouped_mm(x, w, offs=offs), f"torch grouped_mm {dtype}")


def mixtral_step(dtype):
    torch.manual_seed(0)
    config = MixtralConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=1, num_local_experts=4, num_experts_per_tok=2,
                           max_position_embeddings=256)
    model = MixtralForCausalLM(config).to("cuda", dtype).eval()
    cache = StaticCache(config=config, max_cache_len=32)
    tokens = torch.full((2, 1), 5, device="cuda")
    positions = torch.zeros(2, 1, dtype=torch.long, device="cuda")
    name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    with torch.no_grad():
        model(input_ids=tokens, position_ids=positions, use_cache=True, **{name: cache})  # position 0
        positions.fill_(1)
        try_capture(lambda: model(input_ids=tokens, position_ids=positions, use_cache=True, **{name: cache}).logits,
                    f"tiny Mixtral decode step {dtype} (experts: {model.config._experts_implementation})")


if __name__ == "__main__":
    # each case in a fresh process: a failed capture can leave its process unable to capture again
    if len(sys.argv) == 3:
        {"alone": grouped_mm_alone, "mixtral": mixtral_step}[sys.argv[1]](getattr(torch, sys.argv[2]))
        raise SystemExit(0)
    if not torch.cuda.is_available():
        raise SystemExit("needs CUDA: the failure is in grouped_mm's CUDA fallback")
    print(torch.__version__, torch.cuda.get_device_name(), torch.cuda.get_device_capability())
    for dtype in ("float32", "bfloat16"):
        for case in ("alone", "mixtral"):
            subprocess.run([sys.executable, __file__, case, dtype], check=False)
