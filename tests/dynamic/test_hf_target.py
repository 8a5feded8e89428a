"""graphlint.targets.hf on the CPU: a tiny random Llama under the tracer and the emulated protocol.

What the CPU can prove: the target follows the protocol (deterministic instances, teacher forcing,
the static cache agrees with the dynamic one token for token and keeps its buffers' addresses), the
tracer attributes what it sees to transformers' own lines, and the capture/replay bookkeeping
tells the two caches apart under the graph emulator. What CUDA does is the H200 run in reports/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

import graph_emulator
from graphlint.dynamic.graph_probe import run_graph_phase
from graphlint.dynamic.target import TargetError, check_options, load_factory
from graphlint.dynamic.tracer import trace_phase
from graphlint.rules import runtime_rules

transformers = pytest.importorskip("transformers", reason="graphlint.targets.hf needs the [hf] extra")

from graphlint.targets import hf  # noqa: E402  (after the importorskip)

pytestmark = pytest.mark.slow  # every test here imports transformers or builds a model (tests/conftest.py)

RULES = runtime_rules()
CPU = [torch.device("cpu")]
SPEC = "graphlint.targets.hf:make_target"


def _steps(target, steps):
    region = target.regions()[0]
    out = []
    for step in steps:
        target.stage(step)
        region.fn()
        out.append(target.output().clone())
    return out


def _in_thread(fn, *args):
    """As the CLI and the fixture run a phase: without this test's frames on the stack (project
    frames, which would win the attribution of ops that run only inside transformers)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn, *args).result()


def test_the_spec_loads_and_refuses_bad_options_before_building_anything():
    factory = load_factory(SPEC)
    check_options(factory, {"model": "tiny-llama", "cache": "dynamic", "max_len": 64})
    for options, says in [({"cache": "paged"}, "cache='paged'"), ({"dtype": "float8"}, "dtype='float8'"),
                          ({"max_len": 1}, "max_len=1"), ({"model": "no/such/dir"}, "graphlint never downloads"),
                          ({"max_len": 4096}, "max_position_embeddings (1024)")]:
        with pytest.raises(TargetError, match=says.replace("(", r"\(").replace(")", r"\)")):
            factory(CPU, **options)
    with pytest.raises(TargetError, match="one device"):
        factory([torch.device("cpu"), torch.device("cpu")])


def test_static_and_dynamic_caches_agree_token_for_token_and_restart_at_max_len():
    static = hf.make_target(CPU, cache="static", max_len=6)
    dynamic = hf.make_target(CPU, cache="dynamic", max_len=6)
    for step, (a, b) in enumerate(zip(_steps(static, range(14)), _steps(dynamic, range(14)))):
        assert a.shape == (1, 1, static.vocab)
        assert torch.allclose(a, b, atol=1e-5, rtol=1e-4), step
    # past max_len the context restarts: step 12 is token(12) at position 0 of an empty cache again
    fresh = hf.make_target(CPU, cache="static", max_len=6)
    fresh.stage(0)
    fresh.input_ids.fill_(hf.teacher_token(12, fresh.vocab))
    fresh.regions()[0].fn()
    again = _steps(hf.make_target(CPU, cache="static", max_len=6), range(13))[12]
    assert torch.allclose(fresh.output(), again, atol=1e-6)


def test_static_cache_keeps_its_buffers_and_the_dynamic_cache_does_not():
    """The difference that decides capture: a graph replays into the addresses it recorded."""
    def addresses(target):
        layer = target.cache.layers[0]
        return layer.keys.data_ptr(), tuple(layer.keys.shape)

    static, dynamic = hf.make_target(CPU, cache="static", max_len=16), hf.make_target(CPU, cache="dynamic")
    seen = {"static": [], "dynamic": []}
    for step in range(4):
        for name, target in (("static", static), ("dynamic", dynamic)):
            _steps(target, [step])
            seen[name].append(addresses(target))
    assert len(set(seen["static"])) == 1 and seen["static"][0][1][2] == 16
    assert len({ptr for ptr, _ in seen["dynamic"]}) == 4
    assert [shape[2] for _, shape in seen["dynamic"]] == [1, 2, 3, 4]


def test_two_instances_are_identical_and_the_seed_changes_the_weights(tmp_path):
    config = tmp_path / "tiny.json"
    config.write_text(json.dumps({**hf.PRESETS["tiny-llama"], "num_hidden_layers": 1, "hidden_size": 32}))
    a, b = (hf.make_target(CPU, model=str(config)) for _ in range(2))
    assert torch.equal(_steps(a, [0, 1])[1], _steps(b, [0, 1])[1])
    assert a.lm.config.num_hidden_layers == 1 and "random weights" in a.source
    other = hf.make_target(CPU, model=str(config), seed=1)
    assert not torch.equal(_steps(other, [0])[0], _steps(hf.make_target(CPU, model=str(config)), [0])[0])


def test_a_saved_model_directory_loads_its_weights(tmp_path):
    source = hf.make_target(CPU, seed=3)
    source.lm.save_pretrained(tmp_path / "saved")
    loaded = hf.make_target(CPU, model=str(tmp_path / "saved"))  # seed 0: equal only if the weights were loaded
    assert "weights loaded" in loaded.source
    # Close, not bit-equal: transformers 5.25 rebuilds a loaded model's buffers in another order of
    # operations (a difference of 1 ulp); random weights of another seed differ by about 0.7.
    torch.testing.assert_close(_steps(loaded, [0])[0], _steps(source, [0])[0], rtol=0, atol=1e-5)


def test_the_tracer_attributes_findings_to_transformers_lines():
    """Static cache: per-step ``arange``/``scalar_tensor`` allocations (GL290 warnings, capturable),
    each at the transformers line that makes it; no error in the capturable region."""
    result = _in_thread(trace_phase, hf.make_target, CPU, {"cache": "static"}, RULES, "cpu")
    assert result.regions == ["decode"]
    assert result.entries and result.entries[0].endswith("modeling_llama.py:LlamaForCausalLM.forward")
    assert result.findings and {f.rule for f in result.findings} == {"GL290"}
    assert all("transformers" + os.sep in f.path or "transformers/" in f.path for f in result.findings)
    assert not [f for f in result.findings if f.severity == "error"]


def test_the_dynamic_cache_grows_and_the_tracer_says_where():
    """The DynamicCache's per-step ``torch.cat`` is no factory, sync or Python scalar; what gives it
    away is the kept tensor changing shape (GL394), at transformers' ``cat`` lines, one per K and V.
    The static cache writes in place: nothing."""
    import inspect

    dynamic = _in_thread(trace_phase, hf.make_target, CPU, {"cache": "dynamic"}, RULES, "cpu")
    grows = [f for f in dynamic.findings if f.rule == "GL394"]
    source, first = inspect.getsourcelines(transformers.cache_utils.DynamicLayer.update)
    cats = {first + i for i, text in enumerate(source) if "torch.cat(" in text}
    assert grows and {f.line for f in grows} == cats and all(f.path.endswith("cache_utils.py") for f in grows)
    assert [f.rule for f in dynamic.findings if f.severity == "error"] == ["GL394"] * len(cats)
    static = _in_thread(trace_phase, hf.make_target, CPU, {"cache": "static"}, RULES, "cpu")
    assert not [f for f in static.findings if f.rule == "GL394"]


@pytest.mark.parametrize("cache, mismatch", [("static", False), ("dynamic", True)])
def test_emulated_capture_and_replay_tell_the_caches_apart(monkeypatch, cache, mismatch):
    graph_emulator.install(monkeypatch)
    result = run_graph_phase(hf.make_target, CPU, {"cache": cache, "max_len": 32}, RULES, "cpu")
    assert result.capture == {"decode": {"status": "captured", "detail": ""}}
    assert ({f.rule for f in result.findings} == {"GL391"}) is mismatch, result.findings
    detail = result.outcome("replay").detail
    assert ("first mismatch at step 2" in detail) is mismatch, detail


def test_inventory_of_a_json_config_from_the_command_line(tmp_path):
    config = tmp_path / "llama.json"
    config.write_text(json.dumps(hf.PRESETS["tiny-llama"]))
    report = tmp_path / "inventory.md"
    run = subprocess.run([sys.executable, "-m", "graphlint", "inventory", "--target", SPEC, "--option",
                          f"model={config}", "--no-soak", "--cpu", "-o", str(report)],
                         capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    text = report.read_text()
    assert "GL290" in text and "masking_utils.py" in text and "Capture skipped" in text
    refused = subprocess.run([sys.executable, "-m", "graphlint", "inventory", "--target", SPEC, "--option",
                              "cache=paged", "--cpu"], capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.strip().splitlines() == [
        "graphlint: error: cache='paged': expected one of static, dynamic, model, auto"]


def test_without_transformers_the_target_names_the_extra(tmp_path):
    code = ("import sys\n"
            "class _No:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] == 'transformers':\n"
            "            raise ModuleNotFoundError(\"No module named 'transformers'\", name='transformers')\n"
            "sys.meta_path.insert(0, _No())\n"
            "from graphlint.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    run = subprocess.run([sys.executable, "-c", code, "inventory", "--target", SPEC, "--cpu"],
                         capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert run.returncode == 2
    assert "needs transformers: pip install 'cuda-graphlint[hf]'" in run.stderr


def test_installed_libraries_in_a_venv_are_library_frames_not_the_standard_library():
    """A venv's (and pyenv's) platstdlib directory holds site-packages: transformers' frames must
    still be attributable, or every finding inside a Hugging Face model is silently dropped."""
    import sysconfig

    from graphlint.dynamic.frames import is_user_file

    assert is_user_file(transformers.__file__)
    assert is_user_file(os.path.join(sysconfig.get_paths()["platstdlib"], "site-packages", "pkg", "m.py"))
    assert not is_user_file(os.__file__) and not is_user_file(torch.__file__)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU path: the factory runs in the test process")
def test_the_fixture_blames_transformers_not_the_test_that_called_it():
    from graphlint.dynamic.pytest_plugin import GraphCapture

    check = GraphCapture()(hf.make_target, cache="static", max_len=32)
    paths = {f.path for f in check.inventory.findings()}
    assert paths and all("transformers" in p for p in paths), paths
