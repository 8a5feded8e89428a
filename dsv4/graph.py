"""What both graph decoders share: staged step inputs and a runner that captures and replays regions.

The runner follows the seed's hard-won rules for multi-GPU graphs: every device gets an explicit
``torch.cuda.Stream(device=dev)`` used for capture *and* replay, entered under
``torch.cuda.device(dev)`` (``set_device`` alone gave empty graphs or stale replays); work on
different streams is ordered by pre-created events, never by a device-wide synchronize; one
real step runs eagerly on those streams (after ``kernels.warmup``) before anything is captured.
With graphs off (CPU, or a harness that captures regions itself) the same regions run in order.
"""

from __future__ import annotations

from typing import Sequence

import torch

from dsv4 import kernels
from dsv4.engine import check_position, prefill
from dsv4.model import DSV4Model
from graphlint.dynamic.target import Region


def _key(stream: torch.cuda.Stream) -> tuple[int, int]:
    return stream.device_index, stream.stream_id


class StepInputs:
    """The step's token id and position: written to pinned host memory, then one ``copy_`` per
    device into that device's static [token, pos] buffer, so no layer reads another GPU's memory."""

    def __init__(self, devices: Sequence[torch.device], pinned: bool) -> None:
        self.host = torch.zeros(2, dtype=torch.long, pin_memory=pinned)
        self.host_view = self.host.numpy()  # plain host writes, no torch op per step
        self.per_device = {str(d): torch.zeros(2, dtype=torch.long, device=d) for d in devices}
        self.copied = {str(d): torch.cuda.Event() for d in devices} if pinned else {}

    def token(self, device: torch.device) -> torch.Tensor:
        return self.per_device[str(device)][0:1]

    def position(self, device: torch.device) -> torch.Tensor:
        return self.per_device[str(device)][1:2]


class RegionRunner:
    def __init__(self, regions: list[Region], devices: Sequence[torch.device], use_graphs: bool) -> None:
        self.regions, self.devices, self.use_graphs = regions, list(devices), use_graphs
        self.graphs: dict[str, torch.cuda.CUDAGraph] = {}
        if not use_graphs:
            return
        self.streams = {str(d): torch.cuda.Stream(device=d) for d in self.devices}
        self.defaults = {str(d): torch.cuda.default_stream(d) for d in self.devices}
        self.pools = {str(d): torch.cuda.graph_pool_handle() for d in self.devices}
        every = [*self.streams.values(), *self.defaults.values()]
        self.events = {(_key(a), _key(b)): torch.cuda.Event() for a in every for b in every if a != b}
        self._last: torch.cuda.Stream | None = None
        self._last_on: dict[str, torch.cuda.Stream] = {}

    def _stream(self, region: Region) -> torch.cuda.Stream:
        dev = str(region.device)
        return self.streams[dev] if region.capturable else self.defaults[dev]

    def _follow(self, stream: torch.cuda.Stream, device: str) -> None:
        """Make ``stream`` wait for the last work on its device and the last work anywhere."""
        previous = {_key(s): s for s in (self._last_on.get(device), self._last) if s is not None and s != stream}
        for prev in previous.values():
            event = self.events[(_key(prev), _key(stream))]
            event.record(prev)
            stream.wait_event(event)
        self._last, self._last_on[device] = stream, stream

    def stage(self, inputs: StepInputs, token: int, pos: int) -> None:
        if not self.use_graphs:
            inputs.host_view[:] = (token, pos)
            for buffer in inputs.per_device.values():
                buffer.copy_(inputs.host)
            return
        for event in inputs.copied.values():
            # graphlint: ignore[GL107] -- by design: the previous step's copies have read the pinned buffer
            event.synchronize()
        inputs.host_view[:] = (token, pos)
        for device in self.devices:
            dev = str(device)
            self._last_on[dev] = self.defaults[dev]  # staging waits for eager work (prefill, caller)
            stream = self.streams[dev]
            self._follow(stream, dev)
            with torch.cuda.device(device), torch.cuda.stream(stream):
                inputs.per_device[dev].copy_(inputs.host, non_blocking=True)
                inputs.copied[dev].record(stream)

    def run(self) -> None:
        if not self.use_graphs:
            for region in self.regions:
                region.fn()
            return
        for region in self.regions:
            dev, stream = str(region.device), self._stream(region)
            self._follow(stream, dev)
            with torch.cuda.device(region.device), torch.cuda.stream(stream):
                graph = self.graphs.get(region.name)
                if graph is None:
                    region.fn()  # a deliberately eager region, or the warm-up step before capture
                else:
                    graph.replay()
        last = str(self.devices[-1])
        self._follow(self.defaults[last], last)  # the caller reads the logits on the default stream

    def capture(self) -> None:
        """Record every capturable region; call after one eager warm-up step on the same streams."""
        for region in self.regions:
            if not region.capturable:
                continue
            dev = str(region.device)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.device(region.device):
                with torch.cuda.graph(graph, pool=self.pools[dev], stream=self.streams[dev]):
                    region.fn()
            self.graphs[region.name] = graph


class GraphDecoder:
    """A decoder whose step is a fixed list of regions over buffers allocated once.

    Subclasses allocate their buffers and build ``self._regions``. ``use_graphs=None`` captures
    whenever every device is a CUDA device; ``False`` runs the same regions eagerly.
    """

    def __init__(self, model: DSV4Model, use_graphs: bool | None = None) -> None:
        on_cuda = all(d.type == "cuda" for d in model.devices)
        if use_graphs and not on_cuda:
            raise ValueError("CUDA graphs need every device to be a CUDA device")
        self.model, self.pos = model, 0
        self.use_graphs = on_cuda if use_graphs is None else use_graphs
        self.caches = model.new_caches()
        self.inputs = StepInputs(model.devices, pinned=on_cuda)
        self.logits_buf = torch.zeros(1, model.cfg.vocab_size, dtype=torch.float32, device=model.last_device)
        self._step_pos = 0  # host copy of the staged position, for deliberately eager regions
        self._regions: list[Region] = []
        self._runner: RegionRunner | None = None

    def regions(self) -> list[Region]:
        return list(self._regions)

    def prefill(self, prompt: Sequence[int]) -> torch.Tensor:
        logits = prefill(self.model, self.caches, prompt)
        self.pos = len(prompt)
        return logits

    def _runner_ready(self) -> RegionRunner:
        if self._runner is None:
            if self.use_graphs:
                for device in self.model.devices:
                    kernels.warmup(device, self.model.kernel_dtypes())
            self._runner = RegionRunner(self._regions, self.model.devices, self.use_graphs)
        return self._runner

    def stage(self, token: int, pos: int) -> None:
        check_position(self.model, pos)
        self._step_pos = pos
        self._runner_ready().stage(self.inputs, token, pos)

    def logits(self) -> torch.Tensor:
        return self.logits_buf[0]

    @torch.no_grad()
    def step(self, token: int) -> torch.Tensor:
        """Decode one token; returns the static logits buffer [vocab] (valid until the next step)."""
        self.stage(token, self.pos)
        runner = self._runner_ready()
        runner.run()
        if self.use_graphs and not runner.graphs:
            runner.capture()  # the step just run was the eager warm-up on the graph streams
        self.pos += 1
        return self.logits_buf[0]
