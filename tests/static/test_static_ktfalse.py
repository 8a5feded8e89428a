"""Branch ``ktfalse``: code that runs only on another backend than CUDA (``fixtures/static/backendonly``,
:mod:`graphlint.static.backends`). The target test fails on main ``d7c541d`` (every finding an error
there); each control shows the error back where the code runs on CUDA."""

from __future__ import annotations

from test_static_capfalse import _files, _found


def test_code_only_another_backend_runs_is_a_warning():
    """``PortModel`` is built only ``if use_torch_npu:``: the captured call reaches its attention's
    read-back only through it (10); ``if IS_NPU:`` and the ``else`` of ``if not IS_NPU:`` guard
    the other two (37, 42); the CUDA branch's read-back stays an error (40)."""
    assert _found(_files("backendonly"), "models.py") == [(10, "GL101", "warning"), (37, "GL101", "warning"),
                                                          (40, "GL101", "error"), (42, "GL101", "warning")]


def test_a_flag_for_something_else_selects_no_backend():
    files = _files("backendonly")
    files["runner.py"] = files["runner.py"].replace("if use_torch_npu:\n            self.model", "if dim > 64:\n            self.model")
    assert (10, "GL101", "error") in _found(files, "models.py")


def test_a_class_also_built_outside_the_flag_runs_on_cuda():
    files = _files("backendonly")
    files["runner.py"] = files["runner.py"].replace('        self.static_h = torch.zeros(',
                                                    '        self.spare = PortModel(dim)\n        self.static_h = torch.zeros(')
    assert (10, "GL101", "error") in _found(files, "models.py")


def test_rocm_is_cuda():
    """HIP graphs run through ``torch.cuda.graph``: a ROCm flag selects CUDA's hazards."""
    files = {**_files("backendonly")}
    files["models.py"] = files["models.py"].replace("IS_NPU", "IS_HIP")
    assert (37, "GL101", "error") in _found(files, "models.py")


def _written_for() -> dict[str, str]:
    """``fixtures/static/writtenfor``'s model with ``fixtures/static/replaced``'s loader and server."""
    return {**_files("replaced"), **_files("writtenfor")}


def test_a_call_written_for_a_replacement_makes_the_original_replaceable():
    """``self.attn(h, self.cache, pages=..., slots=...)``: ``Attention.forward`` swallows ``pages``
    and ``slots`` in ``**kwargs``; ``PagedAttention``, which the loader's computed class may build,
    names both. The original's read-back is a warning; ``Norm``'s stays an error."""
    assert _found(_written_for(), "layers.py") == [(14, "GL101", "error"), (21, "GL101", "warning"),
                                                   (22, "GL311", "warning")]


def test_keywords_no_replacement_names_replace_nothing():
    files = _written_for()
    files["layers.py"] = files["layers.py"].replace("def forward(self, h, cache, pages, slots):",
                                                    "def forward(self, h, cache, *rest):")
    assert (21, "GL101", "error") in _found(files, "layers.py")


def test_one_swallowed_keyword_says_too_little():
    files = _written_for()
    files["layers.py"] = files["layers.py"].replace(", slots=self.slots)", ")")
    assert (21, "GL101", "error") in _found(files, "layers.py")


def test_without_a_computed_class_nothing_is_replaced():
    files = _written_for()
    files["loader.py"] = files["loader.py"].replace("cls(name=name, orig=child, rules=rules)", "cls(child)")
    assert (21, "GL101", "error") in _found(files, "layers.py")
