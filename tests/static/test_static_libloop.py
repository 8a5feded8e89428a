"""Code a library runs for the project, each a mechanism with fixtures of its own (branch ``libloop``).

- A project model a library's ``generate`` drives (:mod:`graphlint.static.libloops`): its
  ``forward`` and ``prepare_inputs_for_generation`` are eager entries, the model step of a loop
  outside the checked paths; a model whose ``generate`` is the project's own is not.
- A layer stored in a field of a project subclass of a library block that keeps the library's
  forward (:mod:`graphlint.static.libblocks`): calling the block runs it; a block with a forward
  of its own runs that forward only.
- A method of host data handed a tensor computes on it (``pos_table.emb(where)`` of an optional
  parameter): no Python value written into a tensor (GL306).
- Pinned staging in the host step of data the same on every step (built from parameters every
  host-step call passes unchanged across the step loop's iterations: :mod:`graphlint.static.restaged`)
  is a constant staged again every token (GL205, a warning); the step's own data stays silent."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_static_fixture import assert_marked, load
from static_helpers import analyze, check_fixture, decode_loop

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "libloop"


@pytest.mark.parametrize("name", ["genloop", "libblock", "optmodule", "restage"])
def test_each_flow_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    assert_marked(result.findings, load(FIXTURES / name))


def test_a_library_generate_loop_makes_the_model_forward_an_eager_entry(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "genloop")
    rated = {(Path(f.path).name, f.line, f.rule): f.severity for f in result.findings}
    assert rated == {("talker.py", 20, "GL204"): "error"}  # not Planner.forward's upload (its own generate)


MODEL = """
import torch
from lib import {base}

class Talker({base}):
{hook}
    def forward(self, ids):
        return torch.tensor([ids.shape[1]], device="cuda")

def speak(ids):
    return Talker().generate(ids)
"""
HOOK = "    def prepare_inputs_for_generation(self, ids, **kw):\n        return {'ids': ids}\n"


@pytest.mark.parametrize(("base", "hook", "found"), [
    ("MyPreTrainedModel", "", True),  # a base named like a generation mixin
    ("GenerationMixin", "", True),
    ("LibModule", HOOK, True),  # the hook only a generation loop calls
    ("LibModule", "", False),  # neither: nothing says the library's generate decodes with it
])
def test_which_library_bases_carry_a_generation_loop(base, hook, found):
    findings = analyze({"m.py": MODEL.format(base=base, hook=hook)})
    assert any(f.rule == "GL204" and f.severity == "error" for f in findings) is found


def test_only_the_constant_staging_is_reported_in_the_host_step(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "restage")
    found = {(f.line, f.rule): f.severity for f in result.findings}
    assert found == {(24, "GL205"): "warning", (53, "GL102"): "info"}  # not _ids, _windows, _lengths


def test_a_call_site_records_the_arguments_its_loops_leave_unchanged():
    from static_helpers import summarize
    source = """
    def step(f, rows, temp, n):
        width = 0
        for _ in range(n):
            f(rows, temp, width, 3)
            width += 1
    """
    (summary,) = summarize({"m.py": source})
    (site,) = [s for s in summary.data.functions["step"].calls if s.expr == ("n", "f")]
    assert site.same == (0, 1, 3)


PICKED = """
import torch
from torch import nn


class Spare(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, h):
        return self.proj(h) * h.sum().item()


class Picked(nn.Module):
    def __init__(self, gated: bool):
        super().__init__()
        self.up = nn.Linear(8, 8)
        self.spare = Spare()
{pick}
    def gated_forward(self, h):
        return self.up(h) * 2

    def plain_forward(self, h):
        return self.up(h)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = Picked(True)

    def forward(self, x):
        return self.mlp(x)
""" + decode_loop() + """
def main():
    loop(Model(), torch.zeros(3), 4)
"""
PICK = "        self.forward = self.gated_forward if gated else self.plain_forward\n"


def test_a_module_that_picks_its_forward_per_instance_runs_that_forward_only():
    """``self.forward = self.gated_forward`` in ``__init__``: calling the module runs the picked
    method, not every module its fields hold, as a library base's forward would (``Spare``)."""
    reads = [f for f in analyze({"m.py": PICKED.format(pick=PICK)}) if f.rule == "GL101"]
    assert reads == []


def test_a_module_with_no_forward_of_its_own_runs_what_it_holds():
    reads = [f for f in analyze({"m.py": PICKED.format(pick="")}) if f.rule == "GL101"]
    assert [f.line for f in reads] == [12]
