"""The eager reference: one instance of the target stepped eagerly, every step recorded.

It is the slow half of the soak (an eager decode step is launch-bound), so the inventory runs it
in a worker of its own, in parallel with the graph worker from the first second; the soak
analysis then compares the two series. It is also how a crash is located: re-run with
``CUDA_LAUNCH_BLOCKING=1`` up to the step where a worker died, an eager step raises at the op
that failed, so its traceback names the project line (inside a graph replay nothing can).
"""

from __future__ import annotations

import os
import time

from graphlint.dynamic.crash import Progress
from graphlint.dynamic.frames import error_line, traceback_user_frame
from graphlint.dynamic.series import RegionClock, StepSeries, memory, step_limit, synchronize
from graphlint.dynamic.target import regions_of
from graphlint.inventory import DeviceResult, ProbeOutcome


def run_reference(factory, devices, options, total: int, label: str, *, records_dir: str = "",
                  progress: Progress | None = None, stop_file: str = "") -> DeviceResult:
    """Steps ``0 .. total - 1`` of one eager instance; the series goes to ``result.records["eager"]``
    (shipped to ``records_dir`` when given, else kept as an object). It stops early, cleanly, once
    ``stop_file`` exists: the graph worker has no graph left to compare it with."""
    progress = progress or Progress(None)
    started = time.perf_counter()
    target = factory(devices, **options)
    regions = regions_of(target)
    limit = step_limit(target)
    if limit is not None:
        total = min(total, limit)
    series, clock = StepSeries("eager"), RegionClock()
    result = DeviceResult(label)
    result.seconds["reference build"] = time.perf_counter() - started
    running = ""
    for step in range(total):
        if stop_file and os.path.exists(stop_file):
            ran = f"steps 0-{step - 1}" if step else "no step"
            result.probes.append(ProbeOutcome("reference", "ran", f"eager instance, {ran} (stopped: no graph left "
                                              "to compare with)"))
            break
        try:
            running = f"stage({step})"
            progress("reference", step, running)
            target.stage(step)
            before, start = memory(devices), time.perf_counter()
            for region in regions:
                running = region.name
                progress("reference", step, running)
                with clock.region(region.name, region.device):
                    region.fn()
            synchronize(devices)
            series.record(step, start, before, memory(devices), target.output(), clock.collect())
        except Exception as exc:  # noqa: BLE001 - what ran before is kept; the stop is reported
            where = traceback_user_frame(exc.__traceback__)
            at = f"{where.path}:{where.line}" if where else ""
            series.stopped = f"stopped at step {step} in {running}: {error_line(exc)}" + (f" (at {at})" if at else "")
            result.probes.append(ProbeOutcome("reference", "error", series.stopped, at))
            break
    else:
        result.probes.append(ProbeOutcome("reference", "ran", f"eager instance, steps 0-{total - 1}"))
    result.seconds["reference steps"] = time.perf_counter() - started - result.seconds["reference build"]
    result.records["eager"] = series.ship(records_dir) if records_dir else _finished(series)
    return result


def _finished(series: StepSeries) -> StepSeries:
    series.finish()
    return series
