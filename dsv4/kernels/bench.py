"""Time each CuTeDSL kernel against its torch fallback on one GPU, and check its error.

``python -m dsv4.kernels.bench [--json PATH]``. Two timings per op and shape: *eager* (one
call after another, so host overhead counts: from_dlpack conversion, dispatch) and *graph*
(the call captured into a CUDA graph, many times over, replayed: the cost inside the engine's
decode graphs). Medians of CUDA-event timings; warm-up excluded.
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch

import dsv4.kernels as kernels
from dsv4.kernels import reference
from dsv4.kernels.registry import requested_backend

CALLS_PER_GRAPH = 50
REPEATS = 7
# (op, label, operand factory): a decode-sized and a prefill-sized case per op
CASES = [
    ("rms_norm", (4, 1024), torch.bfloat16),
    ("rms_norm", (4096, 1024), torch.bfloat16),
    ("sinkhorn", (4, 4, 4), torch.float32),
    ("sinkhorn", (4096, 4, 4), torch.float32),
    ("nvfp4_fake_quant", (16, 1024), torch.bfloat16),
    ("nvfp4_fake_quant", (4096, 1024), torch.bfloat16),
]


def _operands(op: str, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device):
    x = torch.randn(shape, device=device).to(dtype)
    return (x, torch.randn(shape[-1], device=device), 1e-6) if op == "rms_norm" else (x,)


def _median_ms(fn, calls: int) -> float:
    times = []
    for _ in range(REPEATS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / calls)
    return statistics.median(times)


def _time_us(op_fn, args, out) -> tuple[float, float]:
    """(eager, in-graph) microseconds per call."""
    def eager():
        for _ in range(CALLS_PER_GRAPH):
            op_fn(*args, out=out)

    eager()
    eager_ms = _median_ms(eager, CALLS_PER_GRAPH)
    graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        eager()
    graph.replay()
    graph_ms = _median_ms(graph.replay, CALLS_PER_GRAPH)
    return eager_ms * 1e3, graph_ms * 1e3


def run(device: torch.device):
    """Yield one result row per case (as soon as it is measured)."""
    with requested_backend("cutedsl"):
        kernels.warmup(device)
        if kernels.backend() != "cutedsl":
            print("note: no CuTeDSL kernel compiled; both columns measure torch", flush=True)
    for op, shape, dtype in CASES:
        args = _operands(op, shape, dtype, device)
        op_fn = getattr(kernels, op)
        expected = getattr(reference, op)(*args)
        out = torch.empty_like(expected)
        with requested_backend("cutedsl"):
            error = (op_fn(*args, out=out).float() - expected.float()).abs().max().item()
            cute_us = _time_us(op_fn, args, out)
        with requested_backend("torch"):
            torch_us = _time_us(op_fn, args, out)
        yield {
            "op": op, "shape": "x".join(map(str, shape)), "dtype": str(dtype).split(".")[1],
            "max_abs_err": error, "cutedsl_eager_us": cute_us[0], "cutedsl_graph_us": cute_us[1],
            "torch_eager_us": torch_us[0], "torch_graph_us": torch_us[1],
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the rows here")
    options = parser.parse_args()
    device = torch.device("cuda", torch.cuda.current_device())
    print(f"gpu={torch.cuda.get_device_name(device)} torch={torch.__version__}", flush=True)
    print("| op | shape | dtype | max abs err | us/call eager: CuTeDSL / torch "
          "| us/call in graph: CuTeDSL / torch |")
    print("|---|---|---|---|---|---|", flush=True)
    rows = []
    for r in run(device):
        rows.append(r)
        print(f"| {r['op']} | {r['shape']} | {r['dtype']} | {r['max_abs_err']:.3g} "
              f"| {r['cutedsl_eager_us']:.1f} / {r['torch_eager_us']:.1f} "
              f"| {r['cutedsl_graph_us']:.2f} / {r['torch_graph_us']:.2f} |", flush=True)
    if options.json:
        with open(options.json, "w") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
