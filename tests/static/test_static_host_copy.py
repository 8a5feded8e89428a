"""GL420: a copy from pageable host memory in the step (the seed lab's `pageable-h2d` fault),
and the staging that is fine (pinned, on the device, host to host, another object's buffer)."""

from __future__ import annotations

import pytest

from static_helpers import analyze, codes


def _step(init: str, body: str) -> str:
    return f"""
import torch

class Decoder:
    def __init__(self, device, pinned: bool):
        {init}
        self.ids = torch.zeros(4, dtype=torch.long, device=device)

    def decode_step(self, token: int, device):
        {body}
"""


def _copies(init: str, body: str) -> list[str]:
    """The findings apart from GL201 (a host tensor made in the step is a per-step allocation too)."""
    return [c for c in codes(analyze({"d.py": _step(init, body)})) if c != "GL201"]


@pytest.mark.parametrize(("init", "body"), [
    ("self.host = torch.zeros(4, dtype=torch.long)", "self.ids.copy_(self.host)"),
    ("self.host = torch.tensor([1, 2, 3, 4], device='cpu')", "self.ids.copy_(self.host, non_blocking=True)"),
    ("pass", "host = torch.arange(4)\n        self.ids.copy_(host)"),
    # the move is the copy (reported once, there); what copy_ then copies is already on the device
    ("pass", "host = torch.arange(4)\n        host = host.to(device)\n        self.ids.copy_(host)"),
])
def test_a_pageable_host_tensor_copied_in_the_step_is_reported(init, body):
    assert _copies(init, body) == ["GL420"]


@pytest.mark.parametrize(("init", "body"), [
    ("self.host = torch.zeros(4, dtype=torch.long, pin_memory=True)", "self.ids.copy_(self.host, non_blocking=True)"),
    ("self.host = torch.zeros(4, dtype=torch.long, pin_memory=pinned)", "self.ids.copy_(self.host, non_blocking=True)"),
    ("self.host = torch.zeros(4, dtype=torch.long, device=device)", "self.ids.copy_(self.host)"),
    ("self.host = torch.zeros(4).pin_memory()", "self.ids.copy_(self.host)"),
    ("self.host = torch.zeros(4); self.spare = torch.zeros(4)", "self.spare.copy_(self.host)"),
    ("self.staging = None", "self.ids.copy_(self.staging.host)"),
])
def test_pinned_device_and_host_to_host_copies_are_fine(init, body):
    assert _copies(init, body) == []


@pytest.mark.parametrize("body", [
    "host = torch.zeros(1)\n        return host.to(device, non_blocking=True)",
    "host = torch.zeros(1)\n        host = host.to(device, non_blocking=True)\n        return host",
    "host = torch.arange(4)\n        return host.to(device=device)",
    "return torch.arange(4).to(device, non_blocking=True)",
    "host = torch.zeros(1)\n        return host.to(device, non_blocking=False)",  # blocking: the same copy, waited for
])
def test_a_pageable_host_tensor_moved_with_to_is_the_same_copy(body):
    assert _copies("pass", body) == ["GL420"]


@pytest.mark.parametrize("body", [
    "host = torch.zeros(1, pin_memory=True)\n        return host.to(device, non_blocking=True)",
    "host = torch.zeros(1)\n        return host.to(torch.float16)",
    "host = torch.zeros(1, device=device)\n        return host.to(device, non_blocking=True)",
    "kw = {'pin_memory': True}\n        host = torch.zeros(1, **kw)\n        return host.to(device, non_blocking=True)",
    "return torch.arange(4, pin_memory=True).to(device, non_blocking=True)",
])
def test_pinned_dtype_and_device_moves_are_fine(body):
    assert _copies("pass", body) == []
