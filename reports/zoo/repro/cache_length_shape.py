"""Reproducer: the decoder-only (``...ForCausalLM``) step of BART-style models fails CUDA-graph capture
with a StaticCache: "CUDA error: operation not permitted when stream is capturing" (transformers
5.17, torch 2.11, H200; graphlint's zoo, issue 21, GL590). Eagerly it is a stream sync per step.

Why: with no ``attention_mask`` the model builds an all-ones mask as long as the cache:
``attention_mask = torch.ones(batch_size, past_key_values_length + seq_length, device=...)``. A
``StaticCache``'s ``get_seq_length()`` is ``StaticLayer.cumulative_length``, a device tensor (so that
the cache itself can be captured), and a device tensor used as a size is read on the host
(``aten._local_scalar_dense``, a sync); under capture the sync is refused. Were it read, the mask's
shape would still change every step, which no graph can replay. The lines (5.17):

- ``models/bart/modeling_bart.py:626``, ``models/bigbird_pegasus/modeling_bigbird_pegasus.py:1757``,
  ``models/blenderbot/modeling_blenderbot.py:590``,
  ``models/blenderbot_small/modeling_blenderbot_small.py:556``, ``models/biogpt/modeling_biogpt.py:372``
  (``torch.ones(batch_size, mask_seq_length, ...)``);
- ``models/big_bird/modeling_big_bird.py:1561`` (``torch.ones((batch_size, seq_length +
  past_key_values_length), ...)``).

Passing an ``attention_mask`` of the cache's full length sidesteps it (``--with-mask`` shows it).

    python reports/zoo/repro/cache_length_shape.py                 # CPU: the host read, by line
    python reports/zoo/repro/cache_length_shape.py --cuda          # GPU: capture each model's step
    python reports/zoo/repro/cache_length_shape.py --cuda --arch biogpt --with-mask

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

SEQ2SEQ = dict(vocab_size=256, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
               decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=256,
               is_decoder=True)
BERT = dict(vocab_size=256, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
            max_position_embeddings=256, is_decoder=True)
ARCHS = {  # name: (config class, model class, config, the line that reads the cache length on the host)
    "bart": ("BartConfig", "BartForCausalLM", SEQ2SEQ, "models/bart/modeling_bart.py:626"),
    "big_bird": ("BigBirdConfig", "BigBirdForCausalLM", dict(BERT, attention_type="original_full"),
                 "models/big_bird/modeling_big_bird.py:1561"),
    "bigbird_pegasus": ("BigBirdPegasusConfig", "BigBirdPegasusForCausalLM", dict(SEQ2SEQ, attention_type="original_full"),
                        "models/bigbird_pegasus/modeling_bigbird_pegasus.py:1757"),
    "biogpt": ("BioGptConfig", "BioGptForCausalLM", dict(BERT), "models/biogpt/modeling_biogpt.py:372"),
    "blenderbot": ("BlenderbotConfig", "BlenderbotForCausalLM", SEQ2SEQ, "models/blenderbot/modeling_blenderbot.py:590"),
    "blenderbot-small": ("BlenderbotSmallConfig", "BlenderbotSmallForCausalLM", SEQ2SEQ,
                         "models/blenderbot_small/modeling_blenderbot_small.py:556"),
}
MAX_LEN = 32


def build(arch, device, seed=0, dtype=torch.float32):
    config_name, model_name, config, _ = ARCHS[arch]
    torch.manual_seed(seed)
    model = getattr(transformers, model_name)(getattr(transformers, config_name)(**config)).to(device, dtype).eval()
    return model, transformers.StaticCache(config=model.config, max_cache_len=MAX_LEN)


def step(model, cache, tokens, positions, position, mask=None):
    tokens.fill_(5 + position)
    positions.fill_(position)
    params = inspect.signature(model.forward).parameters
    kwargs = {"cache" if "cache" in params else "past_key_values": cache}
    if "position_ids" in params:
        kwargs["position_ids"] = positions
    if mask is not None:  # a fixed-length mask: 1 up to this position, 0 after
        mask.copy_((torch.arange(MAX_LEN, device=mask.device) <= positions[0, 0]).to(mask.dtype)[None])
        kwargs["attention_mask"] = mask
    return model(input_ids=tokens, use_cache=True, **kwargs).logits


def transformers_line():
    frames = [f for f in traceback.extract_stack() if "transformers/" in f.filename.replace("\\", "/")]
    return f"{frames[-1].filename.replace(chr(92), '/').split('transformers/')[-1]}:{frames[-1].lineno}" if frames else "?"


class HostReads(TorchDispatchMode):
    """``aten._local_scalar_dense``: a device value read on the host, by the transformers line that asked."""

    def __init__(self):
        super().__init__()
        self.reads = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default:
            where = transformers_line()
            self.reads[where] = self.reads.get(where, 0) + 1
        return func(*args, **(kwargs or {}))


def show_on_cpu(arch):
    model, cache = build(arch, "cpu")
    tokens, positions = torch.zeros(1, 1, dtype=torch.long), torch.zeros(1, 1, dtype=torch.long)
    mode = HostReads()
    with torch.no_grad():
        step(model, cache, tokens, positions, 0)
        length = cache.get_seq_length()
        length = f"{type(length).__name__} {length!r} on {getattr(length, 'device', 'the host')}"  # before step 1 adds to it
        with mode:
            step(model, cache, tokens, positions, 1)
    print(f"{arch}: StaticCache.get_seq_length() after one token = {length}; "
          f"values read on the host in one step: {mode.reads or 'none'}")
    return ARCHS[arch][3] in mode.reads


def capture(arch, with_mask):
    device = torch.device("cuda")
    model, cache = build(arch, device, dtype=torch.bfloat16)  # as the zoo ran
    tokens = torch.zeros(1, 1, dtype=torch.long, device=device)
    positions = torch.zeros(1, 1, dtype=torch.long, device=device)
    mask = torch.zeros(1, MAX_LEN, dtype=torch.long, device=device) if with_mask else None
    label = f"{arch} decode step" + (" with a fixed-length attention_mask" if with_mask else "")
    with torch.no_grad():
        step(model, cache, tokens, positions, 0, mask)
        torch.cuda.synchronize()
        graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
        try:
            with torch.cuda.graph(graph, stream=stream):
                out = step(model, cache, tokens, positions, 1, mask)
        except Exception as exc:  # noqa: BLE001 - the failure is the point
            frames = [f for f in traceback.extract_tb(exc.__traceback__) if "transformers/" in f.filename]
            where = f" at {frames[-1].filename.split('transformers/')[-1]}:{frames[-1].lineno}" if frames else ""
            print(f"{label}: capture FAILED{where}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
            return
        eager_model, eager_cache = build(arch, device, dtype=torch.bfloat16)
        eager_tokens, eager_positions = torch.zeros_like(tokens), torch.zeros_like(positions)
        eager_mask = torch.zeros_like(mask) if with_mask else None
        step(eager_model, eager_cache, eager_tokens, eager_positions, 0, eager_mask)
        worst = 0.0
        for position in range(1, 6):  # the capture ran no kernels: replay from step 1
            tokens.fill_(5 + position)
            positions.fill_(position)
            if mask is not None:
                mask.copy_((torch.arange(MAX_LEN, device=device) <= position).to(mask.dtype)[None])
            graph.replay()
            ref = step(eager_model, eager_cache, eager_tokens, eager_positions, position, eager_mask)
            worst = max(worst, (out - ref).abs().max().item())
        print(f"{label}: captured; replay over 5 steps, max |graph - eager| = {worst:.3g}")


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
    parser.add_argument("--with-mask", action="store_true", help="pass a fixed-length attention_mask (the workaround)")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child process: capture one
    args = parser.parse_args()
    if args.one:
        capture(args.arch, args.with_mask)
        raise SystemExit(0)
    archs = list(ARCHS) if args.arch == "all" else [args.arch]
    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    missing = [arch for arch in archs if not show_on_cpu(arch)]
    if args.cuda:
        if not torch.cuda.is_available():
            raise SystemExit("--cuda needs a GPU")
        run_children([["--arch", arch, "--one", *(["--with-mask"] if args.with_mask else [])] for arch in archs])
    raise SystemExit(1 if missing else 0)
