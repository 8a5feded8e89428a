"""Find where a CuTeDSL kernel's warm-up stops: ``python -m dsv4.kernels.diagnose``.

The first H200 run's warm-up never returned and left no trace of where it stopped. Here each
kernel is built in a fresh process, step by step (import, architecture detection, compilation
with CUDA operands, first launch, stream wait), each step printed as it starts and ends, with
every thread's stack dumped shortly before the deadline. A hang then names its step and its
stack, and one kernel's hang cannot hide what the others do. Exit status: 0 when every kernel
finished every step, 1 otherwise, 2 without CUDA or cutlass.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import subprocess
import sys
import time

STEPS = ("import", "detect-arch", "compile", "first-launch", "wait")


def _child(op: str, dtype_index: int, deadline_s: float) -> None:
    faulthandler.dump_traceback_later(max(deadline_s - 5.0, 1.0), exit=True)
    started = time.monotonic()

    def step(name: str):
        print(f"step {name} start {time.monotonic() - started:.2f}", flush=True)

    def done(name: str, extra: str = ""):
        print(f"step {name} done {time.monotonic() - started:.2f} {extra}".rstrip(), flush=True)

    step("import")
    import torch

    from dsv4.kernels import compile as kcompile

    module = {m.OP: m for m in kcompile.KERNEL_MODULES}[op]
    dtypes = module.DTYPE_KEYS[dtype_index]
    device = torch.device("cuda", 0)
    torch.cuda.init()
    done("import", f"torch {torch.__version__}")

    step("detect-arch")
    from cutlass.base_dsl.env_manager import detect_gpu_arch

    done("detect-arch", os.environ.get("CUTE_DSL_ARCH") or detect_gpu_arch("cute"))

    with torch.cuda.device(device):
        stream = kcompile.current_stream(device)
        step("compile")
        launcher = module.make_launcher(module.compile_for(dtypes, device, stream))
        done("compile")
        step("first-launch")
        result = launcher(*module.smoke_args(dtypes, device))
        done("first-launch")
        step("wait")
        torch.cuda.current_stream(device).synchronize()
        done("wait", f"output sum {float(result.float().sum()):.6g}")


def _run_one(op: str, dtype_index: int, deadline_s: float) -> tuple[str, str, str]:
    """(last step reached, outcome, captured output) for one kernel in its own process."""
    command = [sys.executable, "-m", "dsv4.kernels.diagnose", "--child", op,
               "--dtype-index", str(dtype_index), "--deadline", str(deadline_s)]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=deadline_s)
        output, outcome = proc.stdout + proc.stderr, "ok" if proc.returncode == 0 else (
            f"exit {proc.returncode}")
    except subprocess.TimeoutExpired as expired:
        output = _text(expired.stdout) + _text(expired.stderr)
        outcome = f"killed after {deadline_s:.0f} s"
    reached = [line.split()[1] for line in output.splitlines() if line.startswith("step ")]
    last = reached[-1] if reached else "(none)"
    if "Timeout (" in output and outcome == "exit 1":
        outcome = "hung (stack dumped)"
    return last, outcome, output


def _text(data) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dsv4.kernels.diagnose", description=__doc__)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--dtype-index", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, default=60.0,
                        help="seconds each kernel's process may take (default 60)")
    parser.add_argument("--ops", default="rms_norm,sinkhorn,nvfp4_fake_quant")
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.dtype_index, args.deadline)
        return 0

    import importlib.util

    import torch

    if not torch.cuda.is_available() or importlib.util.find_spec("cutlass") is None:
        print("diagnose: needs a CUDA device and nvidia-cutlass-dsl", file=sys.stderr)
        return 2
    failed = 0
    for op in args.ops.split(","):
        last, outcome, output = _run_one(op, 0, args.deadline)
        print(f"== {op}: {outcome}; last step: {last}", flush=True)
        if outcome != "ok":
            failed += 1
            print(output, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
