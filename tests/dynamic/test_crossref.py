"""The static cross-check: over the target's own code wherever it is, with the user's configuration.

Issue 9 item 3: a wrapper reaching its engine through an attribute (``self.inner.compute()``), or an
engine outside the working directory, must still be checked. Issue 10 item 7: a rule the user
switched off is not a static miss.
"""

from __future__ import annotations

import pytest

from graphlint.crossref import CONFIRMED, DYNAMIC_ONLY, IGNORED, SUPPRESSED, cross_reference
from graphlint.finding import Finding

ENGINE = """\
import torch


class Engine:
    def compute(self, x: torch.Tensor) -> torch.Tensor:
        scratch = torch.zeros(8, device=x.device)
        return x + scratch
"""
WRAPPER = """\
from eng.step import Engine


class Wrapper:
    def __init__(self):
        self.inner = Engine()

    def step(self, x):
        return self.inner.compute(x)
"""


def _dynamic(path: str, line: int, rule: str = "GL290", kernel: str = "") -> Finding:
    return Finding(rule, "runtime", "allocation" if rule == "GL290" else "capture-hygiene", "warning", path, line, 0,
                   "seen", evidence=("tracer:aten.zeros.default",), source="dynamic", device="cpu", region="step",
                   in_graph=True, kernel=kernel)


def _project(root, config: str = "") -> None:
    (root / "eng").mkdir(parents=True)
    (root / "eng" / "__init__.py").write_text("")
    (root / "eng" / "step.py").write_text(ENGINE)
    (root / "wrap.py").write_text(WRAPPER)
    if config:
        (root / "pyproject.toml").write_text(f"[tool.graphlint]\n{config}\n")


@pytest.mark.slow
def test_an_engine_reached_through_an_attribute_is_checked(tmp_path, monkeypatch):
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    xref = cross_reference([_dynamic("eng/step.py", 6)], ["wrap.py:Wrapper.step"], ["wrap.py"], ["eng/step.py"])
    assert xref.ran, xref.detail
    assert xref.of(_dynamic("eng/step.py", 6)) == CONFIRMED and xref.rules_at(_dynamic("eng/step.py", 6)) == ["GL201"]


@pytest.mark.slow
def test_an_engine_outside_the_working_directory_is_checked(tmp_path, monkeypatch):
    _project(tmp_path / "elsewhere")
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    step, wrap = str(tmp_path / "elsewhere" / "eng" / "step.py"), str(tmp_path / "elsewhere" / "wrap.py")
    xref = cross_reference([_dynamic(step, 6)], [], [wrap], [step], target=f"{wrap}:Wrapper")
    assert xref.ran, xref.detail
    assert xref.of(_dynamic(step, 6)) == CONFIRMED


@pytest.mark.parametrize(("config", "source_comment", "expected"), [
    ('ignore = ["GL201"]', "", f"{IGNORED} (GL201)"),
    ('select = ["host-sync"]', "", f"{IGNORED} (GL201)"),
    ('per-file-ignores = {"eng/*" = ["GL201"]}', "", f"{IGNORED} (GL201)"),
    ("", "  # graphlint: ignore[GL201] -- scratch is tiny", f"{SUPPRESSED} (GL201)"),
    ("", "", CONFIRMED),
])
def test_a_rule_the_user_switched_off_is_not_a_static_miss(tmp_path, monkeypatch, config, source_comment, expected):
    _project(tmp_path, config)
    step = tmp_path / "eng" / "step.py"
    step.write_text(ENGINE.replace("device=x.device)\n", f"device=x.device){source_comment}\n"))
    monkeypatch.chdir(tmp_path)
    finding = _dynamic("eng/step.py", 6)
    xref = cross_reference([finding], ["eng/step.py:Engine.compute"])
    assert xref.of(finding) == expected
    assert not xref.static_only  # a switched-off rule is not listed as "static only" either


def test_a_line_nothing_flags_is_still_a_static_miss(tmp_path, monkeypatch):
    _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    finding = _dynamic("eng/step.py", 7)
    assert cross_reference([finding], ["eng/step.py:Engine.compute"]).of(finding) == DYNAMIC_ONLY


def test_an_escaped_kernel_matches_the_launch_the_static_half_flags(tmp_path, monkeypatch):
    """GL593 is seen where the compiled kernel is called, GL504 at `.launch(` in its @cute.jit
    function: the kernel's name joins them."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kern.py").write_text(
        "import cutlass.cute as cute\n\n\n"
        "@cute.kernel\n"
        "def scale_kernel(mX: cute.Tensor, mO: cute.Tensor):\n"
        "    pass\n\n\n"
        "@cute.jit\n"
        "def launch(mX: cute.Tensor, mO: cute.Tensor):\n"
        "    scale_kernel(mX, mO).launch(grid=[1, 1, 1], block=[32, 1, 1])\n\n\n"
        "def run(compiled, x, o):\n"
        "    compiled(x, o)\n"
    )
    escaped = _dynamic("kern.py", 15, "GL593", kernel="kernel_cutlass_scale_kernel_tensorptrf32_0")
    xref = cross_reference([escaped], [])
    assert xref.of(escaped) == CONFIRMED
    assert xref.rules_at(escaped) == ["GL504 at kern.py:11"]


@pytest.mark.slow
def test_the_functions_stage_runs_are_decode_entries_so_a_rebound_buffer_there_is_no_static_miss():
    """The H200 eager dsv4 inventory (2026-12-03) called GL292 at ``EagerDecoder.stage`` a static
    miss, yet ``graphlint check`` flags that line (GL204): the cross-reference's entries were the
    region functions only, and ``stage()`` is the host half of every step."""
    from graphlint.dynamic.run import Request, run_inventory

    (device,) = run_inventory(Request(target="fixtures/targets/rebound_buffers.py:make_target", cpu=True)).devices
    assert device.entries[-2:] == ["fixtures/targets/rebound_buffers.py:Wrapper.stage",
                                   "fixtures/targets/rebound_buffers.py:TinyEngine.stage"]
    stale = Finding("GL292", "stale-buffer-address", "allocation", "error", "fixtures/targets/rebound_buffers.py", 31,
                    0, "rebound", evidence=("replay:data_ptr",), source="dynamic", device="cuda:0", region="embed")
    target = "fixtures/targets/rebound_buffers.py:make_target"
    # the regions alone were a static miss once; the static half now takes a class's stage() as a host
    # step when its regions() declares Regions (the target protocol), so they are confirmed either way
    assert cross_reference([stale], device.entries[:-2], target=target).of(stale) == CONFIRMED
    xref = cross_reference([stale], device.entries, target=target)
    assert xref.of(stale) == CONFIRMED and xref.rules_at(stale) == ["GL204"]


def test_stage_functions_never_narrow_the_default_entries():
    from graphlint.dynamic.frames import staged, with_staged

    calls = []
    assert staged(calls.append, 3) == [] and calls == [3]  # a builtin: nothing of the project ran
    assert with_staged([], ["t.py:T.stage"]) == []
    assert with_staged(["t.py:T.embed"], ["t.py:T.stage", "t.py:T.embed"]) == ["t.py:T.embed", "t.py:T.stage"]
