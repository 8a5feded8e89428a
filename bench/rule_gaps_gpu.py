"""Do the rule-gap rules' bad spellings fail CUDA-graph capture, and their good ones capture?

The rules of branch ``rulegaps`` (GL204's scalar expressions, GL208, GL420's ``.to(device)`` form,
GL110, a cache length used as a size) were built from the H200 zoo's reproducers, those of branch
``misses`` (GL111's slice bound and index, GL105's ``in``, GL303's tensor-valued mask write) from the training engines' labels,
GL109's ``torch.multinomial`` (the nineteenth session: PyTorch turned its validation into an
asynchronous assert, pytorch#134818, so the claim is checked on the torch the GPU machine runs; the
twentieth session drops it from GL109 in every spelling, a distribution's argument checks stay) and
GL104's ``max()`` of a device tensor;
this checks each
spelling the rules' examples use, bad and good, on the GPU itself, in plain torch: every case is
captured in a fresh process (a failed capture can leave a process unable to capture again) and the
result is printed next to what the rule claims. Exit status 1 when a claim does not hold.

    python bench/rule_gaps_gpu.py            # needs CUDA
    python bench/rule_gaps_gpu.py --one NAME # one case, in this process
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys

import torch

HIDDEN = 64


def scalar_literal(x):  # GL204 (masking_utils.py:604)
    return torch.where(x > 0, torch.tensor(0.0, device=x.device, dtype=x.dtype), -1e4)


def scalar_expression(x):  # GL204: a config expression
    return x * torch.tensor(HIDDEN ** 0.5, device=x.device, dtype=x.dtype)


def scalar_math(x):  # GL204
    return x * torch.tensor(math.sqrt(HIDDEN) / 2, device=x.device)


def list_slice(x):  # GL204 (cpmant:567)
    return x[:, :4] + torch.tensor(list(range(4))[::-1], device=x.device)


def python_number(x):  # GL204's good: the number straight to the op
    return torch.where(x > 0, 0.0, -1e4) * (HIDDEN ** 0.5)


def list_index(x):  # GL208 (falcon:283)
    return x[..., [-2]]


def slice_index(x):  # GL208's good
    return x[..., -2:-1]


def host_table_moved(x):  # GL420 (phimoe:96)
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, 8, 2).float() / 8))
    return x[:, :4] * inv_freq[None, :].to(x.device)


def table_on_device(x):  # GL420's good: a buffer made once
    return x[:, :4] * TABLE


def histc_default(x):  # GL110: min == max == 0
    return torch.histc(x, bins=4)


def histc_ranged(x):  # GL110's good
    return torch.histc(x, bins=4, min=0, max=3)


def length_as_size(x):  # GL310: a static cache's length (a device tensor) used as a size
    past = LENGTH + 0
    return torch.ones(x.shape[0], past + 1, device=x.device).sum() + x


def capacity_as_size(x):  # GL310's good: the capacity
    return FULL[: x.shape[0], :16].sum() + x


def slice_by_tensor(x):  # GL111: a 0-dim device tensor as a slice bound
    n = x[0].argmax()
    return x[:, : n + 1].sum()


def slice_by_int(x):  # GL111's good: a bound the host already knows
    return x[:, : WIDTH + 1].sum()


def index_by_tensor(x):  # GL111: a 0-dim device tensor as an index
    return x[x[:, 0].argmax()] * 2


def index_select_by_tensor(x):  # GL111's good: the same row, selected on the device
    return x.index_select(0, x[:, 0].argmax().view(1)) * 2


def member_of_tensor(x):  # GL105: ``in`` on a device tensor is bool() of a comparison
    return x * 2 if 3 in x else x


def mask_write_tensor(x):  # GL303: a boolean-mask write of a tensor value is index_put_ (nonzero inside)
    y = x.clone()
    y[y > 0.5] = x.min()
    return y


def mask_write_number(x):  # GL303's good: a Python number through the mask is a masked fill
    y = x.clone()
    y[y > 0.5] = 0.0
    return y


def multinomial_one(x):  # GL109's good: one sample takes the fast path (an async device assert, no host read)
    return torch.multinomial(torch.softmax(x, -1), 1)


def multinomial_replacement(x):  # not GL109: several samples with replacement capture too (torch 2.11, H100)
    return torch.multinomial(torch.softmax(x, -1), 4, replacement=True)


def categorical_sample(x):  # GL109: a distribution validates its arguments when built (default on)
    return torch.distributions.Categorical(probs=torch.softmax(x, -1)).sample()


def exponential_race(x):  # GL109's good: divide by exponential noise, take the argmax
    probs = torch.softmax(x, -1)
    return (probs / torch.empty_like(probs).exponential_(1)).argmax(-1)


def builtin_max_of_tensor(x):  # GL104: max() compares, i.e. bool() of a device tensor
    return x / max(x.sum(), 1e-5)


#: name -> (function, does the rule say capture fails)
CASES = {f.__name__: (f, fails) for f, fails in [
    (scalar_literal, True), (scalar_expression, True), (scalar_math, True), (list_slice, True),
    (python_number, False), (list_index, True), (slice_index, False), (host_table_moved, True),
    (table_on_device, False), (histc_default, True), (histc_ranged, False), (length_as_size, True),
    (capacity_as_size, False), (slice_by_tensor, True), (slice_by_int, False), (index_by_tensor, True),
    (index_select_by_tensor, False), (member_of_tensor, True),
    (mask_write_tensor, True), (mask_write_number, False),
    (multinomial_one, False), (multinomial_replacement, False), (categorical_sample, True),
    (exponential_race, False), (builtin_max_of_tensor, True)]}


def capture_one(name: str) -> bool:
    """True when the capture of ``name`` failed."""
    global TABLE, LENGTH, FULL, WIDTH
    device = torch.device("cuda")
    TABLE = (1.0 / (10000.0 ** (torch.arange(0, 8, 2).float() / 8))).to(device)
    LENGTH = torch.tensor(5, device=device)  # as transformers' StaticLayer.cumulative_length
    FULL = torch.ones(8, 16, device=device)
    WIDTH = 3
    fn = CASES[name][0]
    x = torch.rand(2, 8, device=device)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn(x)  # warm-up off the default stream
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph, stream=stream):
            fn(x)
    except Exception as exc:  # noqa: BLE001 - the failure is the point
        print(f"{name}: capture FAILED: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
        return True
    graph.replay()
    torch.cuda.synchronize()
    print(f"{name}: captured and replayed")
    return False


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--one", choices=sorted(CASES))
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("needs CUDA")
        return 2
    if args.one:
        return 10 if capture_one(args.one) else 0
    wrong = 0
    for name, (_, fails) in CASES.items():
        run = subprocess.run([sys.executable, __file__, "--one", name], capture_output=True, text=True, timeout=120)
        failed = run.returncode == 10
        ok = failed == fails
        wrong += not ok
        line = (run.stdout.strip().splitlines() or [run.stderr.strip()[-200:]])[-1]
        print(f"{'ok   ' if ok else 'WRONG'} claim: {'fails' if fails else 'captures'}  | {line}")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
