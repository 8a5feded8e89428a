"""Do failed captures in a process break the captures made after them?  (GPU only)

    python bench/capture_isolation.py [--steps 16]

Why: in one H200 run two decoder-vs-eager tests replayed garbage (argmax agreeing on 1 of 64
steps) in a pytest process where another test had run failing captures; torch 2.11's allocator
keeps parts of an abandoned capture (pytorch/pytorch#180395, #190308). graphlint now re-measures
replay in a fresh process after a failed capture; this script measures whether that is needed.
It compares both graph decoders with eager (teacher-forced, fp32, NVFP4 off: exact when healthy)
three times in one process: fresh, after an in-process probe of a clean target, and after an
in-process probe of the hazards target (six failing captures). Exit 1 if any comparison is off.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dsv4.ab_graph import ABGraphDecoder  # noqa: E402
from dsv4.config import get_config  # noqa: E402
from dsv4.engine import EagerDecoder  # noqa: E402
from dsv4.full_graph import FullGraphDecoder  # noqa: E402
from dsv4.model import DSV4Model  # noqa: E402
from graphlint.dynamic.graph_probe import run_graph_phase  # noqa: E402
from graphlint.dynamic.target import load_factory  # noqa: E402
from graphlint.rules import runtime_rules# noqa: E402

PROMPT = [(i * 131 + 7) % 256 for i in range(16)]


def compare(model, decoder_cls, steps: int) -> tuple[float, int]:
    """Eager's greedy tokens teacher-forced into the graph decoder: (max |dlogit|, argmax agreements)."""
    eager, graph = EagerDecoder(model), decoder_cls(model)
    token = int(eager.prefill(PROMPT)[-1].argmax())
    graph.prefill(PROMPT)
    worst, same = 0.0, 0
    for _ in range(steps):
        expect, got = eager.step(token).clone(), graph.step(token).clone()
        worst = max(worst, (expect - got).abs().max().item())
        same += int(expect.argmax() == got.argmax())
        token = int(expect.argmax())
    return worst, same


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=16)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("capture_isolation: needs a CUDA device", file=sys.stderr)
        return 2
    device = torch.device("cuda", 0)
    model = DSV4Model(get_config("small", dtype="float32", fake_quant_experts=False), [device], seed=0)
    rules, healthy = runtime_rules(), True

    def check(stage: str) -> None:
        nonlocal healthy
        for cls in (ABGraphDecoder, FullGraphDecoder):
            worst, same = compare(model, cls, args.steps)
            ok = worst < 1e-3 and same == args.steps
            healthy &= ok
            print(f"{stage:<36} {cls.__name__:<17} max|dlogit| {worst:.3e}  argmax {same}/{args.steps}"
                  f"  {'ok' if ok else 'WRONG'}", flush=True)

    check("fresh process")
    for name in ("plain_module", "hazards"):
        probe = run_graph_phase(load_factory(f"{ROOT}/fixtures/targets/{name}.py:make_target"), [device], {},
                                rules, str(device))
        failed = sum(c["status"] == "failed" for c in probe.capture.values())
        check(f"after {name} in process ({failed} failed)")
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main())
