"""``python -m dsv4 generate`` and ``bench/decode_bench.py`` run end to end on the CPU."""

import importlib.util
import json
import os
from pathlib import Path

import pytest
import torch

from dsv4.__main__ import main

BENCH = Path(__file__).resolve().parents[2] / "bench" / "decode_bench.py"


def test_generate_prints_tokens_and_seconds_per_token(capsys):
    assert main(["generate", "--preset", "tiny", "--steps", "5", "--decoder", "full-graph", "--device", "cpu"]) == 0
    tokens, summary = capsys.readouterr().out.strip().splitlines()
    assert len(tokens.split()) == 5 and all(t.isdigit() for t in tokens.split())
    assert summary.startswith("full-graph preset=tiny devices=cpu steps=5 s/token=")


def test_generate_of_one_token_times_no_step(capsys):
    assert main(["generate", "--preset", "tiny", "--steps", "1", "--device", "cpu"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[1].endswith("s/token=n/a (the one token came from "
                                                                   "the prefill; no step timed)")


def test_generate_refuses_a_run_longer_than_the_context():
    with pytest.raises(SystemExit) as exit_info:
        main(["generate", "--preset", "tiny", "--steps", "500", "--device", "cpu"])
    assert exit_info.value.code == 2


@pytest.mark.slow
def test_bench_reports_every_decoder_against_eager(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("decode_bench", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "bench.json"
    assert bench.main(["--preset", "tiny", "--steps", "4", "--repeats", "1", "--device", "cpu", "--json", str(out)]) == 0
    (decoders,) = json.loads(out.read_text())["kernels"].values()
    assert set(decoders) == {"eager", "ab-graph", "full-graph"}
    assert decoders["eager"]["speedup_vs_eager"] == 1.0
    assert all(d["tokens_agree"] == 4 and d["max_logit_diff"] < 1e-4 for d in decoders.values())
    assert "floor=" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without CUDA")
def test_bench_both_kernel_backends_without_cuda_times_the_fallbacks_once(tmp_path, capsys, monkeypatch):
    spec = importlib.util.spec_from_file_location("decode_bench", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    monkeypatch.delenv("DSV4_KERNELS", raising=False)
    out = tmp_path / "bench.json"
    args = ["--preset", "tiny", "--steps", "3", "--repeats", "1", "--device", "cpu", "--kernels", "both"]
    assert bench.main([*args, "--json", str(out)]) == 0
    assert list(json.loads(out.read_text())["kernels"]) == ["torch"]
    captured = capsys.readouterr()
    assert "kernels=torch" in captured.out and "timed once" in captured.err
    assert "DSV4_KERNELS" not in os.environ  # the pass restored the environment


@pytest.mark.parametrize("args", [
    ["--preset", "tiny", "--device", "cpu"],  # the default --steps 128 overruns tiny's 128 positions
    ["--preset", "flash", "--device", "cpu"],  # the recorded public sizes, never built
    ["--preset", "tiny", "--steps", "1", "--device", "cpu"],  # no decode step would be timed
])
def test_bench_refuses_runs_it_cannot_do_with_a_usage_error(args):
    spec = importlib.util.spec_from_file_location("decode_bench", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    with pytest.raises(SystemExit) as exit_info:
        bench.main([*args, "--repeats", "1"])
    assert exit_info.value.code == 2


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without CUDA")
def test_generate_on_cuda_without_cuda_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["generate", "--device", "cuda", "--steps", "2"])
    assert exit_info.value.code == 2 and "no CUDA device" in capsys.readouterr().err


def test_capture_isolation_bench_compares_exactly_and_needs_cuda(capsys):
    spec = importlib.util.spec_from_file_location("capture_isolation", BENCH.parent / "capture_isolation.py")
    iso = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(iso)
    from dsv4.config import get_config
    from dsv4.full_graph import FullGraphDecoder
    from dsv4.model import DSV4Model

    model = DSV4Model(get_config("tiny"), [torch.device("cpu")], seed=0)  # graph decoders run eagerly
    worst, same = iso.compare(model, FullGraphDecoder, 4)
    assert worst < 1e-4 and same == 4
    if not torch.cuda.is_available():
        assert iso.main([]) == 2 and "needs a CUDA device" in capsys.readouterr().err
