"""The reference decoder and the helpers every decoder shares (prefill, greedy generation).

:class:`EagerDecoder` is written the way the reference engine is: Python positions, the host-side
compressor branch, ``bincount(...).tolist()`` expert counts, caches sliced to their length. It
is correct and it is the "before" picture: graphlint should find every reason it cannot be
captured. Its regions (embed / each layer / head) are all declared capturable so that a capture
test shows which of them fail and why.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Protocol, Sequence

import torch

from dsv4 import kernels
from dsv4.attention import LayerCache
from dsv4.model import DSV4Model
from graphlint.dynamic.target import Region


def eager_forward(model: DSV4Model, caches: list[LayerCache], tokens: torch.Tensor, start: int) -> torch.Tensor:
    """Logits [T, vocab] of tokens [T] at positions start .., updating ``caches`` in place."""
    x = model.embed_tokens(tokens)
    for i, block in enumerate(model.blocks):
        device = model.layer_devices[i]
        x = block.forward_eager(x.to(device), tokens.to(device), caches[i], start, model.rope(i))
    return model.logits(x.to(model.last_device))


@torch.no_grad()
def prefill(model: DSV4Model, caches: list[LayerCache], prompt: Sequence[int]) -> torch.Tensor:
    """Reset the caches and run the prompt in one batched pass; returns its logits [T, vocab]."""
    if not prompt or len(prompt) > model.cfg.max_seq_len:
        raise ValueError(f"prompt length must be 1..{model.cfg.max_seq_len}, got {len(prompt)}")
    for cache in caches:
        cache.reset()
    return eager_forward(model, caches, torch.tensor(list(prompt), device=model.first_device), 0)


class Decoder(Protocol):
    def prefill(self, prompt: Sequence[int]) -> torch.Tensor: ...

    def step(self, token: int) -> torch.Tensor: ...


@torch.no_grad()
def generate(decoder: Decoder, prompt: Sequence[int], steps: int) -> tuple[list[int], list[torch.Tensor]]:
    """Greedy decoding: the generated tokens and a CPU copy of the logits that chose each one."""
    logits = decoder.prefill(prompt)[-1]
    tokens, history = [], []
    for _ in range(steps):
        history.append(logits.to("cpu", torch.float32, copy=True))
        tokens.append(int(logits.argmax()))
        logits = decoder.step(tokens[-1])
    return tokens, history


def check_position(model: DSV4Model, pos: int) -> None:
    if not 0 <= pos < model.cfg.max_seq_len:
        raise ValueError(f"position {pos} is outside the context (max_seq_len {model.cfg.max_seq_len})")


class EagerDecoder:
    def __init__(self, model: DSV4Model, use_graphs: bool | None = None) -> None:
        del use_graphs  # accepted for a uniform constructor; the reference never captures
        for device in model.devices:
            kernels.warmup(device, model.kernel_dtypes())  # the same kernels as the graph decoders
        self.model, self.caches, self.pos = model, model.new_caches(), 0
        self._tokens = torch.zeros(1, dtype=torch.long, device=model.first_device)
        self._x: torch.Tensor | None = None
        self._logits: torch.Tensor | None = None
        self._step_pos = 0

    def prefill(self, prompt: Sequence[int]) -> torch.Tensor:
        logits = prefill(self.model, self.caches, prompt)
        self.pos = len(prompt)
        return logits

    def stage(self, token: int, pos: int) -> None:
        check_position(self.model, pos)
        self._tokens = torch.tensor([token], device=self.model.first_device)
        self._step_pos = pos

    def regions(self) -> list[Region]:
        model = self.model
        layers = [
            Region(f"layer{i}", partial(self._layer, i), device=d, source="dsv4/model.py:Block.forward_eager")
            for i, d in enumerate(model.layer_devices)
        ]
        return [Region("embed", self._embed, device=model.first_device), *layers,
                Region("head", self._head, device=model.last_device)]

    def _embed(self) -> None:
        self._x = self.model.embed_tokens(self._tokens)

    def _layer(self, i: int) -> None:
        device = self.model.layer_devices[i]
        self._x = self.model.blocks[i].forward_eager(
            self._x.to(device), self._tokens.to(device), self.caches[i], self._step_pos, self.model.rope(i))

    def _head(self) -> None:
        self._logits = self.model.logits(self._x.to(self.model.last_device))[-1]

    def logits(self) -> torch.Tensor:
        return self._logits

    @torch.no_grad()
    def step(self, token: int) -> torch.Tensor:
        """Decode one token at the next position; returns its fp32 logits [vocab]."""
        self.stage(token, self.pos)
        self._embed()
        for i in range(len(self.model.blocks)):
            self._layer(i)
        self._head()
        self.pos += 1
        return self._logits


@torch.no_grad()
def timed_generate(decoder: Decoder, model: DSV4Model, prompt: Sequence[int], steps: int) -> tuple[list[int], float]:
    """Greedy decoding like :func:`generate`; returns the tokens and the decode seconds per token
    (prefill excluded; each step includes the argmax the next step needs)."""
    logits = decoder.prefill(prompt)[-1]
    token = int(logits.argmax())
    for device in model.devices:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    start = time.perf_counter()
    tokens = [token]
    for _ in range(steps - 1):
        tokens.append(int(decoder.step(tokens[-1]).argmax()))
    return tokens, (time.perf_counter() - start) / max(steps - 1, 1)
