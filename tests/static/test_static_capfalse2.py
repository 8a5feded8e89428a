"""Branch ``capfalse2``: what runs only under a measurement switch off by default is at most a
warning (``fixtures/static/optin``, :mod:`graphlint.static.optin`). Each target test fails on main
``f85a874``; each control shows the error back where the switch is on by default."""

from __future__ import annotations

from static_helpers import analyze
from test_static_capfalse import _files, _found


def _wrapped() -> dict[str, str]:
    """``fixtures/static/wrapped``'s model with ``fixtures/static/replaced``'s loader and server."""
    return {**_files("replaced"), **_files("wrapped")}


def test_syncs_under_an_off_by_default_switch_are_warnings():
    """``Engine.generate``: ``self.timing`` (an ``__init__`` parameter defaulting to False),
    ``log_stats=None`` and an environment variable read without a default guard the syncs;
    ``AlwaysTimed`` defaults its ``timing`` to True: its sync stays an error."""
    files = {"engine.py": _files("optin")["engine.py"]}
    assert _found(files, "engine.py") == [(28, "GL106", "warning"), (30, "GL101", "warning"),
                                          (32, "GL106", "warning"), (46, "GL106", "error")]


def test_a_scripts_store_true_option_is_off_by_default():
    """``--benchmark`` (``action="store_true"``) bound to a module name guards the script loop's sync."""
    findings = [f for f in analyze(_files("optin")) if f.path == "bench_loop.py" and f.line == 20]
    assert [f.severity for f in findings] == ["warning"]
    assert "`benchmark`, a measurement switch off by default" in findings[0].message


def test_a_store_false_option_is_on_by_default():
    files = _files("optin")
    files["bench_loop.py"] = files["bench_loop.py"].replace('"store_true"', '"store_false"')
    assert (20, "GL106", "error") in _found(files, "bench_loop.py")


def test_a_switch_named_for_something_else_is_no_measurement():
    files = {"engine.py": _files("optin")["engine.py"].replace("self.timing", "self.fused")}
    assert (28, "GL106", "error") in _found(files, "engine.py")


def test_a_wrapper_named_after_a_module_may_replace_it():
    """``fixtures/static/wrapped``: ``KFusedRmsNorm`` wraps ``RmsNorm`` (``orig=``) without
    subclassing it, is built only by the loader's computed class, and its ``forward`` takes every
    parameter of ``RmsNorm.forward``: the original's read-back is a warning; ``Mixer``'s stays."""
    assert _found(_wrapped(), "layers.py") == [(15, "GL101", "warning"), (25, "GL101", "error"),
                                                      (26, "GL311", "error")]


def test_a_wrapper_named_otherwise_replaces_nothing():
    files = _wrapped()
    files["layers.py"] = files["layers.py"].replace("KFusedRmsNorm", "KFusedScaler")
    assert (15, "GL101", "error") in _found(files, "layers.py")


def test_a_wrapper_without_the_modules_parameters_replaces_nothing():
    files = _wrapped()
    files["layers.py"] = files["layers.py"].replace("def forward(self, h, eps=1e-6, gain=None, residual=None):",
                                                    "def forward(self, h, residual=None):")
    assert (15, "GL101", "error") in _found(files, "layers.py")


def test_a_call_with_keywords_the_function_cannot_take_never_runs_it():
    """``fixtures/static/arity``: the captured ``paged_step`` calls ``layer.attn(h, cache,
    wrapper=..., lengths=...)``; the field may hold ``PaddedAttention``, whose ``forward`` takes
    neither keyword: its read-back is not captured code. ``Norm.forward`` takes ``lengths``."""
    assert _found(_files("arity"), "layers.py") == [(26, "GL101", "error")]


def test_a_function_taking_any_keyword_may_run():
    files = _files("arity")
    files["layers.py"] = files["layers.py"].replace("def forward(self, h, mask=None, positions=None):",
                                                    "def forward(self, h, mask=None, positions=None, **extra):")
    assert (15, "GL101", "error") in _found(files, "layers.py")


def test_selecting_again_the_device_selected_before_the_capture_is_no_switch():
    """``fixtures/static/reselect``: ``Runner.capture`` calls ``set_device(device)`` before the
    capture and again inside it, ``device`` not rebound in between; ``capture_elsewhere`` switches
    to ``other`` inside its capture."""
    assert _found(_files("reselect"), "runner.py") == [(26, "GL502", "error")]


def test_a_device_rebound_after_its_selection_is_another_device():
    files = _files("reselect")
    files["runner.py"] = files["runner.py"].replace("            self.out = model(x)\n            torch.cuda.set_device(device)\n",
                                                    "            self.out = model(x)\n            device = x.device\n"
                                                    "            torch.cuda.set_device(device)\n")
    assert (19, "GL502", "error") in _found(files, "runner.py")


def test_a_module_with_its_own_call_may_take_any_keyword():
    """A class with a project ``__call__`` runs it, not ``forward``, when called: the keywords
    are that method's business."""
    files = _files("arity")
    files["layers.py"] = files["layers.py"].replace(
        "class PaddedAttention(nn.Module):\n",
        "class PaddedAttention(nn.Module):\n    def __call__(self, h, *args, **kwargs):\n        return self.forward(h)\n\n")
    assert (18, "GL101", "error") in _found(files, "layers.py")


def test_a_logarithm_is_no_logging_switch():
    files = {"engine.py": _files("optin")["engine.py"].replace("log_stats", "log_probs")}
    assert (30, "GL101", "error") in _found(files, "engine.py")
