"""torchrun mode: each rank probes its own device in place; rank 0 writes the one report.

Engines that run one process per GPU (tensor or pipeline parallel) cannot be rebuilt in a
worker process: their step talks to the other ranks. So under ``torchrun`` every rank runs
the probes in its own process, on ``cuda:LOCAL_RANK`` (or the CPU), capture and replay first
and the tracer last (the tracer's gpu_trace hooks cannot be switched off before a capture),
and ``torch.distributed.gather_object`` brings every rank's results to rank 0.
"""

from __future__ import annotations

import os

from graphlint.dynamic.results import DeviceResult, Inventory, ProbeOutcome, caveat_failed_captures
from graphlint.dynamic.verdicts import settle_graph_allocations
from graphlint.dynamic.worker import GRAPH_PROBES, run_phase


def under_torchrun() -> bool:
    return int(os.environ.get("WORLD_SIZE", "1")) > 1 and "RANK" in os.environ


def run_rank(req) -> Inventory | None:
    """Probe this rank's device; returns the gathered inventory on rank 0, ``None`` elsewhere."""
    import datetime

    import torch
    import torch.distributed as dist

    cuda = torch.cuda.is_available() and not req.cpu
    owns_group = not dist.is_initialized()
    if owns_group:
        dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", rank))
    device = f"cuda:{local}" if cuda else "cpu"
    if cuda:
        torch.cuda.set_device(local)
    base = {"target": req.target, "options": req.options, "devices": [device], "label": f"rank{rank}:{device}",
            "replay_steps": req.replay_steps, "soak_steps": req.soak_steps}
    result = DeviceResult(base["label"])
    if cuda and req.graph:
        result.merge(caveat_failed_captures(run_phase({**base, "phase": "graph"})))
    if req.trace:
        result.merge(run_phase({**base, "phase": "trace"}))
    if not cuda and req.graph:
        why = "no CUDA device: trial capture, replay and soak need a GPU"
        result.probes += [ProbeOutcome(p, "skipped", why) for p in GRAPH_PROBES if p != "soak" or req.soak_steps]
    settle_graph_allocations(result)
    result.meta["rank"] = str(rank)
    gathered = [None] * world if rank == 0 else None
    dist.gather_object(result.to_dict(), gathered, dst=0)
    if owns_group:
        dist.barrier()  # no rank tears the group down while another is still receiving
        dist.destroy_process_group()
    if rank != 0:
        return None
    inv = Inventory(target=req.target, command=req.command, torch=torch.__version__, cuda=cuda,
                    date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                    devices=[DeviceResult.from_dict(d) for d in gathered])
    inv.notes.append(f"torchrun mode: {world} ranks, each probed its own device; gathered on rank 0.")
    if not cuda:
        inv.notes.append("Capture skipped: no CUDA device. Only the tracer ran (on the CPU).")
    return inv
