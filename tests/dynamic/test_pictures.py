"""Pictures in the inventory report: drawn on the CPU from a synthetic soak, embedded next to the
markdown, one line instead when matplotlib is missing; and the soak data they draw, recorded by the
probes (under the CPU graph emulator)."""

from __future__ import annotations

import math
import sys

import pytest

from graphlint.crossref import CrossRef
from graphlint.inventory import DeviceResult, Inventory, ProbeOutcome
from graphlint.report.inventory import render_markdown
from graphlint.report.plots import EXTRA, drawable, write_pictures

STEPS = list(range(8, 72))
REGIONS = {"embed": {"eager_s": 0.0021, "graph_s": 0.0004}, "layer0": {"eager_s": 0.011, "graph_s": 0.0015},
           "head": {"eager_s": 0.0012, "graph_s": 0.0011}}


def _inventory(leak: int = 0, drift: bool = False) -> Inventory:
    series = {"steps": STEPS,
              "graph_live_bytes": [2**30 + leak * (s - 8) for s in STEPS],
              "eager_live_bytes": [2**30 + 2**20 for _ in STEPS],
              "max_abs_diff": [(1e-7 * math.exp((s - 8) / 8) if drift else 0.0) for s in STEPS]}
    soak = {"steps": 72, "graph_bytes_per_step": float(leak), "eager_bytes_per_step": 0.0,
            "graph_allocations_per_step": 0.0, "max_diff_first_quarter": 0.0, "max_diff_last_quarter": 0.0,
            "first_mismatch_step": 60 if drift else None, "graph_s_per_step": 0.003, "eager_s_per_step": 0.0143,
            "series": series, "regions": REGIONS}
    dev = DeviceResult("cuda:0", probes=[ProbeOutcome("soak", "ran", "64 steps after the replay window")], soak=soak,
                       regions=list(REGIONS), meta={"gpu": "synthetic"})
    return Inventory("dsv4.target:make_target", "graphlint inventory -o inventory.md", "2026-12-04", "2.13.0",
                     True, [dev])


XREF = CrossRef(False, "skipped: synthetic")


@pytest.mark.slow  # imports matplotlib
def test_the_soak_is_drawn_next_to_the_report_and_embedded(tmp_path):
    pytest.importorskip("matplotlib", reason="the [plots] extra (matplotlib) is not installed")
    report = tmp_path / "inventory.md"
    pictures = write_pictures(_inventory(leak=4096, drift=True), report)
    assert [p.key for p in pictures.written] == ["memory", "diff", "regions"] and pictures.note == ""
    for picture in pictures.written:
        text = (tmp_path / picture.file).read_text()
        assert picture.file.startswith("inventory-") and text.lstrip().startswith("<?xml") and "</svg>" in text
    assert "embed" in (tmp_path / "inventory-regions.svg").read_text()  # svg.fonttype none: labels stay text
    markdown = render_markdown(_inventory(leak=4096, drift=True), XREF, pictures)
    soak = markdown[markdown.index("## Soak"):]
    assert soak.index("![") < soak.index("### Time per region")
    for name in ("inventory-memory.svg", "inventory-diff.svg", "inventory-regions.svg"):
        assert f"]({name})" in soak
    assert "| cuda:0 | layer0 | 0.011 | 0.0015 | 7.33x |" in soak


@pytest.mark.slow  # imports matplotlib
def test_pictures_are_byte_stable_and_png_on_request(tmp_path):
    pytest.importorskip("matplotlib", reason="the [plots] extra (matplotlib) is not installed")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = write_pictures(_inventory(), tmp_path / "a" / "r.md")
    write_pictures(_inventory(), tmp_path / "b" / "r.md")
    for picture in first.written:
        assert (tmp_path / "a" / picture.file).read_bytes() == (tmp_path / "b" / picture.file).read_bytes()
    png = write_pictures(_inventory(), tmp_path / "a" / "p.md", "png")
    assert [p.file for p in png.written] == ["p-memory.png", "p-diff.png", "p-regions.png"]
    assert (tmp_path / "a" / "p-memory.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_without_matplotlib_the_report_says_so_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    pictures = write_pictures(_inventory(), tmp_path / "inventory.md")
    assert pictures.written == [] and EXTRA in pictures.note
    markdown = render_markdown(_inventory(), XREF, pictures)
    assert markdown.count("matplotlib is not installed") == 1 and "![" not in markdown
    assert list(tmp_path.iterdir()) == []


def test_nothing_to_draw_without_a_soak():
    inv = _inventory()
    inv.devices[0].soak = {}
    assert not drawable(inv)
    assert "## Soak" in render_markdown(inv, XREF, None)


@pytest.mark.slow
def test_the_soak_records_what_the_pictures_draw_on_the_emulated_graph(monkeypatch):
    import graph_emulator

    import torch

    from graphlint.dynamic.graph_probe import run_graph_phase
    from graphlint.dynamic.target import load_factory
    from graphlint.rules import runtime_rules

    graph_emulator.install(monkeypatch)
    options = {"decoder": "full-graph", "n_layers": 2, "compress_ratios": (4, 16), "max_seq_len": 16}
    result = run_graph_phase(load_factory("dsv4.target:make_target"), [torch.device("cpu")], options,
                             runtime_rules(), "cpu", soak_steps=20)
    series, regions = result.soak["series"], result.soak["regions"]
    assert series["steps"] == list(range(8, 20))
    assert len(series["graph_live_bytes"]) == len(series["max_abs_diff"]) == 12
    assert all(d == 0.0 for d in series["max_abs_diff"])  # replays like eager
    assert list(regions) == result.regions and all({"graph_s", "eager_s"} <= set(t) for t in regions.values())
    assert all(t["graph_s"] > 0 and t["eager_s"] > 0 for t in regions.values())


def test_inventory_draws_only_with_a_report_file_and_not_with_plots_none(tmp_path):
    from graphlint.dynamic.commands import _pictures

    assert _pictures(_inventory(), None, "svg").note.startswith("Pictures of the soak are drawn next to the report")
    assert _pictures(_inventory(), str(tmp_path / "r.md"), "none") is None
    quiet = _inventory()
    quiet.devices[0].soak = {}
    assert _pictures(quiet, str(tmp_path / "r.md"), "svg") is None and list(tmp_path.iterdir()) == []
