"""dsv4 under its own linter: only the eager reference decoder has findings.

The graph decoders' captured bodies (``*_step``) are decode entries for ``graphlint check``; if
a hazard creeps into anything they reach, its chain starts there and this test fails.
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_only_the_eager_decoder_has_findings(tmp_path):
    report = tmp_path / "findings.json"
    result = subprocess.run(
        [sys.executable, "-m", "graphlint", "check", "dsv4", "--format", "json", "--output", str(report),
         "--no-cache", "--no-progress", "--jobs", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode in (0, 1), result.stderr
    data = json.loads(report.read_text())
    findings = data["findings"] if isinstance(data, dict) else data
    # kernels/ has its own owner and tests; timed_generate is the per-token loop that drives the eager
    # decoder (the chain of its findings starts at that loop: it is what makes EagerDecoder.step hot)
    allowed = ("dsv4/engine.py:EagerDecoder", "dsv4/engine.py:timed_generate", "dsv4/kernels/")
    # ab_graph's attention region is deliberately eager (Region(..., capturable=False)) and runs the
    # eager decoder's Attention.attend_eager: the same hazards, reached through that region's closure
    eager_region = "dsv4/ab_graph.py:ABGraphDecoder._attention_fn.attention"
    outside_eager = [f"{f['path']}:{f['line']} {f['rule']} via {f['chain'][0] if f['chain'] else '?'}"
                     for f in findings if not f["chain"] or not (f["chain"][0].startswith(allowed)
                                                                 or eager_region in f["chain"][:2])]
    assert outside_eager == []
    names = {f["name"] for f in findings}
    assert {"host-sync-tolist", "data-dependent-bincount"} <= names  # the reference's bincount(...).tolist()
