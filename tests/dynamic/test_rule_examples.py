"""Every bad/good example of rules/runtime.yaml runs under the probe that reports it.

bad -> exactly that rule; good -> nothing. On the CPU only the tracer runs, and three tracer
examples need CUDA (a gpu_trace sync, a device->host copy, a pageable host->device copy);
they and the capture/replay/soak examples run in the GPU test at the bottom. The replay, soak
and capture-failure examples also run on the CPU against the graph emulator
(test_protocol_emulated.py).
"""

from __future__ import annotations

import pytest
import torch

from dynamic_helpers import snippet_factory
from graphlint.dynamic.results import merge_findings, runtime_rules
from graphlint.dynamic.target import regions_of
from graphlint.dynamic.tracer import run_tracer

RULES = runtime_rules()
NEEDS_CUDA = {"GL191": "gpu_trace sync callbacks", "GL192": "a device->host copy needs a device",
              "GL491": "a host->device copy needs a device"}
CASES = [(code, kind, i, example) for code, rule in RULES.items()
         for kind in ("bad", "good") for i, example in enumerate(getattr(rule, kind))]
TRACER_CASES = [c for c in CASES if RULES[c[0]].probes == ("tracer",) or "tracer" in RULES[c[0]].probes]
GRAPH_CASES = [c for c in CASES if c not in TRACER_CASES]


def _ids(cases):
    return [f"{code}-{kind}{i}" for code, kind, i, _ in cases]


def trace_example(code, kind, example, tmp_path, device):
    factory, _ = snippet_factory(example, tmp_path, f"{code}_{kind}")
    target = factory([device])
    regions = regions_of(target)
    target.stage(0)
    for region in regions:
        region.fn()
    findings, _, _ = run_tracer(target, regions, RULES, str(device), cuda=device.type == "cuda")
    return {f.rule for f in merge_findings(findings)}  # as every report does: sync-debug folds into named ops


def graph_example(code, kind, example, tmp_path, device):
    from graphlint.dynamic.replay import run_graph_phase

    factory, _ = snippet_factory(example, tmp_path, f"{code}_{kind}")
    soak = 64 if "soak" in RULES[code].probes else 0
    result = run_graph_phase(factory, [device], {}, RULES, str(device), soak_steps=soak)
    return {f.rule for f in result.findings}


def test_every_runtime_rule_has_examples_and_probes():
    for code, rule in RULES.items():
        assert rule.dynamic and rule.probes and rule.bad and rule.good, code
        assert "90" <= code[3:] <= "99", code


@pytest.mark.parametrize(("code", "kind", "i", "example"), TRACER_CASES, ids=_ids(TRACER_CASES))
def test_tracer_example_on_cpu(code, kind, i, example, tmp_path):
    if code in NEEDS_CUDA and kind == "bad":
        pytest.skip(f"{code} example needs CUDA ({NEEDS_CUDA[code]}); runs in test_examples_on_gpu in this file")
    seen = trace_example(code, kind, example, tmp_path, torch.device("cpu"))
    assert seen == ({code} if kind == "bad" else set())


def wrong_examples_on_gpu(tmp_dir: str) -> list[str]:
    """Every example on cuda:0 under its probe; the ones that did not give exactly their rule."""
    from pathlib import Path

    device, wrong = torch.device("cuda", 0), []
    for n, (code, kind, i, example) in enumerate(CASES):
        run = trace_example if (code, kind, i, example) in TRACER_CASES else graph_example
        case_dir = Path(tmp_dir) / str(n)
        case_dir.mkdir()
        seen = run(code, kind, example, case_dir, device)
        if seen != ({code} if kind == "bad" else set()):
            wrong.append(f"{code} {kind}[{i}]: saw {sorted(seen)}")
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
