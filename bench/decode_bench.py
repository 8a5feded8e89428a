"""Time the three dsv4 decoders in one run and compare them with eager and with the bandwidth floor.

    python bench/decode_bench.py --preset small --steps 128 --repeats 5 [--kernels both]

Each decoder is warmed up first (kernel compilation and graph capture are excluded), then timed
``--repeats`` times over ``--steps`` greedy decode steps; the median s/token is reported with its
speedup over eager. The floor is the weight bytes one decode token reads (idle experts and the
embedding table excluded) divided by the measured device-to-device copy bandwidth: no decoder
that reads its weights from memory can go faster. Logit differences are measured on the greedy
run, over the steps where a decoder's tokens still match eager's. ``--kernels both`` times every
decoder twice in the same run, with the CuTeDSL kernels and with their torch fallbacks, and adds
the kernels' gain per decoder as a ratio (machines are noisy; ratios within one run are not).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dsv4 import kernels  # noqa: E402
from dsv4.config import PRESETS, get_config  # noqa: E402
from dsv4.engine import generate, timed_generate  # noqa: E402
from dsv4.model import DSV4Model  # noqa: E402
from dsv4.target import DECODERS  # noqa: E402


def copy_bandwidth(device: torch.device, nbytes: int = 1 << 30, repeats: int = 10) -> float:
    """Bytes per second moved by a device-to-device copy (read + write counted)."""
    if device.type != "cuda":
        src = torch.empty(nbytes // 8, dtype=torch.uint8)
        dst = torch.empty_like(src)
        start = time.perf_counter()
        for _ in range(repeats):
            dst.copy_(src)
        return 2 * src.numel() * repeats / (time.perf_counter() - start)
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(repeats):
        dst.copy_(src)
    end.record()
    end.synchronize()
    return 2 * nbytes * repeats / (begin.elapsed_time(end) / 1e3)


def time_decoders(model, prompt: list[int], steps: int, repeats: int) -> tuple[dict[str, dict], str]:
    """{decoder: figures} for the active kernel backend, and the backend that really ran."""
    results: dict[str, dict[str, float]] = {}
    reference_tokens, reference_logits = None, None
    for name, cls in DECODERS.items():
        decoder = cls(model)
        timed_generate(decoder, model, prompt, 3)  # warm-up: kernels compiled, graphs captured
        times = [timed_generate(decoder, model, prompt, steps)[1] for _ in range(repeats)]
        tokens, logits = generate(decoder, prompt, steps)
        if reference_tokens is None:
            reference_tokens, reference_logits = tokens, logits
        agree = next((i for i, (a, b) in enumerate(zip(tokens, reference_tokens)) if a != b), len(tokens))
        max_diff = max(((a - b).abs().max().item() for a, b in zip(logits[: agree + 1], reference_logits)),
                       default=0.0)
        results[name] = {"s_per_token": statistics.median(times), "tokens_agree": agree, "max_logit_diff": max_diff}
        del decoder
    eager = results["eager"]["s_per_token"]
    for r in results.values():
        r["speedup_vs_eager"] = eager / r["s_per_token"]
    return results, kernels.backend()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=[p for p in PRESETS if p not in ("flash", "pro")], default="small")
    parser.add_argument("--steps", type=int, default=128)
    parser.add_argument("--prompt-len", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    parser.add_argument("--kernels", choices=["default", "torch", "both"], default="default",
                        help="default: DSV4_KERNELS as set (CuTeDSL where it can run); torch: the fallbacks; "
                        "both: one pass each, in this run")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)

    cfg = get_config(args.preset)
    # timed_generate decodes steps - 1 tokens after the prompt: at least one, inside the context
    if args.steps < 2 or args.prompt_len < 1 or args.repeats < 1 or args.prompt_len + args.steps > cfg.max_seq_len:
        parser.error(f"need steps >= 2, prompt-len >= 1, repeats >= 1 and prompt-len + steps <= {cfg.max_seq_len}")
    use_cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    if use_cuda and not torch.cuda.is_available():
        parser.error("--device cuda but no CUDA device is visible")
    devices = [torch.device("cuda", i) for i in range(torch.cuda.device_count())] if use_cuda else [torch.device("cpu")]
    model = DSV4Model(cfg, devices, seed=0)
    prompt = [(i * 131 + 7) % cfg.vocab_size for i in range(args.prompt_len)]
    weight_bytes = model.decode_weight_bytes()
    bandwidth = copy_bandwidth(devices[0])
    floor = weight_bytes / bandwidth

    passes = {"default": [None], "torch": ["torch"], "both": ["cutedsl", "torch"]}[args.kernels]
    runs: dict[str, dict[str, dict]] = {}  # backend that ran -> decoder -> figures
    for requested in passes:
        with kernels.registry.requested_backend(requested):
            figures, ran = time_decoders(model, prompt, args.steps, args.repeats)
        runs[ran] = figures
        if requested == "cutedsl" and ran != "cutedsl":
            print("note: the CuTeDSL kernels cannot run here (no CUDA, no nvidia-cutlass-dsl, or a failed "
                  "warm-up), so the torch fallbacks were timed once", file=sys.stderr)
            break

    print(f"preset={args.preset} devices={','.join(map(str, devices))} torch={torch.__version__} "
          f"steps={args.steps} repeats={args.repeats} kernels={'+'.join(runs)}")
    if use_cuda:
        print(f"gpu={torch.cuda.get_device_name(devices[0])}")
    print(f"decode weight bytes={weight_bytes / 1e6:.1f} MB  copy bandwidth={bandwidth / 1e9:.0f} GB/s  "
          f"floor={floor * 1e6:.1f} us/token")
    print(f"{'decoder':<12}{'kernels':>9}{'s/token':>12}{'vs eager':>10}{'vs floor':>10}{'tokens==eager':>15}"
          f"{'max|dlogit|':>13}{'kernel gain':>13}")
    for ran, results in runs.items():
        for name, r in results.items():
            r["x_floor"] = r["s_per_token"] / floor
            if ran == "cutedsl" and "torch" in runs:
                r["kernel_gain"] = runs["torch"][name]["s_per_token"] / r["s_per_token"]
            gain = f"{r['kernel_gain']:>12.2f}x" if "kernel_gain" in r else f"{'':>13}"
            print(f"{name:<12}{ran:>9}{r['s_per_token']:>12.6f}{r['speedup_vs_eager']:>9.2f}x{r['x_floor']:>9.1f}x"
                  f"{r['tokens_agree']:>10}/{args.steps}{r['max_logit_diff']:>13.2e}{gain}")
    if args.json:
        args.json.write_text(json.dumps({"preset": args.preset, "torch": torch.__version__,
                                         "devices": [str(d) for d in devices], "weight_bytes": weight_bytes,
                                         "bandwidth": bandwidth, "floor_s": floor, "kernels": runs}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
