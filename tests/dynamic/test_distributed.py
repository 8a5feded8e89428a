"""torchrun mode: two CPU ranks on gloo, each probes its own device, rank 0 gathers one report."""

from __future__ import annotations

import json
import os
import socket

import pytest
import torch
import torch.multiprocessing as mp

from dynamic_helpers import ROOT, TARGETS, plants, spec


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank(rank: int, world: int, port: int, out: str) -> None:
    os.chdir(ROOT)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank))
    from graphlint.cli import main

    rc = main(["inventory", "--target", spec("hazards.py"), "--format", "json", "-o", f"{out}.{rank}", "--no-progress"])
    assert rc == (1 if rank == 0 else 0)  # only rank 0 reports; the others exit clean


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CI (CPU, gloo) path; with CUDA each rank takes cuda:LOCAL_RANK")
@pytest.mark.slow
def test_two_gloo_ranks_gather_on_rank_zero(tmp_path):
    out = tmp_path / "inv.json"
    mp.spawn(_rank, args=(2, _free_port(), str(out)), nprocs=2, join=True)
    assert not (tmp_path / "inv.json.1").exists()
    data = json.loads((tmp_path / "inv.json.0").read_text())
    devices = [d["device"] for d in data["devices"]]
    assert devices == ["rank0:cpu", "rank1:cpu"]
    for dev in data["devices"]:
        expected = {p for p in plants(TARGETS / "hazards.py") if p[0] in ("GL190", "GL390", "GL393")}
        assert {(f["rule"], f["line"]) for f in dev["findings"]} >= expected
    assert any("torchrun mode: 2 ranks" in n for n in data["notes"])


def test_cpu_flag_keeps_a_rank_on_the_cpu_even_when_cuda_is_visible(monkeypatch):
    from graphlint.dynamic.distributed import run_rank
    from graphlint.dynamic.run import Request

    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a GPU box, but --cpu
    for key, value in dict(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), RANK="0", WORLD_SIZE="1").items():
        monkeypatch.setenv(key, value)
    inv = run_rank(Request(target=spec("plain_module.py"), cpu=True))
    assert [d.device for d in inv.devices] == ["rank0:cpu"] and not inv.cuda
