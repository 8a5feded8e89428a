"""``python -m dsv4 generate --preset small --steps 128 --decoder eager|ab-graph|full-graph``."""

from __future__ import annotations

import argparse
import sys
import torch

from dsv4.config import PRESETS, get_config
from dsv4.engine import timed_generate
from dsv4.model import DSV4Model
from dsv4.target import DECODERS


def default_devices(kind: str) -> list[torch.device] | None:
    """Every visible GPU (layers split across them), or the CPU; None for --device cuda without CUDA."""
    if kind == "cuda" or (kind == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            return None
        return [torch.device("cuda", i) for i in range(torch.cuda.device_count())]
    return [torch.device("cpu")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dsv4")
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="greedy decoding; prints the tokens and s/token")
    gen.add_argument("--preset", choices=[p for p in PRESETS if p not in ("flash", "pro")], default="tiny")
    gen.add_argument("--decoder", choices=list(DECODERS), help="default: eager, or full-graph with --fault")
    gen.add_argument("--fault", metavar="NAME", help="plant a seed-lab fault in the full-graph decoder "
                     "(`python -m dsv4.faults list`)")
    gen.add_argument("--steps", type=int, default=32)
    gen.add_argument("--prompt-len", type=int, default=16)
    gen.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    gen.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    cfg = get_config(args.preset)
    if args.steps < 1 or args.prompt_len < 1 or args.prompt_len + args.steps > cfg.max_seq_len:
        parser.error(f"need steps >= 1, prompt-len >= 1 and prompt-len + steps <= {cfg.max_seq_len}")
    devices = default_devices(args.device)
    if devices is None:
        parser.error("--device cuda, but no CUDA device is visible")  # a usage error: exit 2
    args.decoder = args.decoder or ("full-graph" if args.fault else "eager")
    decoder_cls = DECODERS[args.decoder]
    if args.fault:
        from dsv4.faults import FAULTS

        if args.fault not in FAULTS:
            parser.error(f"unknown fault {args.fault!r}; one of: {', '.join(FAULTS)}")
        if args.decoder != "full-graph":
            parser.error("--fault plants its fault in the full-graph decoder")
        decoder_cls = FAULTS[args.fault]
    decoder = decoder_cls(DSV4Model(cfg, devices, seed=args.seed))
    prompt = [(i * 131 + 7) % cfg.vocab_size for i in range(args.prompt_len)]
    model = decoder.model
    timed_generate(decoder, model, prompt, 3)  # warm-up: compiles kernels and captures graphs
    tokens, per_token = timed_generate(decoder, model, prompt, args.steps)
    print(" ".join(map(str, tokens)))
    speed = f"{per_token:.6f}" if args.steps > 1 else "n/a (the one token came from the prefill; no step timed)"
    name = f"{args.decoder} fault={args.fault}" if args.fault else args.decoder
    print(f"{name} preset={args.preset} devices={','.join(map(str, devices))} "
          f"steps={args.steps} s/token={speed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
