"""The seed's design: per layer, graph A and graph B around an eager attention.

Graph A is mHC pre + norm + projections; attention (cache writes, the host-side compressor
branch, the indexer's top-k over a length-dependent slice) stays eager because its shapes and
control flow depend on the position; graph B is mHC post + router + MoE + shared expert + mHC
post; one more graph runs the lm-head. The captured bodies are named ``*_step`` so that
``graphlint check`` treats them as decode entries; the attention region is not one (it is
deliberately eager, and its hazards are those of ``Attention.attend_eager``, listed under the
eager decoder). Every buffer that crosses a region boundary is allocated
here, once; cross-GPU copies are eager regions of their own, outside every graph.
"""

from __future__ import annotations

import torch

from dsv4.graph import GraphDecoder
from dsv4.model import DSV4Model
from graphlint.dynamic.target import Region


class ABGraphDecoder(GraphDecoder):
    def __init__(self, model: DSV4Model, use_graphs: bool | None = None) -> None:
        super().__init__(model, use_graphs)
        cfg, dtype = model.cfg, getattr(torch, model.cfg.dtype)
        n = cfg.hc_mult

        def buffers(device: torch.device) -> dict[str, torch.Tensor]:
            def zeros(*shape: int, dt: torch.dtype = dtype) -> torch.Tensor:
                return torch.zeros(shape, dtype=dt, device=device)

            return {"h": zeros(1, cfg.dim), "post": zeros(1, n, dt=torch.float32),
                    "comb": zeros(1, n, n, dt=torch.float32), "q": zeros(1, cfg.n_heads, cfg.head_dim),
                    "kv": zeros(1, cfg.head_dim), "q_latent": zeros(1, cfg.q_lora_rank),
                    "attn_out": zeros(1, cfg.dim)}

        self.x_bufs = {str(d): torch.zeros(1, n, cfg.dim, dtype=dtype, device=d) for d in model.devices}
        self.layer_bufs = [buffers(d) for d in model.layer_devices]
        previous = model.first_device
        for i, device in enumerate(model.layer_devices):
            if device != previous:
                self._regions.append(Region(f"to_{device}", self._transfer_fn(previous, device), device=device,
                                            capturable=False))
                previous = device
            self._regions += [
                Region(f"layer{i}.graph_a", self._graph_a_fn(i), device=device),
                Region(f"layer{i}.attention", self._attention_fn(i), device=device, capturable=False),
                Region(f"layer{i}.graph_b", self._graph_b_fn(i), device=device),
            ]
        if model.last_device != previous:  # more devices than layers: the head's device holds none
            self._regions.append(Region(f"to_{model.last_device}", self._transfer_fn(previous, model.last_device),
                                        device=model.last_device, capturable=False))
        self._regions.append(Region("lm_head", self._lm_head_step, device=model.last_device))

    def _transfer_fn(self, src: torch.device, dst: torch.device):
        def transfer() -> None:
            self.x_bufs[str(dst)].copy_(self.x_bufs[str(src)])

        return transfer

    def _graph_a_fn(self, i: int):
        model, bufs = self.model, self.layer_bufs[i]
        device = model.layer_devices[i]
        x, pos = self.x_bufs[str(device)], self.inputs.position(device)
        cos, sin = model.rope(i)

        def graph_a_step() -> None:
            if i == 0:
                x.copy_(self.model.embed_tokens(self.inputs.token(device)))
            outputs = self.model.blocks[i].pre_attention(x, cos.index_select(0, pos), sin.index_select(0, pos))
            for name, value in zip(("h", "post", "comb", "q", "kv", "q_latent"), outputs):
                bufs[name].copy_(value)

        return graph_a_step

    def _attention_fn(self, i: int):
        model, bufs, cache = self.model, self.layer_bufs[i], self.caches[i]
        attn = model.blocks[i].attn
        cos, sin = model.rope(i)

        def attention() -> None:
            out = attn.attend_eager(bufs["q"], bufs["kv"], bufs["q_latent"], bufs["h"], cache, self._step_pos,
                                    cos, sin)
            bufs["attn_out"].copy_(out)

        return attention

    def _graph_b_fn(self, i: int):
        model, bufs = self.model, self.layer_bufs[i]
        device = model.layer_devices[i]
        x, tokens = self.x_bufs[str(device)], self.inputs.token(device)

        def graph_b_step() -> None:
            x.copy_(self.model.blocks[i].post_attention(bufs["attn_out"], x, bufs["post"], bufs["comb"], tokens))

        return graph_b_step

    def _lm_head_step(self) -> None:
        self.logits_buf.copy_(self.model.logits(self.x_bufs[str(self.model.last_device)]))
