"""Reproducer: a decode step that builds a tensor on the host and copies it to the GPU fails CUDA-graph
capture with "Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the CPU
tensor is pinned" (transformers 5.17, torch 2.11, H200; graphlint's zoo, issue 21, GL590).

Why: a copy from pageable host memory is synchronous and cannot be recorded in a graph. Four lines
of transformers 5.17 make such a tensor inside every step, each a different spelling of it:

- ``masking_utils.py:604`` (``eager_mask``): ``torch.where(mask, torch.tensor(0.0, device=mask.device,
  dtype=dtype), min_dtype)``: ``torch.tensor`` of a Python float with ``device=cuda`` is made on the
  host, then copied. Every model on the eager attention path: gpt_oss, bloom, codegen, deepseek_v4.
- ``models/cpmant/modeling_cpmant.py:567`` (``_prepare_attention_mask``):
  ``torch.tensor(list(range(seqlen - self.prompt_length))[::-1], device=device)``: a Python list.
- ``models/falcon/modeling_falcon.py:283`` (``_split_heads``, multi-query Falcon):
  ``fused_qkv[..., [-2], :]``: a Python list as an index becomes a host index tensor, copied by the
  indexing op.
- ``models/phimoe/modeling_phimoe.py:96`` (``PhimoeRotaryEmbedding.forward``): ``self.rope_init_fn(
  self.config)`` recomputes ``inv_freq`` every step without a device (so on the CPU), and
  ``.to(..., device=x.device)`` copies it.

    python reports/zoo/repro/host_to_device_copy.py                      # CPU: the host-made tensors, per line
    python reports/zoo/repro/host_to_device_copy.py --cuda               # GPU: capture each model's step
    python reports/zoo/repro/host_to_device_copy.py --cuda --arch falcon # one of them

Plain torch + transformers; nothing of graphlint. Written for graphlint's zoo (issue 21).
"""

import argparse
import inspect
import subprocess
import sys
import traceback

import torch
import transformers
from torch.utils._python_dispatch import TorchDispatchMode

TINY = dict(vocab_size=256, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=256)
# name: (config class, model class, config, the line that copies); every config is explicit and tiny
ARCHS = {
    "gpt_oss": ("GptOssConfig", "GptOssForCausalLM", dict(
        TINY, intermediate_size=64, head_dim=16, num_key_value_heads=1, num_local_experts=4, num_experts_per_tok=2,
        sliding_window=8, layer_types=["sliding_attention", "full_attention"],
        rope_parameters=dict(rope_type="default", rope_theta=10000.0)), "masking_utils.py:604"),
    "bloom": ("BloomConfig", "BloomForCausalLM", dict(vocab_size=256, hidden_size=64, n_layer=2, n_head=4),
              "masking_utils.py:604"),
    "codegen": ("CodeGenConfig", "CodeGenForCausalLM", dict(vocab_size=256, n_embd=64, n_layer=2, n_head=4,
                rotary_dim=4, n_positions=256, bos_token_id=0, eos_token_id=0), "masking_utils.py:604"),
    "deepseek_v4": ("DeepseekV4Config", "DeepseekV4ForCausalLM", dict(
        TINY, num_hidden_layers=2, moe_intermediate_size=32, head_dim=16, num_key_value_heads=1, q_lora_rank=16,
        o_lora_rank=16, o_groups=1, n_routed_experts=4, num_experts_per_tok=2, index_n_heads=4, index_head_dim=8,
        qk_rope_head_dim=8, sliding_window=8, layer_types=["heavily_compressed_attention", "compressed_sparse_attention"],
        mlp_layer_types=["hash_moe", "moe"]), "masking_utils.py:604"),
    "cpmant": ("CpmAntConfig", "CpmAntForCausalLM", dict(vocab_size=256, hidden_size=64, num_attention_heads=4,
               dim_head=16, dim_ff=128, num_hidden_layers=2), "models/cpmant/modeling_cpmant.py:567"),
    "falcon": ("FalconConfig", "FalconForCausalLM", dict(TINY, multi_query=True, new_decoder_architecture=False),
               "models/falcon/modeling_falcon.py:283"),
    "phimoe": ("PhimoeConfig", "PhimoeForCausalLM", dict(TINY, intermediate_size=96, num_key_value_heads=1,
               num_local_experts=4, num_experts_per_tok=2, max_position_embeddings=4096),
               "models/phimoe/modeling_phimoe.py:96"),
}
# bloom and cpmant refuse a StaticCache in 5.17 (graphlint's zoo ran them with a DynamicCache, as here);
# deepseek_v4 brings caches of its own (DynamicCache builds them from the config)
DYNAMIC = {"bloom", "cpmant", "deepseek_v4"}


def build(arch, device, seed=0, dtype=torch.float32):
    config_name, model_name, config, _ = ARCHS[arch]
    torch.manual_seed(seed)
    model = getattr(transformers, model_name)(getattr(transformers, config_name)(**config)).to(device, dtype).eval()
    if arch in DYNAMIC:
        return model, transformers.DynamicCache(config=model.config)
    return model, transformers.StaticCache(config=model.config, max_cache_len=32)


def step(model, cache, tokens, positions, position):
    tokens.fill_(5 + position)
    positions.fill_(position)
    name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    return model(input_ids=tokens, position_ids=positions, use_cache=True, **{name: cache}).logits


def transformers_line():
    frames = [f for f in traceback.extract_stack() if "transformers" + "/" in f.filename.replace("\\", "/")]
    return f"{frames[-1].filename.replace(chr(92), '/').split('transformers/')[-1]}:{frames[-1].lineno}" if frames else "?"


class HostMade(TorchDispatchMode):
    """Tensors the step makes from host data: ``aten.lift_fresh`` is what ``torch.tensor(data)`` and a
    Python-list index dispatch (on CUDA: made on the host, then copied)."""

    def __init__(self):
        super().__init__()
        self.lines = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten.lift_fresh.default:
            where = transformers_line()
            self.lines[where] = self.lines.get(where, 0) + 1
        return func(*args, **(kwargs or {}))


def show_on_cpu(arch):
    model, cache = build(arch, "cpu")
    tokens, positions = torch.zeros(1, 1, dtype=torch.long), torch.zeros(1, 1, dtype=torch.long)
    rope = getattr(getattr(model, "model", None), "rotary_emb", None)
    calls = []
    if arch == "phimoe":  # inv_freq is recomputed per step, with no device: it is made on the CPU
        original = rope.rope_init_fn

        def spy(config, device=None, *rest):
            inv_freq, scale = original(config, device, *rest)
            calls.append(f"device argument {device!r} -> inv_freq on {inv_freq.device}")
            return inv_freq, scale

        rope.rope_init_fn = spy
    spy_mode = HostMade()
    with torch.no_grad():
        step(model, cache, tokens, positions, 0)
        with spy_mode:
            step(model, cache, tokens, positions, 1)  # one decode step
    expected = ARCHS[arch][3]
    found = {k: v for k, v in spy_mode.lines.items()}
    print(f"{arch}: tensors made from host data in one decode step: {found or 'none'}")
    if calls:
        print(f"{arch}: rope_init_fn called {len(calls)} time(s) in that step: {calls[-1]} "
              f"(modeling_phimoe.py:96 then copies it to the model's device)")
    hit = expected in found or (arch == "phimoe" and calls)
    print(f"{arch}: the line graphlint's zoo blamed ({expected}) {'is' if hit else 'is NOT'} among them")
    return bool(hit)


def capture(arch):
    device = torch.device("cuda")
    model, cache = build(arch, device, dtype=torch.bfloat16)  # as the zoo ran
    tokens = torch.zeros(1, 1, dtype=torch.long, device=device)
    positions = torch.zeros(1, 1, dtype=torch.long, device=device)
    with torch.no_grad():
        step(model, cache, tokens, positions, 0)
        torch.cuda.synchronize()
        graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
        try:
            with torch.cuda.graph(graph, stream=stream):
                step(model, cache, tokens, positions, 1)
        except Exception as exc:  # noqa: BLE001 - the failure is the point
            frames = [f for f in traceback.extract_tb(exc.__traceback__) if "transformers/" in f.filename]
            where = f" at {frames[-1].filename.split('transformers/')[-1]}:{frames[-1].lineno}" if frames else ""
            print(f"{arch}: capture FAILED{where}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
            return
    print(f"{arch}: captured (not expected in transformers 5.17: {ARCHS[arch][3]} copies host data)")


def run_children(argvs):
    """Each case in a fresh process (a failed capture can leave its process unable to capture again), all
    at once (they are small; the GPU command gives each script 60 s); outputs in order."""
    procs = [subprocess.Popen([sys.executable, __file__, *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) for argv in argvs]
    for proc in procs:
        print(proc.communicate()[0], end="", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuda", action="store_true", help="capture each model's decode step on the GPU")
    parser.add_argument("--arch", default="all", choices=["all", *ARCHS])
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child process: capture one
    args = parser.parse_args()
    archs = list(ARCHS) if args.arch == "all" else [args.arch]
    if args.one:
        capture(args.arch)
        raise SystemExit(0)
    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    missing = [arch for arch in archs if not show_on_cpu(arch)]
    if args.cuda:
        if not torch.cuda.is_available():
            raise SystemExit("--cuda needs a GPU")
        run_children([["--arch", arch, "--one"] for arch in archs])
    raise SystemExit(1 if missing else 0)
