"""Reproducer: a sliding-window model's decode step, captured as a CUDA graph with a StaticCache,
replays stale from the second replay on (transformers 5.17-5.24, torch 2.11+).

Why: the step reads Python ints that change every step, and a CUDA graph freezes them at capture:
``sdpa_mask`` adds the query offset ``q_offset`` (a Python int, the cache length) to an ``arange``
(masking_utils.py ``q_arange = torch.arange(q_length) + q_offset``), and the sliding layer keeps its
length in ``StaticSlidingWindowLayer.cumulative_length_int``. Full-attention-only models skip the
mask at decode (``_ignore_causal_mask_sdpa``), so Llama-like models are not affected.

    python reports/zoo/repro/sliding_window_mask.py          # CPU: shows the per-step Python ints
    python reports/zoo/repro/sliding_window_mask.py --cuda   # GPU: capture at step 1, replay, compare

Plain torch + transformers; nothing of graphlint. Written for graphlint's zoo (issue 21).
"""

import argparse
import inspect

import torch
import transformers
from transformers import Gemma2Config, Gemma2ForCausalLM, StaticCache

CONFIG = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, head_dim=16, sliding_window=8, max_position_embeddings=256,
              layer_types=["sliding_attention", "full_attention"])


def build(device, seed=0):
    torch.manual_seed(seed)
    model = Gemma2ForCausalLM(Gemma2Config(**CONFIG)).to(device).eval()
    return model, StaticCache(config=model.config, max_cache_len=32)


def step_args(model, cache, tokens, positions, step):
    tokens.fill_(7 * step + 3)
    positions.fill_(step)
    name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    return dict(input_ids=tokens, position_ids=positions, use_cache=True, **{name: cache})


def show_python_ints():
    """On any device: the values the mask is built from, per step, are host ints."""
    model, cache = build("cpu")
    seen = []
    original = transformers.masking_utils.sdpa_mask

    def spy(*args, **kwargs):
        offset = kwargs.get("q_offset")
        kind = "device tensor" if isinstance(offset, torch.Tensor) else type(offset).__name__
        seen.append(f"{kind} {int(offset)}")  # its value at this call
        return original(*args, **kwargs)

    functions = getattr(transformers.masking_utils, "ALL_MASK_ATTENTION_FUNCTIONS", None)
    mapping = getattr(functions, "_global_mapping", {}) if functions is not None else {}
    mapped = mapping.get("sdpa")
    transformers.masking_utils.sdpa_mask = spy
    if mapped is not None:
        mapping["sdpa"] = spy
    tokens, positions = torch.zeros(1, 1, dtype=torch.long), torch.zeros(1, 1, dtype=torch.long)
    try:
        with torch.no_grad():
            for step in range(4):
                model(**step_args(model, cache, tokens, positions, step))
    finally:  # the spy reads its argument on the host: it must not be in place when --cuda captures
        transformers.masking_utils.sdpa_mask = original
        if mapped is not None:
            mapping["sdpa"] = mapped
    layer = next(l for l in cache.layers if getattr(l, "is_sliding", False))
    print("sdpa_mask's q_offset, call by call (full layer, sliding layer per step):", seen)
    print("sliding layer cumulative_length_int after 4 steps:", layer.cumulative_length_int, type(layer.cumulative_length_int))


def capture_and_compare(steps=8):
    """Steps 1-7: the cache holds 32 positions and the window is 8; past the window the stale replay
    also writes where it should not, and a later kernel hits a device-side assert (seen on the H200 at
    step 8), which would hide the comparison this prints."""
    device = torch.device("cuda")
    eager_model, eager_cache = build(device)
    graph_model, graph_cache = build(device)
    tokens = [torch.zeros(1, 1, dtype=torch.long, device=device) for _ in range(2)]
    positions = [torch.zeros(1, 1, dtype=torch.long, device=device) for _ in range(2)]
    with torch.no_grad():
        eager_model(**step_args(eager_model, eager_cache, tokens[0], positions[0], 0))  # step 0 eager on both
        graph_model(**step_args(graph_model, graph_cache, tokens[1], positions[1], 0))
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        args = step_args(graph_model, graph_cache, tokens[1], positions[1], 1)
        with torch.cuda.graph(graph, stream=stream):
            out = graph_model(**args).logits  # captured at step 1 (this capture runs no kernels)
        graph.replay()
        for step in range(1, steps):
            if step > 1:
                step_args(graph_model, graph_cache, tokens[1], positions[1], step)  # refill the static inputs
                graph.replay()
            ref = eager_model(**step_args(eager_model, eager_cache, tokens[0], positions[0], step)).logits
            torch.cuda.synchronize()
            print(f"step {step:2d}: max |graph - eager| = {(out - ref).abs().max().item():.4g}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuda", action="store_true")
    show_python_ints()
    if parser.parse_args().cuda:
        capture_and_compare()
