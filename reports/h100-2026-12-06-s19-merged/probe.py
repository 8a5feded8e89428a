"""Does torch.multinomial (and friends) sync / capture on this torch? One line per case."""
import torch, traceback
from torch.distributions import Categorical
print(torch.__version__, torch.cuda.get_device_name())
dev = "cuda"
p2 = torch.softmax(torch.randn(4, 1000, device=dev), -1)
p1 = p2[0].contiguous()
cases = {
    "multinomial(p2,1)": lambda: torch.multinomial(p2, 1),
    "multinomial(p2,num_samples=1)": lambda: torch.multinomial(p2, num_samples=1),
    "multinomial(p1,1)": lambda: torch.multinomial(p1, 1),
    "multinomial(p2,4)": lambda: torch.multinomial(p2, 4),
    "multinomial(p2,1,replacement=True)": lambda: torch.multinomial(p2, 1, replacement=True),
    "multinomial(p2,4,replacement=True)": lambda: torch.multinomial(p2, 4, replacement=True),
    "Categorical(probs=p2).sample()": lambda: Categorical(probs=p2).sample(),
    "Categorical(logits=p2.log(),validate_args=False).sample()": lambda: Categorical(logits=p2.log(), validate_args=False).sample(),
    "rand_like(p2)": lambda: torch.rand_like(p2),
    "empty_like(p2).exponential_(1)": lambda: torch.empty_like(p2).exponential_(1),
    "full_like(p2,-inf).scatter_": lambda: torch.full_like(p2, float("-inf")).scatter_(1, torch.zeros(4, 1, dtype=torch.long, device=dev), 0.0),
    "max(t0dim,1e-5)": lambda: max(p2.sum(), 1e-5),
}
for name, fn in cases.items():
    # 1. sync debug mode
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        fn(); sync = "no-sync"
    except Exception as e:
        sync = "SYNC: " + str(e).splitlines()[0][:80]
    finally:
        torch.cuda.set_sync_debug_mode(0)
    torch.cuda.synchronize()
    # 2. capture + replay
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g, stream=s):
            out = fn()
        g.replay(); torch.cuda.synchronize()
        cap = "captures+replays"
    except Exception as e:
        cap = "CAPTURE FAILS: " + str(e).splitlines()[0][:100]
        try:
            torch.cuda.synchronize()
        except Exception as e2:
            print("context poisoned:", e2); break
    print(f"{name:55s} | {sync:60s} | {cap}")
