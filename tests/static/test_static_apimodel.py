"""A model the package's loop calls but never builds (branch ``apimodel``, :mod:`graphlint.static.openreceivers`).

An API library's per-token loop calls ``self.model.forward(tokens, state)`` on an unannotated
constructor parameter nothing in the package fills: the user passes one of the package's classes.
The call is followed into the classes that define the method with a signature the call binds, and
``graphlint entries`` says so; a generic name that many classes define resolves nothing."""

from __future__ import annotations

from pathlib import Path

from graphlint.report.decode_path import unresolved_listing
from graphlint.static.decode_path import DecodePath
from graphlint.static.decode_record import decode_path_record
from graphlint.static.link import link
from test_static_fixture import assert_marked, load
from static_helpers import analyze, builtin_rules, check_fixture, options, summarize

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "apimodel"


def test_a_model_passed_in_is_followed_into_the_package_class(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "rnnlib")
    assert_marked(result.findings, load(FIXTURES / "rnnlib"))


def test_a_generic_name_on_an_open_receiver_resolves_nothing(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "crowded")
    assert [f for f in result.findings if f.category != "meta"] == []


def test_entries_lists_the_call_resolved_by_class(monkeypatch):
    monkeypatch.chdir(ROOT)  # the listing reads the call's line from the file
    files = {p: data for p, data in load(FIXTURES / "rnnlib").items()}
    out: list[DecodePath] = []
    link(summarize(files), builtin_rules(), options(), decode_out=out)
    record = decode_path_record(out[0], lines="all")
    [row] = record["by_class"]
    assert (row["function"], row["call"], row["targets"]) == ("Pipeline.generate", "self.model.forward", ["RNN.forward"])
    assert row["line"] == 15
    assert not any(r["call"] == "self.model.forward" for r in record["unresolved"])
    assert any(line.startswith("Resolved by class (1)") for line in unresolved_listing(record))


def test_a_tensor_compared_with_none_is_no_truth_test():
    src = """
    import torch

    def step(model, x, state: torch.Tensor):
        if state == None:
            state = x
        if state != None:
            x = x + 1
        if x.sum() > 0:
            x = x + 1
        return model(x)

    def decode_step(model, x, state):
        return step(model, x, state)
    """
    findings = analyze({"loop.py": src})
    assert [(f.line, f.rule) for f in findings if f.rule == "GL105"] == [(9, "GL105")]


def test_a_cut_read_back_from_the_distribution_is_no_by_design_read(monkeypatch, tmp_path):
    """``cumsum(sorted).cpu().numpy()`` and ``float(sorted[...])`` go on computing the distribution
    (its cut is applied back to ``probs``): both are per-token syncs; the sampled id is the one read."""
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "sampler")
    assert_marked(result.findings, load(FIXTURES / "sampler"))


def test_a_column_of_a_compared_mask_indexes_by_mask(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "maskcol")
    assert_marked(result.findings, load(FIXTURES / "maskcol"))
    cols = sorted(f.col for f in result.findings if f.rule == "GL303")
    assert len(cols) == 2  # the store through the mask and the read through it; not ``seen[...] = 1``


def test_a_custom_kernels_output_buffer_is_no_constant_rebuilt():
    src = """
    import torch

    def gemm(a, b):
        c = torch.empty((a.shape[0], b.shape[-1]), dtype=a.dtype, device=a.device)
        torch.ops.myext.gemm_fp16(a, b, c)
        return c

    def decode_step(x, w):
        scale = torch.ones(4, device=x.device)
        return gemm(x, w) * scale
    """
    found = sorted((f.line, f.rule) for f in analyze({"step.py": src}))
    assert found == [(10, "GL201")]  # the constant rebuilt, not the kernel's output (5)
