"""Step time of each fault decoder against the clean full-graph decoder, in one process.

Run after the probes, in a fresh process of its own (``python -m dsv4.faults time``), on the
decoders whose capture did not fail (a failed capture would taint this process's later ones):
every decoder over one tiny bf16 model (variants share its weights), greedy steps with its own
graphs (``graph_s``) and with graphs off (``eager_s``), repeats interleaved so that the machine's
drift hits all of them alike. The figures are medians; the report shows them as ratios to the
clean decoder's.
"""

from __future__ import annotations

import statistics
from typing import Any

import torch

from dsv4.config import get_config
from dsv4.engine import timed_generate
from dsv4.faults import FAULTS
from dsv4.full_graph import FullGraphDecoder
from dsv4.model import DSV4Model

CLEAN = "clean"
PROMPT = [(i * 131 + 7) % 256 for i in range(8)]


def time_decoders(names: list[str], options: dict[str, Any], *, steps: int = 24, repeats: int = 3,
                  eager_steps: int = 8) -> dict[str, dict[str, float]]:
    """{name or "clean": {"graph_s": ..., "eager_s": ...}} on the first CUDA device (on the CPU,
    where nothing captures, ``eager_s`` only)."""
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", 0) if cuda else torch.device("cpu")
    overrides = {k: v for k, v in options.items() if k not in ("preset", "fault", "decoder")}
    model = DSV4Model(get_config(options.get("preset", "tiny"), **overrides), [device], seed=0)
    classes = {CLEAN: FullGraphDecoder, **{n: FAULTS[n] for n in names}}
    modes = (True, False) if cuda else (False,)
    decoders = {(name, graphs): cls(model, use_graphs=graphs) for name, cls in classes.items() for graphs in modes}
    times: dict[tuple[str, bool], list[float]] = {key: [] for key in decoders}
    for decoder in decoders.values():
        timed_generate(decoder, decoder.model, PROMPT, 3)  # warm-up; the graph decoders capture here
    for _ in range(repeats):
        for (name, graphs), decoder in decoders.items():
            times[name, graphs].append(timed_generate(decoder, decoder.model, PROMPT, steps if graphs else eager_steps)[1])
    key = {True: "graph_s", False: "eager_s"}
    return {name: {key[g]: statistics.median(times[name, g]) for g in modes} for name in classes}
