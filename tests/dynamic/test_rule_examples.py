"""Every bad/good example of rules/runtime.yaml runs under the probe that reports it.

bad -> exactly that rule, on the line its ``# ^`` marker pins where the example has one (runtime
findings carry a line, not a column; every tracer rule is marked); good -> nothing. On the CPU
only the tracer runs, and three tracer examples need CUDA (a gpu_trace sync, a device->host
copy, a pageable host->device copy); they and the capture/replay/soak examples run in the GPU
test at the bottom. The replay, soak and capture-failure examples also run on the CPU against
the graph emulator (test_protocol_emulated.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from dynamic_helpers import snippet_factory
from graphlint.dynamic.combine import merge_findings
from graphlint.dynamic.target import regions_of
from graphlint.dynamic.tracer import run_tracer
from graphlint.rules import runtime_rules
from graphlint.rules import mark_example, marked_positions

RULES = runtime_rules()
NEEDS_CUDA = {"GL191": "gpu_trace sync callbacks", "GL192": "a device->host copy needs a device",
              "GL491": "a host->device copy needs a device"}
CASES = [(code, kind, i, example) for code, rule in RULES.items()
         for kind in ("bad", "good") for i, example in enumerate(getattr(rule, kind))]
TRACER_CASES = [c for c in CASES if RULES[c[0]].probes == ("tracer",) or "tracer" in RULES[c[0]].probes]
GRAPH_CASES = [c for c in CASES if c not in TRACER_CASES]


def _ids(cases):
    return [f"{code}-{kind}{i}" for code, kind, i, _ in cases]


def snippet_lines(findings, code, snippet: Path) -> set[int]:
    """The example's lines ``code`` is reported on (the snippet file has a ``def`` line on top)."""
    return {f.line - 1 for f in findings if f.rule == code and Path(f.path).resolve() == snippet.resolve()}


def misplaced(code, example, lines: set[int]) -> str:
    """Why the reported lines are not the marked ones ('' when they are, or nothing is marked)."""
    marked = {line for line, _ in marked_positions(example)}
    if not marked or lines == marked:
        return ""
    return (f"{code} reported on example line(s) {sorted(lines)}, marked {sorted(marked)}; markers belong here:\n"
            + mark_example(example, [(line, 0) for line in lines], code))


def trace_example(code, kind, example, tmp_path, device):
    """(rules seen, the example lines ``code`` was reported on)."""
    factory, snippet = snippet_factory(example, tmp_path, f"{code}_{kind}")
    target = factory([device])
    regions = regions_of(target)
    target.stage(0)
    for region in regions:
        region.fn()
    findings, _, _ = run_tracer(target, regions, RULES, str(device), cuda=device.type == "cuda")
    findings = merge_findings(findings)  # as every report does: sync-debug folds into named ops
    return {f.rule for f in findings}, snippet_lines(findings, code, snippet)


def graph_example(code, kind, example, tmp_path, device):
    from graphlint.dynamic.graph_probe import run_graph_phase

    factory, snippet = snippet_factory(example, tmp_path, f"{code}_{kind}")
    soak = 64 if "soak" in RULES[code].probes else 0
    result = run_graph_phase(factory, [device], {}, RULES, str(device), soak_steps=soak)
    return {f.rule for f in result.findings}, snippet_lines(result.findings, code, snippet)


def test_every_runtime_rule_has_examples_and_probes():
    for code, rule in RULES.items():
        assert rule.dynamic and rule.probes and rule.bad and rule.good, code
        assert "90" <= code[3:] <= "99", code
        if "tracer" in rule.probes:  # the tracer always blames a line: pin it
            assert all(marked_positions(bad) for bad in rule.bad), f"{code}: mark the line (docs/rule-packs.md)"


@pytest.mark.parametrize(("code", "kind", "i", "example"), TRACER_CASES, ids=_ids(TRACER_CASES))
def test_tracer_example_on_cpu(code, kind, i, example, tmp_path):
    if code in NEEDS_CUDA and kind == "bad":
        pytest.skip(f"{code} example needs CUDA ({NEEDS_CUDA[code]}); runs in test_examples_on_gpu in this file")
    seen, lines = trace_example(code, kind, example, tmp_path, torch.device("cpu"))
    assert seen == ({code} if kind == "bad" else set())
    assert not misplaced(code, example, lines), misplaced(code, example, lines)


def wrong_examples_on_gpu(tmp_dir: str) -> list[str]:
    """Every example on cuda:0 under its probe; the ones that did not give exactly their rule."""
    from pathlib import Path

    device, wrong = torch.device("cuda", 0), []
    for n, (code, kind, i, example) in enumerate(CASES):
        run = trace_example if (code, kind, i, example) in TRACER_CASES else graph_example
        case_dir = Path(tmp_dir) / str(n)
        case_dir.mkdir()
        seen, lines = run(code, kind, example, case_dir, device)
        if seen != ({code} if kind == "bad" else set()):
            wrong.append(f"{code} {kind}[{i}]: saw {sorted(seen)}")
        elif misplaced(code, example, lines):
            wrong.append(f"{code} {kind}[{i}]: {misplaced(code, example, lines)}")
    return wrong


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="capture/replay/soak examples need a CUDA device")
def test_examples_on_gpu(tmp_path):
    """In a fresh process: the tracer switches torch's gpu_trace on for good, and it must be off
    while capturing, so running it here would taint every later capture in this pytest session."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    here = Path(__file__).resolve().parent
    code = (f"import json, sys; sys.path.insert(0, {str(here)!r}); import test_rule_examples as t; "
            f"print(json.dumps(t.wrong_examples_on_gpu({str(tmp_path)!r})))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=here.parent.parent, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    wrong = json.loads(run.stdout.strip().splitlines()[-1])
    assert not wrong, "\n".join(wrong)
