"""Reproducer: MiniMax's decode step captures as a CUDA graph but replays stale from the second replay
on (transformers 5.17, torch 2.11, H200; graphlint's zoo, issue 21: GL391, with GL394 at
``cache_utils.py:146``).

Why: MiniMax refuses every cache but its own (``modeling_minimax.py:657``: "MiniMax uses cache of its
own and is not compatible with `past_key_values` of type StaticCache"), and ``MiniMaxCache`` keeps
its state in tensors it replaces every step instead of writing into fixed buffers:

- the full-attention layers are ``DynamicLayer``s: ``cache_utils.py:146-147``
  (``DynamicLayer.update``) does ``self.keys = torch.cat([self.keys, key_states], dim=-2)``, a new,
  longer tensor every step;
- the lightning (linear) attention layers store their state with
  ``past_key_values.set_linear_cache(self.layer_idx, attn_weights_inter)``
  (``modeling_minimax.py:265``), a new tensor every step.

A graph captured at step k keeps reading the tensors that were the cache at step k and writes
into the ones it allocated then: each replay recomputes step k+1's cache from step k's state, so
from the second replay on the output is stale. Not capturable as is: the cache has to become
static (preallocated keys and values written in place, the linear state copied in place).

    python reports/zoo/repro/minimax_own_cache.py          # CPU: the refusal, and the cache's tensors per step
    python reports/zoo/repro/minimax_own_cache.py --cuda   # GPU: capture at step 1, replay, compare

Plain torch + transformers; nothing of graphlint. Written for graphlint's zoo (issue 21).
"""

import argparse
import inspect

import torch
import transformers
from transformers import MiniMaxConfig, MiniMaxForCausalLM

CONFIG = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=1, head_dim=16, num_local_experts=4, num_experts_per_tok=2,
              max_position_embeddings=256, layer_types=["full_attention", "linear_attention"])


def build(device, seed=0, dtype=torch.float32):
    torch.manual_seed(seed)
    return MiniMaxForCausalLM(MiniMaxConfig(**CONFIG)).to(device, dtype).eval()


def cache_arg(model):
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def step(model, cache, tokens, positions, position):
    """One decode step; ``cache=None`` at step 0: the model makes its own ``MiniMaxCache``."""
    tokens.fill_(5 + position)
    positions.fill_(position)
    out = model(input_ids=tokens, position_ids=positions, use_cache=True, **{cache_arg(model): cache})
    return out.logits, getattr(out, "past_key_values", None) or getattr(out, "cache", None)


def show_on_cpu():
    model = build("cpu")
    tokens, positions = torch.zeros(1, 1, dtype=torch.long), torch.zeros(1, 1, dtype=torch.long)
    with torch.no_grad():
        try:
            step(model, transformers.StaticCache(config=model.config, max_cache_len=32), tokens, positions, 0)
            print("StaticCache: accepted (not expected in transformers 5.17)")
        except ValueError as exc:
            print(f"StaticCache: refused: {str(exc).splitlines()[0]}")
        cache = None
        for position in range(4):
            _, cache = step(model, cache, tokens, positions, position)
            keys = cache.layers[0].keys
            linear = next(t for t in cache.linear_cache if isinstance(t, torch.Tensor))
            print(f"step {position}: {type(cache).__name__}: full-attention keys {list(keys.shape)} at 0x{keys.data_ptr():x}, "
                  f"linear state {list(linear.shape)} at 0x{linear.data_ptr():x}")
    print("every step: new tensors (the keys also grow): a graph captured at one step keeps that step's tensors")


def capture_and_compare(steps=8):
    """cuDNN's SDPA is off here: with it (torch's choice for bf16 on the H200) the capture fails
    first, inside ``sdpa_attention.py:158`` (CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED,
    seen on the H200), because the keys are one longer every step and cuDNN builds and allocates a
    plan for each new length, inside the capture. That is the same growth seen from another side;
    without it the capture succeeds and the replay shows what growth does to a graph."""
    torch.backends.cuda.enable_cudnn_sdp(False)
    device = torch.device("cuda")
    eager, graphed = build(device, dtype=torch.bfloat16), build(device, dtype=torch.bfloat16)  # as the zoo ran
    tokens = [torch.zeros(1, 1, dtype=torch.long, device=device) for _ in range(2)]
    positions = [torch.zeros(1, 1, dtype=torch.long, device=device) for _ in range(2)]
    with torch.no_grad():
        graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
        _, eager_cache = step(eager, None, tokens[0], positions[0], 0)
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):  # step 0 on the capture stream: cuDNN makes its handle and
            _, graph_cache = step(graphed, None, tokens[1], positions[1], 0)  # workspace there, not in the capture
        torch.cuda.synchronize()
        with torch.cuda.graph(graph, stream=stream):  # captured at step 1 (the capture runs no kernels)
            out, graph_cache = step(graphed, graph_cache, tokens[1], positions[1], 1)
        for position in range(1, steps):
            tokens[1].fill_(5 + position)
            positions[1].fill_(position)
            graph.replay()
            ref, eager_cache = step(eager, eager_cache, tokens[0], positions[0], position)
            torch.cuda.synchronize()
            print(f"step {position}: max |graph - eager| = {(out - ref).abs().max().item():.4g} "
                  f"(eager keys {list(eager_cache.layers[0].keys.shape)}, graph's {list(graph_cache.layers[0].keys.shape)})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuda", action="store_true")
    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    show_on_cpu()
    if parser.parse_args().cuda:
        capture_and_compare()
