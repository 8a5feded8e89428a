"""graphlint target for the bundled engine (see graphlint/dynamic/target.py for the protocol).

``make_target(devices, decoder="eager"|"ab-graph"|"full-graph", preset="tiny", seed=0, fault=None,
**options)`` builds the model and one decoder with its own graphs off, so the harness captures each
region itself on its own stream. Options are config overrides (e.g. ``n_layers=2``). ``fault=NAME``
builds the full-graph decoder with one seed-lab fault planted (:mod:`dsv4.faults`); a fault in how
the engine captures (``capture-without-stream``) keeps its own graphs on, on CUDA. Inputs are teacher
forced: step ``s`` decodes token ``teacher_token(s)`` at position ``s`` from an empty context,
and past ``max_seq_len`` the context restarts (position ``s % max_seq_len``: every decoder's
masks hide what the earlier pass left in the caches), so a soak of any length runs. Two targets
built from the same arguments see identical inputs and, eagerly, produce bit-identical logits. With several devices, the cross-device copy of the residual streams is a
region of its own (``to_cuda:N``, capturable=False), as in the engine.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any, Literal, Sequence

import torch

from dsv4 import kernels
from dsv4.ab_graph import ABGraphDecoder
from dsv4.config import ConfigOverrides, DSV4Config, get_config
from dsv4.engine import EagerDecoder
from dsv4.full_graph import FullGraphDecoder
from dsv4.model import DSV4Model
from graphlint.dynamic.target import Region, TargetError

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

DECODERS = {"eager": EagerDecoder, "ab-graph": ABGraphDecoder, "full-graph": FullGraphDecoder}
# What --decoder and --preset take, spelled where graphlint reads them without importing this file
# (a misspelt name is refused at once); tests hold them equal to DECODERS and PRESETS.
DecoderName = Literal["eager", "ab-graph", "full-graph"]
PresetName = Literal["tiny", "small", "flash", "pro"]


def teacher_token(step: int, vocab_size: int) -> int:
    """A deterministic, non-repeating-looking token stream."""
    return (step * 7919 + 13) % vocab_size


class DSV4Target:
    def __init__(self, devices: Sequence[Any], decoder: str, cfg: DSV4Config, seed: int,
                 fault: str | None = None) -> None:
        self.devices = [torch.device(d) for d in devices] or [torch.device("cpu")]
        self.model = DSV4Model(cfg, self.devices, seed=seed)
        for device in self.devices:
            kernels.warmup(device, self.model.kernel_dtypes())  # compiled before the harness captures anything
        if fault is None:
            self.decoder = DECODERS[decoder](self.model, use_graphs=False)
        else:
            from dsv4.faults import fault_decoder

            cls = fault_decoder(fault)
            self.decoder = cls(self.model, use_graphs=None if cls.self_capturing else False)

    @torch.no_grad()
    def stage(self, step: int) -> None:
        cfg = self.model.cfg
        self.decoder.stage(teacher_token(step, cfg.vocab_size), step % cfg.max_seq_len)

    def regions(self) -> list[Region]:
        return [Region(r.name, torch.no_grad()(r.fn), r.device, r.capturable, r.source, r.extra)
                for r in self.decoder.regions()]

    def output(self) -> torch.Tensor:
        return self.decoder.logits()


def make_target(devices: Sequence[Any], *, decoder: DecoderName | None = None, preset: PresetName = "tiny",
                seed: int = 0, fault: str | None = None, **options: Unpack[ConfigOverrides]) -> DSV4Target:
    """Bad arguments raise TargetError (a ValueError), which graphlint reports as a usage error.
    ``decoder`` defaults to eager, or to full-graph with a ``fault`` (the only decoder it plants in)."""
    decoder = decoder or ("full-graph" if fault else "eager")
    if decoder not in DECODERS:
        raise TargetError(f"unknown decoder {decoder!r} (expected one of {', '.join(DECODERS)})")
    if fault is not None:
        from dsv4.faults import FAULTS

        if fault not in FAULTS:
            raise TargetError(f"unknown fault {fault!r} (`python -m dsv4.faults list` names them all)")
        if decoder != "full-graph":
            raise TargetError(f"faults are planted in the full-graph decoder, not {decoder!r}")
    known = [f.name for f in fields(DSV4Config)]
    unknown = sorted(set(options) - set(known))
    if unknown:
        import difflib

        guesses = [g for u in unknown for g in difflib.get_close_matches(u, known, n=1)]
        hint = f"; did you mean {', '.join(guesses)}?" if guesses else ""
        raise TargetError(f"unknown option(s) {', '.join(unknown)}{hint} (options: decoder, preset, seed, fault and "
                          f"the DSV4Config fields {', '.join(known)})")
    if preset in ("flash", "pro"):
        raise TargetError(f"preset {preset!r} records the public sizes and is never built; use tiny or small")
    try:
        cfg = get_config(preset, **options)
    except (ValueError, TypeError) as exc:  # unknown preset, or overrides the config rejects
        raise TargetError(f"{exc}") from None
    return DSV4Target(devices, decoder, cfg, seed, fault)
