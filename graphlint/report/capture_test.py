"""``graphlint capture-test``'s text: per device, the probes and the capture matrix; then what fails.

Sorted so that two runs (and two machines) print the same lines in the same order: devices in
natural order (``cuda:2`` before ``cuda:10``), probes in the order they run, regions in the
target's own order (the step's order, which a reader follows), then the failures: capture and
probe problems first (the verdict), then findings by file and line. Coloured like ``check``:
only on a terminal, never with ``NO_COLOR`` (the CLI decides; the text is the same either way).
"""

from __future__ import annotations

import io
import re

from rich.console import Console
from rich.markup import escape

from graphlint.report.inventory import speedup

PROBE_ORDER = ("tracer", "sync-debug", "capture", "replay", "soak")
STATUS_STYLE = {"ran": "green", "captured": "green", "skipped": "yellow", "not run": "yellow", "eager": "dim",
                "error": "bold red", "failed": "bold red", "empty": "bold red"}
_FINDING = re.compile(r"^(?P<path>\S+?):(?P<line>\d+) GL\d{3} ")


def natural(text: str) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def sort_failures(failed: list[str]) -> list[str]:
    """Device-level problems (capture failed, probe error) first, then findings by path and line."""
    def key(line: str):
        match = _FINDING.match(line)
        if match:
            return (1, natural(match["path"]), int(match["line"]), natural(line))
        return (0, natural(line), 0, [])
    return sorted(failed, key=key)


def render_capture_test(inv, failed: list[str], cuda: bool, color: bool = False) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=color, no_color=not color, color_system="standard" if color else None,
                      width=100_000, highlight=False, soft_wrap=True)
    if not cuda:
        console.print("[yellow]capture-test: CAPTURE SKIPPED[/]: no CUDA device; ran the tracer only (on the CPU).")
    for dev in sorted(inv.devices, key=lambda d: natural(d.device)):
        label = escape(f"{dev.device:>10}")
        for p in sorted(dev.probes, key=lambda p: PROBE_ORDER.index(p.probe) if p.probe in PROBE_ORDER else 99):
            console.print(f"{label} {p.probe:<10} {_status(p.status, 8)} {escape(p.detail)}")
        for region, cell in dev.capture.items():
            detail = f": {escape(cell['detail'])}" if cell.get("detail") else ""
            console.print(f"{label} {escape(f'{region:<24}')} {_status(cell['status'], 0)}{detail}")
        t, (ratio, note) = dev.timing, speedup(dev)
        if ratio is not None:
            console.print(f"{label} eager {t['eager_s']:.4g} s/token, graph {t['graph_s']:.4g} s/token "
                          f"([bold]{ratio:.2f}x[/]){escape(note)}")
        elif note:
            console.print(f"{label} eager {t['eager_s']:.4g} s/token; {escape(note)}")
        if dev.seconds:
            console.print(f"{label} seconds: " + escape(", ".join(f"{k} {v:.1f}" for k, v in dev.seconds.items())))
    for line in sort_failures(failed):
        console.print(f"[bold red]FAIL[/] {escape(line)}")
    if failed:
        console.print("capture-test [bold red]FAILED[/]")
    elif cuda:
        console.print("capture-test [green]passed[/]")
    else:
        console.print("capture-test [green]passed[/] [yellow](tracer only: capture was not tested)[/]")
    return out.getvalue()


def _status(status: str, width: int) -> str:
    padded = f"{status:<{width}}" if width else status
    style = STATUS_STYLE.get(status)
    return f"[{style}]{escape(padded)}[/]" if style else escape(padded)
