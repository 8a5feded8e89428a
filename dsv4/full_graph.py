"""The seed's Phase 2, which it never reached: one graph per device per decode step.

Everything position-dependent moved to the device: positions are a staged device tensor, the
compressor runs every step and commits with a boundary mask, and attention reads fixed-shape
ring / compressed buffers with validity masks (the indexer's top-k is over masked scores). With
one GPU the whole step -- embedding to logits -- is a single graph replay.
"""

from __future__ import annotations

import torch

from dsv4.graph import GraphDecoder
from dsv4.model import DSV4Model
from graphlint.dynamic.target import Region


class FullGraphDecoder(GraphDecoder):
    def __init__(self, model: DSV4Model, use_graphs: bool | None = None) -> None:
        super().__init__(model, use_graphs)
        cfg, dtype = model.cfg, getattr(torch, model.cfg.dtype)
        self.in_bufs = {str(d): torch.zeros(1, cfg.hc_mult, cfg.dim, dtype=dtype, device=d) for d in model.devices}
        self.out_bufs = {str(d): torch.zeros(1, cfg.hc_mult, cfg.dim, dtype=dtype, device=d) for d in model.devices}
        for k, device in enumerate(model.devices):
            if k:
                self._regions.append(Region(f"to_{device}", self._transfer_fn(model.devices[k - 1], device),
                                            device=device, capturable=False))
            self._regions.append(Region(f"step@{device}", self._device_step_fn(device), device=device))

    def _transfer_fn(self, src: torch.device, dst: torch.device):
        def transfer() -> None:
            self.in_bufs[str(dst)].copy_(self.out_bufs[str(src)])

        return transfer

    def _device_step_fn(self, device: torch.device):
        model = self.model
        layers = [i for i, d in enumerate(model.layer_devices) if d == device]
        tokens, pos = self.inputs.token(device), self.inputs.position(device)
        first, last = device == model.first_device, device == model.last_device

        def device_step() -> None:
            x = self._embed(tokens) if first else self.in_bufs[str(device)]
            for i in layers:
                x = self._layer(i, x, tokens, pos)
            if last:
                self.logits_buf.copy_(self.model.logits(x))
            else:
                self.out_bufs[str(device)].copy_(x)

        return device_step

    # The step's stages as methods of their own, so that a variant (the seed lab's faults,
    # dsv4/faults/) overrides exactly one of them.
    def _embed(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.model.embed_tokens(tokens)

    def _layer(self, i: int, x: torch.Tensor, tokens: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        return self.model.blocks[i].forward_static(x, tokens, self.caches[i], pos, self.model.rope(i))
