"""What GL210 and GL111's size arguments claim, on the GPU: a 0-dim device tensor as a size syncs;
an out-of-place index_copy into a cache costs a whole-buffer copy and, captured, loses every step
but the last (replays read the buffer the capture saw). Run: python probe.py (one CUDA GPU)."""

import time

import torch

dev = "cuda"


def syncs(fn) -> str:
    torch.cuda.set_sync_debug_mode("error")
    try:
        fn()
        return "no sync"
    except RuntimeError as exc:
        return "SYNC" if "synchroniz" in str(exc) else f"error: {exc}"
    finally:
        torch.cuda.set_sync_debug_mode("default")


x = torch.randn(4, 64, device=dev)
counts = torch.tensor([3, 5, 2], device=dev)
n = counts.sum() - 6  # a 0-dim device tensor holding 4
k = 1 if counts.numel() == 0 else counts.max()  # GL111's conditional: the device side taken
print("GL111 torch.topk(x, k=<0-dim device k>):", syncs(lambda: torch.topk(x, k=k, dim=-1)))
print("GL111 x.topk(<0-dim device k>):", syncs(lambda: x.topk(k)))
print("GL111 x.view(<0-dim device n>, -1):", syncs(lambda: x.view(n, -1)))
print("GL111 torch.zeros(<0-dim device n>, device=cuda):", syncs(lambda: torch.zeros(n, device=dev)))
print("GL111 x.narrow(0, 0, <0-dim device n>):", syncs(lambda: x.narrow(0, 0, n)))
print("good: torch.topk(x, k=5) (Python int):", syncs(lambda: torch.topk(x, k=5, dim=-1)))
print("good: x.view(x.shape[0], -1):", syncs(lambda: x.view(x.shape[0], -1)))


def captured(in_place: bool) -> list[float]:
    cache = torch.zeros(8, device=dev)
    pos = torch.zeros(1, dtype=torch.long, device=dev)
    val = torch.ones(1, device=dev)
    state = {"cache": cache}

    def step():
        if in_place:
            state["cache"].index_copy_(0, pos, val)
        else:
            state["cache"] = state["cache"].index_copy(0, pos, val)
        return state["cache"]

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()
    torch.cuda.current_stream().wait_stream(side)
    cache.zero_()
    state["cache"] = cache
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = step()
    for p in range(4):
        pos.fill_(p)
        val.fill_(p + 1)
        graph.replay()
    torch.cuda.synchronize()
    return out.tolist()


print("GL210 captured, 4 replays writing 1..4 at positions 0..3, out of place:", captured(False))
print("GL210 captured, the same in place (index_copy_):", captured(True))

cache = torch.zeros(1, 32, 4096, 128, device=dev, dtype=torch.bfloat16)  # one layer's keys, 32 MiB
k_new = torch.randn(1, 32, 1, 128, device=dev, dtype=torch.bfloat16)
p = torch.tensor([7], device=dev)
for label, fn in (("out of place", lambda: cache.index_copy(2, p, k_new)), ("in place", lambda: cache.index_copy_(2, p, k_new))):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(1000):
        fn()
    torch.cuda.synchronize()
    print(f"GL210 eager, one layer's 32 MiB key cache, {label}: {(time.perf_counter() - t) * 1e3:.1f} us per call")
print(torch.__version__, torch.cuda.get_device_name())
