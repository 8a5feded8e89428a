"""Pictures for the inventory report, where a curve says more than a table row: a 512-step soak used
to be one summary row.

Three, written next to the markdown report (``inventory.md`` -> ``inventory-memory.svg``, ...) and
embedded in its soak section: live device memory per soak step (graph and eager instance), max|graph
- eager| per step, and seconds per token of every region, eager against graph. matplotlib is an
optional extra (``pip install 'cuda-graphlint[plots]'``); without it the report says so in one line
and keeps its tables. Decisions: SVG by default (vector, a few tens of kB, text that diffs in a
committed report, and GitHub shows it inline), PNG on request; SVGs are byte-stable for the same data
(fixed hash salt, no date), so a re-run that changed nothing changes no file. Torch-free: it draws
the plain numbers :mod:`graphlint.dynamic.soak` put in ``DeviceResult.soak``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from graphlint.inventory import DeviceResult, Inventory

EXTRA = "pip install 'cuda-graphlint[plots]'"
FORMATS = ("svg", "png")


@dataclass(frozen=True)
class Picture:
    key: str  # "memory", "diff" or "regions"
    file: str  # relative to the report's directory
    caption: str


@dataclass
class Pictures:
    written: list[Picture]
    note: str = ""  # one line for the report when some or all could not be drawn

    def get(self, key: str) -> Picture | None:
        return next((p for p in self.written if p.key == key), None)


def drawable(inv: Inventory) -> bool:
    """Whether any device has something to draw (a soak's series or per-region times)."""
    return any(_series(d) or d.soak.get("regions") for d in inv.devices)


def _series(dev: DeviceResult) -> dict:
    series = dev.soak.get("series") or {}
    return series if series.get("steps") else {}


def write_pictures(inv: Inventory, report: Path, fmt: str = "svg") -> Pictures:
    """Draw what ``inv`` holds next to ``report``; never raises for a missing matplotlib."""
    if not drawable(inv):
        return Pictures([])
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        from matplotlib import pyplot as plt
    except ImportError:
        return Pictures([], f"No pictures: matplotlib is not installed ({EXTRA}); the tables below say the same.")
    plt.rcParams.update({"svg.hashsalt": "graphlint", "svg.fonttype": "none", "figure.dpi": 100})
    written = []
    for key, draw in (("memory", _memory), ("diff", _diff), ("regions", _regions)):
        fig = draw(plt, inv)
        if fig is None:
            continue
        name = f"{report.stem}-{key}.{fmt}"
        fig.savefig(report.parent / name, format=fmt, bbox_inches="tight",
                    metadata={"Date": None} if fmt == "svg" else {"Software": None})
        plt.close(fig)
        written.append(Picture(key, name, _CAPTIONS[key]))
    return Pictures(written)


_CAPTIONS = {
    "memory": "Live device memory after each soak step: flat lines are what a graph-ready step looks like; "
              "a slope is memory that grows every step (GL291).",
    "diff": "max |graph - eager| of the step's output at each soak step: zero or rounding noise is a graph that "
            "replays like eager; a rise is drift (GL392), a jump a mismatch.",
    "regions": "Median seconds per token of each region over the soak, eager instance against graph instance.",
}


def _lines(plt, title: str, ylabel: str):
    fig, ax = plt.subplots(figsize=(8, 3.6))
    ax.set_title(title, fontsize=11)
    ax.set_xlabel("decode step")
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    return fig, ax


def _memory(plt, inv: Inventory):
    devices = [(d, _series(d)) for d in inv.devices if _series(d)]
    if not devices:
        return None
    fig, ax = _lines(plt, "Live device memory per soak step", "MiB")
    for dev, series in devices:
        for kind, style in (("graph", "-"), ("eager", "--")):
            points = [(s, b / 2**20) for s, b in zip(series["steps"], series[f"{kind}_live_bytes"]) if b is not None]
            if points:
                ax.plot(*zip(*points), style, label=f"{dev.device} {kind}", linewidth=1.2)
    ax.legend(fontsize=8)
    return fig


def _diff(plt, inv: Inventory):
    devices = [(d, _series(d)) for d in inv.devices if _series(d) and any(v is not None for v in _series(d)["max_abs_diff"])]
    if not devices:
        return None
    fig, ax = _lines(plt, "max |graph - eager| per soak step", "max |difference|")
    positive = [v for _, s in devices for v in s["max_abs_diff"] if v]
    if positive and max(positive) / min(positive) > 100:
        ax.set_yscale("symlog", linthresh=min(positive))
    for dev, series in devices:
        points = [(s, v) for s, v in zip(series["steps"], series["max_abs_diff"]) if v is not None]
        ax.plot(*zip(*points), label=dev.device, linewidth=1.2)
        first = dev.soak.get("first_mismatch_step")
        if first is not None:
            ax.axvline(first, color="red", linestyle=":", linewidth=1, label=f"{dev.device} first mismatch")
    ax.legend(fontsize=8)
    return fig


def _regions(plt, inv: Inventory):
    devices = [d for d in inv.devices if d.soak.get("regions")]
    if not devices:
        return None
    rows = [(f"{d.device} {name}" if len(devices) > 1 else name, t.get("eager_s"), t.get("graph_s"))
            for d in devices for name, t in d.soak["regions"].items()]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(rows) + 2), 3.8))
    width = 0.4
    for offset, index, label in ((-width / 2, 1, "eager"), (width / 2, 2, "graph")):
        values = [row[index] * 1e3 if row[index] is not None and math.isfinite(row[index]) else 0.0 for row in rows]
        ax.bar([i + offset for i in range(len(rows))], values, width, label=label)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([row[0] for row in rows], rotation=45 if len(rows) > 6 else 0, ha="right" if len(rows) > 6 else "center",
                       fontsize=8)
    ax.set_ylabel("ms per token")
    ax.set_title("Time per region, eager vs graph (median over the soak)", fontsize=11)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return fig
