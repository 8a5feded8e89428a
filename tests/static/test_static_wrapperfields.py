"""A generic wrapper's field, per construction (:mod:`graphlint.static.wrapperfields`): ``Stage.forward``'s
``self.inner(...)`` runs the layers the *hot* models' stages were built from, not every model's.

``fixtures/static/wrapperfields``: two models wrap their layers in ``Stage(builder=...)``; the decode
loop passes ``positions=``, which only ``DenseModel.forward`` takes (:mod:`graphlint.static.arity`),
so ``MaskedLayer``'s read-backs are on no decode path. The target test fails on main ``aa9b3152``
(three false errors in ``stages/masked.py``); each control keeps them where a link is not known."""

from __future__ import annotations

from pathlib import Path

from static_helpers import analyze, assert_marked, check_fixture

ROOT = Path(__file__).resolve().parents[2]
WRAPPERS = ROOT / "fixtures" / "static" / "wrapperfields"
MASKED = [("stages/masked.py", 18, "GL302"), ("stages/masked.py", 19, "GL101"), ("stages/masked.py", 20, "GL311")]
CHECKED = ("stages/mlp.py", 12, "GL104")  # ``checked_gelu``: the masked layers' activation


def _files() -> dict[str, str]:
    return {p.relative_to(WRAPPERS).as_posix(): p.read_text() for p in sorted(WRAPPERS.rglob("*.py"))}


def _all(files: dict[str, str]) -> list[tuple[str, int, str]]:
    return sorted((f.path, f.line, f.rule) for f in analyze(files))


def _masked(files: dict[str, str]) -> list[tuple[str, int, str]]:
    return [found for found in _all(files) if found[0] == "stages/masked.py"]


def test_only_the_hot_models_stages_run_their_layers(monkeypatch, tmp_path):
    """The dense model's stages (``DenseLayer``, ``Head``) are on the decode path; the masked model's
    ``MaskedLayer`` is not: its stages are built only in ``MaskedModel.__init__``."""
    result = check_fixture(monkeypatch, tmp_path, WRAPPERS, ".")
    assert_marked(result, WRAPPERS, ".")


def test_a_hot_masked_model_keeps_its_layers():
    """Where the decode loop can run the masked model too (its forward takes ``positions``), its stages
    are hot, and so is the activation its layers' ``Mlp`` was handed."""
    files = _files()
    files["stages/masked.py"] = files["stages/masked.py"].replace("def forward(self, ids, mask):",
                                                                  "def forward(self, ids, positions, mask=None):")
    assert _masked(files) == MASKED
    assert CHECKED in _all(files)


def test_a_function_handed_to_a_hot_layer_is_what_its_field_runs():
    """``Mlp(width, act=fast_gelu)`` in the dense layer, ``act=checked_gelu`` in the masked one: the hot
    ``Mlp.forward``'s ``self.act(...)`` runs ``fast_gelu`` only (found once the masked layers went cold)."""
    files = _files()
    assert CHECKED not in _all(files)
    files["stages/dense.py"] = files["stages/dense.py"].replace("act=fast_gelu", "act=checked_gelu").replace(
        "import Mlp, fast_gelu", "import Mlp, checked_gelu")
    assert CHECKED in _all(files)


def test_a_field_stored_from_outside_keeps_every_target():
    """``stage.inner = MaskedLayer(...)`` by another object: the field is not the constructions' alone."""
    files = _files()
    files["generate.py"] = files["generate.py"].replace(
        "        layer.materialize()\n",
        "        layer.materialize()\n    model.layers[0].inner = MaskedLayer(width)\n",
    ).replace("from stages.masked import MaskedModel", "from stages.masked import MaskedLayer, MaskedModel")
    assert _masked(files) == MASKED


def test_a_builder_passed_through_a_splat_keeps_every_target():
    """``Stage(**spec)``: which argument fills ``builder`` is not known at that construction."""
    files = _files()
    files["stages/dense.py"] = files["stages/dense.py"].replace(
        'self.head = Stage(builder=Head, builder_kwargs={"width": width})',
        'spec = {"builder": Head, "builder_kwargs": {"width": width}}\n        self.head = Stage(**spec)')
    assert _masked(files) == MASKED


def test_a_stage_handed_in_as_a_parameter_keeps_every_target():
    """A hot caller whose receiver is its parameter: which stages it runs is not followed here."""
    files = _files()
    files["stages/dense.py"] = files["stages/dense.py"].replace(
        "        for layer in self.layers:\n            state = layer(**state)\n",
        "        for layer in self.layers:\n            state = run_stage(layer, state)\n",
    ) + "\n\ndef run_stage(stage, state):\n    return stage(**state)\n"
    assert _masked(files) == MASKED


def test_a_store_of_anything_else_keeps_every_target():
    """``self.inner = make_inner(...)``: a factory's result, not the constructor's builder."""
    files = _files()
    files["stages/stage.py"] = files["stages/stage.py"].replace(
        "self.inner = self.builder(**self.builder_kwargs)", "self.inner = make_inner(self.builder, self.builder_kwargs)"
    ) + "\n\ndef make_inner(builder, kwargs):\n    return builder(**kwargs)\n"
    assert _masked(files) == MASKED
