"""Per-step code an external framework calls (branch ``frameworkhooks``, :mod:`graphlint.static.frameworkhooks`).

A vLLM plugin's patch of the model runner, its attention metadata builder, functions it stores onto
vLLM's logits layer and a Hugging Face stopping criterion run every step, called from outside the
checked paths: their listed methods are host entries (warnings). Set-up hooks, methods the table
does not list, a generic base that only parameterises a type, and a framework checked as the
project itself add nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from static_helpers import analyze, assert_marked, check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "frameworkhooks"


@pytest.mark.parametrize("name", ["plugin", "ownfw"])
def test_each_fixture_reports_what_its_markers_say(monkeypatch, tmp_path, name):
    assert_marked(check_fixture(monkeypatch, tmp_path, FIXTURES, name), FIXTURES, name)


def test_a_class_is_matched_by_its_package_and_name():
    from graphlint.static.frameworkhooks import hooked_methods

    assert "execute_model" in hooked_methods("vllm.v1.worker.gpu_model_runner.GPUModelRunner")
    assert "load_model" not in hooked_methods("vllm.v1.worker.gpu_model_runner.GPUModelRunner")
    assert not hooked_methods("myengine.GPUModelRunner")  # another package's class of the same name
    assert not hooked_methods(".worker.GPUModelRunner")  # a relative import is the project's own


PLUGIN = """
import torch
from {module} import {base}

class Hook({base}):
    def {method}(self, x):
        return x.sum().item()

HOOKS = [Hook()]
"""


@pytest.mark.parametrize(("module", "base", "method", "found"), [
    ("vllm.v1.attention.backends.utils", "AttentionMetadataBuilder", "build", True),  # moved between versions
    ("transformers.generation", "StoppingCriteria", "__call__", True),
    ("diffusers", "SchedulerMixin", "configure", False),  # not a per-step method of the table
    ("vllm.config", "VllmConfig", "build", False),  # not a class of the table
])
def test_which_framework_methods_are_per_step(module, base, method, found):
    findings = analyze({"hook.py": PLUGIN.format(module=module, base=base, method=method)})
    assert [(f.rule, f.severity) for f in findings] == ([("GL101", "warning")] if found else [])


def test_a_generic_base_subscripted_with_a_framework_class_is_no_patch():
    source = PLUGIN.format(module="vllm.v1.worker.gpu_model_runner", base="GPUModelRunner", method="execute_model")
    generic = source.replace("class Hook(GPUModelRunner)", "class Hook(Generic[GPUModelRunner])")
    assert not analyze({"hook.py": "from typing import Generic\n" + generic})
    assert analyze({"hook.py": source})


def test_a_subclass_nothing_uses_is_no_entry():
    source = PLUGIN.format(module="transformers", base="LogitsProcessor", method="__call__")
    assert not analyze({"hook.py": source.replace("HOOKS = [Hook()]", "")})
    sub = "class Used(Hook):\n    pass\n\nHOOKS = [Used()]\n"  # a used subclass runs the inherited hook
    assert analyze({"hook.py": source.replace("HOOKS = [Hook()]", sub)})


def test_configured_entries_replace_the_stubs():
    source = PLUGIN.format(module="transformers", base="LogitsProcessor", method="__call__")
    assert not analyze({"hook.py": source}, entries=("hook.py:other",))
