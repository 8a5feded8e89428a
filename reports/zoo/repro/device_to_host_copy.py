"""Reproducer: a decode step that copies a device tensor to the host fails CUDA-graph capture with
"Cannot copy between CPU and CUDA tensors during CUDA graph capture" (transformers 5.17, torch 2.11,
H200; graphlint's zoo, issue 21, GL590). Eagerly each such copy is a stream sync per MoE layer.

Why: a device-to-host copy waits for the stream and cannot be recorded in a graph. Two MoE lines:

- ``models/aria/modeling_aria.py:315`` (``AriaGroupedExpertsGemm.forward``):
  ``sequential_experts_gemm(input, self.weight, tokens_per_expert.cpu())``: the token count per
  expert goes to the host, and ``sequential_experts_gemm`` loops over the experts slicing with them.
- ``integrations/moe.py:402`` (``grouped_mm_experts_forward``, HunYuan-MoE-V1 here):
  ``torch.histc(..., bins=self.num_experts, min=0, max=self.num_experts - 1)``. With one expert
  (``HunYuanMoEV1Config``'s default ``num_experts=1``, which graphlint's tiny config kept) ``min ==
  max``, and PyTorch's CUDA ``histc`` then takes the range from the data: it reads the input's min
  and max on the host. With 4 experts the same line captures (``--arch hunyuan_v1_moe_4experts``,
  the control). The real checkpoint has 64 experts: the line is a trap for 1-expert configs only.

    python reports/zoo/repro/device_to_host_copy.py          # CPU: the host reads, per line
    python reports/zoo/repro/device_to_host_copy.py --cuda   # GPU: histc alone, then each model's step

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

TINY = dict(vocab_size=256, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
            head_dim=16, max_position_embeddings=256)
ARCHS = {  # name: (config class, model class, config, the line that copies to the host)
    "aria_text": ("AriaTextConfig", "AriaTextForCausalLM", dict(
        TINY, intermediate_size=64, moe_num_experts=4, moe_topk=2, moe_num_shared_experts=1),
        "models/aria/modeling_aria.py:315"),
    "hunyuan_v1_moe": ("HunYuanMoEV1Config", "HunYuanMoEV1ForCausalLM", dict(
        TINY, intermediate_size=128, num_experts=1, moe_topk=1), "integrations/moe.py:402"),
    "hunyuan_v1_moe_4experts": ("HunYuanMoEV1Config", "HunYuanMoEV1ForCausalLM", dict(
        TINY, intermediate_size=128, num_experts=4, moe_topk=2), "integrations/moe.py:402"),
}


def build(arch, device, seed=0, dtype=torch.float32):
    config_name, model_name, config, _ = ARCHS[arch]
    torch.manual_seed(seed)
    model = getattr(transformers, model_name)(getattr(transformers, config_name)(**config)).to(device, dtype).eval()
    return model, transformers.StaticCache(config=model.config, max_cache_len=32)


def step(model, cache, tokens, positions, position):
    tokens.fill_(5 + position)
    positions.fill_(position)
    name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    return model(input_ids=tokens, position_ids=positions, use_cache=True, **{name: cache}).logits


def transformers_line():
    frames = [f for f in traceback.extract_stack() if "transformers/" in f.filename.replace("\\", "/")]
    return f"{frames[-1].filename.replace(chr(92), '/').split('transformers/')[-1]}:{frames[-1].lineno}" if frames else "?"


class HostReads(TorchDispatchMode):
    """``aten._local_scalar_dense`` (a value read on the host: ``.item()``, ``int(t)``, a tensor used as a
    Python int) and the arguments of every ``aten.histc``, by the transformers line that asked."""

    def __init__(self):
        super().__init__()
        self.reads, self.histc = {}, {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.ops.aten._local_scalar_dense.default:
            where = transformers_line()
            self.reads[where] = self.reads.get(where, 0) + 1
        elif func is torch.ops.aten.histc.default:
            # min and max default to 0 (the dispatcher drops arguments left at their default)
            self.histc[transformers_line()] = dict(min=0, max=0) | dict(zip(("bins", "min", "max"), args[1:])) | kwargs
        return func(*args, **kwargs)


def show_on_cpu(arch):
    model, cache = build(arch, "cpu")
    tokens, positions = torch.zeros(1, 1, dtype=torch.long), torch.zeros(1, 1, dtype=torch.long)
    moved = []
    if arch == "aria_text":  # what line 315 hands to the expert loop: the counts, moved to the host
        module = sys.modules[type(model).__module__]
        original = module.sequential_experts_gemm

        def spy(token_states, expert_weights, tokens_per_expert):
            moved.append(f"{tokens_per_expert.tolist()} on {tokens_per_expert.device}")
            return original(token_states, expert_weights, tokens_per_expert)

        module.sequential_experts_gemm = spy
    mode = HostReads()
    try:
        with torch.no_grad():
            step(model, cache, tokens, positions, 0)
            with mode:
                step(model, cache, tokens, positions, 1)
    finally:
        if moved:
            module.sequential_experts_gemm = original
    if moved:
        print(f"{arch}: modeling_aria.py:315 passes tokens_per_expert.cpu() to the expert loop: {moved[-1]} "
              f"(on CUDA: a device-to-host copy per MoE layer)")
        print(f"{arch}: values read on the host in one step, by line: {mode.reads}")
        return any("modeling_aria.py:26" in where for where in mode.reads)
    for where, params in mode.histc.items():
        same = params.get("min") == params.get("max")
        print(f"{arch}: {where} histc({params}): min {'==' if same else '!='} max"
              + (" -> CUDA histc reads the input's min and max on the host" if same else " -> no host read"))
    return bool(mode.histc)


def histc_alone(bins):
    x = torch.zeros(4, device="cuda", dtype=torch.int32)
    try_capture(lambda: torch.histc(x, bins=bins, min=0, max=bins - 1), f"torch.histc(bins={bins}, min=0, max={bins - 1})")


def try_capture(fn, label):
    fn()
    torch.cuda.synchronize()
    graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    try:
        with torch.cuda.graph(graph, stream=stream):
            fn()
    except Exception as exc:  # noqa: BLE001 - the failure is the point
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if "transformers/" in f.filename]
        where = f" at {frames[-1].filename.split('transformers/')[-1]}:{frames[-1].lineno}" if frames else ""
        print(f"{label}: capture FAILED{where}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
        return
    print(f"{label}: captured")


def capture(arch):
    device = torch.device("cuda")
    model, cache = build(arch, device, dtype=torch.bfloat16)  # as the zoo ran
    tokens = torch.zeros(1, 1, dtype=torch.long, device=device)
    positions = torch.zeros(1, 1, dtype=torch.long, device=device)
    with torch.no_grad():
        step(model, cache, tokens, positions, 0)
        try_capture(lambda: step(model, cache, tokens, positions, 1), f"{arch} decode step")


def run_children(argvs):
    """Each case in a fresh process (a failed capture can leave its process unable to capture again), all
    at once (they are small; the GPU command gives each script 60 s); outputs in order."""
    procs = [subprocess.Popen([sys.executable, __file__, *argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) for argv in argvs]
    for proc in procs:
        print(proc.communicate()[0], end="", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cuda", action="store_true", help="capture histc alone and each model's step on the GPU")
    parser.add_argument("--arch", default="all", choices=["all", *ARCHS])
    parser.add_argument("--one", default="", help=argparse.SUPPRESS)  # a child process: capture one case
    args = parser.parse_args()
    if args.one:
        histc_alone(int(args.one[6:])) if args.one.startswith("histc:") else capture(args.one)
        raise SystemExit(0)
    archs = list(ARCHS) if args.arch == "all" else [args.arch]
    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    missing = [arch for arch in archs if not show_on_cpu(arch)]
    if args.cuda:
        if not torch.cuda.is_available():
            raise SystemExit("--cuda needs a GPU")
        cases = (["histc:1", "histc:4"] if args.arch == "all" else []) + archs
        run_children([["--one", case] for case in cases])
    raise SystemExit(1 if missing else 0)
