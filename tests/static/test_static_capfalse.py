"""False captured/per-token code the call graph and the value facts made (branch ``capfalse``):
``fixtures/static/selfdispatch`` (``self.m()`` in ``C.f`` runs no override of a class that
overrides ``f``), ``fixtures/static/exitscope`` (one function's early exit no longer unguards
another's rebinding) and ``fixtures/static/boolcall`` (a ``__call__`` answering ``True`` /
``False`` is no tensor). Each test fails before the change; each control shows the finding
comes back when the code really runs."""

from __future__ import annotations

from pathlib import Path

from static_helpers import analyze

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "static"


def _files(name: str) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((FIXTURES / name).glob("*.py"))}


def _found(files: dict[str, str], path: str) -> list[tuple[int, str, str]]:
    return sorted((f.line, f.rule, f.severity) for f in analyze(files) if f.path == path)


def test_an_override_of_the_callers_method_is_not_run_from_it():
    """``PackedBlock`` overrides ``forward``: ``Block.forward``'s ``self.route()`` never runs its
    ``route``; ``ShimBlock``'s ``forward`` calls ``super().forward``, so its ``route`` does."""
    assert _found(_files("selfdispatch"), "model.py") == [(38, "GL101", "error")]


def test_an_override_that_inherits_the_callers_method_is_run_from_it():
    files = _files("selfdispatch")
    files["model.py"] = files["model.py"].replace(
        "    def forward(self, h):\n        return self.proj(h) * 0.5\n", "")
    assert (27, "GL101", "error") in _found(files, "model.py")


def test_another_functions_early_exit_keeps_a_rebinding_conditional():
    """``Fusion.forward`` exits early on ``feats is None``; the wrapper rebinds ``feats`` under
    ``feats is not None`` (the same condition). The capture passes no features: the fusion's
    read-back is not captured code."""
    assert _found(_files("exitscope"), "model.py") == []


def test_an_unconditional_rebinding_reaches_the_fusion_layer():
    files = _files("exitscope")
    files["model.py"] = files["model.py"].replace(
        "        if feats is not None:\n            rows = torch.arange(feats.shape[0], device=feats.device)\n"
        "            feats = (feats, rows)\n",
        "        rows = torch.arange(h.shape[0], device=h.device)\n        feats = (h, rows)\n")
    assert (18, "GL101", "error") in _found(files, "model.py")


def test_a_callable_object_answering_true_or_false_is_no_tensor():
    assert _found(_files("boolcall"), "stops.py") == []


def test_a_callable_object_answering_something_unknown_is_presumed_a_tensor():
    files = _files("boolcall")
    files["stops.py"] = files["stops.py"].replace("            return True\n        return False\n",
                                                  "            return self.pattern\n        return self.pattern\n")
    assert (27, "GL105", "error") in _found(files, "stops.py")


def test_a_refresh_that_records_its_own_bound_is_not_per_step():
    """``fixtures/static/refresh``: ``Tables.lookup`` rebuilds its tables only when the length
    outgrows them (it records the length); ``Lazy`` does it through a method under ``is None or
    n > self.cached_len``; ``Leaky.lookup`` records nothing: every call rebuilds."""
    assert [line for line, rule, _ in _found(_files("refresh"), "tables.py") if rule == "GL201"] == [31]


def test_a_refresh_that_records_another_value_stays_per_step():
    files = _files("refresh")
    files["tables.py"] = files["tables.py"].replace("            self.cached_len = length\n",
                                                    "            self.cached_len = length - 1\n")
    assert [line for line, rule, _ in _found(files, "tables.py") if rule == "GL201"] == [23, 31]


def test_a_lazy_guard_on_two_attributes_is_not_disarmed_by_one():
    files = _files("refresh")
    files["tables.py"] = files["tables.py"].replace("if self.cached_len is None or length > self.cached_len:",
                                                    "if self.table is None or length > self.cached_len:")
    assert [line for line, rule, _ in _found(files, "tables.py") if rule == "GL201"] == [31, 48]


def test_a_module_a_load_time_rule_may_replace_is_at_most_a_warning():
    """``fixtures/static/replaced``: ``loader.swap`` builds computed classes with the original
    block (``name=, orig=, rules=``); ``FusedMixer``, never built by name, takes those keywords and
    overrides ``Mixer.forward``: the original's hazards are warnings, ``Norm``'s stays an error."""
    assert _found(_files("replaced"), "layers.py") == [(14, "GL101", "error"), (24, "GL101", "warning"),
                                                       (25, "GL311", "warning")]


def test_without_a_computed_class_that_fits_the_original_keeps_its_errors():
    files = _files("replaced")
    files["loader.py"] = files["loader.py"].replace("cls(name=name, orig=child, rules=rules)", "cls(name, child)")
    assert _found(files, "layers.py") == [(14, "GL101", "error"), (24, "GL101", "error"), (25, "GL311", "error")]


def test_a_replacement_the_code_builds_by_name_is_no_load_time_rule():
    files = _files("replaced")
    files["serve.py"] = files["serve.py"].replace("from layers import Net", "from layers import FusedMixer, Net")
    files["serve.py"] += "\n\ndef fused(width, block):\n    return FusedMixer(name='mix', orig=block, rules={})\n"
    assert _found(files, "layers.py") == [(14, "GL101", "error"), (24, "GL101", "error"), (25, "GL311", "error")]
