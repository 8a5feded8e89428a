"""A field read through ``self`` holds what the program stores into that field of an object of the
reading method's class (:mod:`graphlint.static.selffields`), with a constructor's parameter followed
through a factory's ``**kwargs`` (popped keys included): a branch on a parameter no caller passes is
decided by its default."""

from __future__ import annotations

from pathlib import Path

from static_helpers import analyze

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "selffields"
DEAD = ["GL101", "GL301"]  # balanced_ids' bincount and read-back, when the branch stays


def fixture_files(**edits: tuple[str, str]) -> dict[str, str]:
    files = {p.name: p.read_text() for p in sorted(FIXTURE.glob("*.py"))}
    for name, (old, new) in edits.items():
        name = name.replace("_", ".")
        assert old in files[name], (name, old)
        files[name] = files[name].replace(old, new)
    return files


def found(files: dict[str, str]) -> list[str]:
    return sorted(f.rule for f in analyze(files) if f.path == "experts.py")


def test_a_branch_on_a_field_every_object_keeps_at_its_default_is_dead():
    """``self.route_idx != -1`` where every ``Experts`` gets the constructor's default -1 (the
    models' calls never pass it, through the factory's ``**kwargs``), beside decoder layers keeping
    their loop index under the same field name and a config flattener's guarded ``setattr``."""
    assert found(fixture_files()) == []


def test_a_caller_passing_the_parameter_keeps_the_branch():
    files = fixture_files(model_py=('num_experts=8, quant="fp8")', 'num_experts=8, quant="fp8", route_idx=3)'))
    assert found(files) == DEAD


def test_a_store_into_the_field_of_any_object_keeps_the_branch():
    files = fixture_files(main_py=("    return generate(Model(16, 4)", "    m = Model(16, 4)\n"
                                   "    m.layers[0].moe.experts.route_idx = 2\n    return generate(m"))
    assert found(files) == DEAD


def test_a_computed_setattr_that_may_overwrite_keeps_the_branch():
    files = fixture_files(model_py=("            if not hasattr(self.base, name):\n                setattr(",
                                    "            if name:\n                setattr("))
    assert found(files) == DEAD


def test_a_subclass_whose_init_may_leave_the_field_unset_keeps_the_branch():
    """The guarded ``setattr`` only adds a missing field: an object whose ``__init__`` does not set
    ``route_idx`` may get one from it."""
    sub = ("\n\nclass Lean(Experts):\n    def __init__(self):\n        nn.Module.__init__(self)\n"
           "        self.weight = nn.Parameter(torch.zeros(8, 16, 16))\n")
    files = fixture_files(experts_py=("\n\ndef balanced_ids", sub + "\n\ndef balanced_ids"))
    assert found(files) == DEAD


def test_a_store_in_a_family_method_counts():
    """``self.route_idx = 1`` in another method of the class (or of a subclass) is the field's value too."""
    files = fixture_files(experts_py=("    def forward(self, x, ids):\n",
                                      "    def place(self):\n        self.route_idx = 1\n\n"
                                      "    def forward(self, x, ids):\n"))
    assert found(files) == DEAD


def test_a_keyword_popped_out_of_the_factory_kwargs_takes_the_default():
    """``kwargs.pop("route_idx", None)`` before ``Experts(..., **kwargs)``: the layer gets -1."""
    files = fixture_files(model_py=('num_experts=8, quant="fp8")', 'num_experts=8, quant="fp8", route_idx=3)'),
                          backend_py=('kwargs.pop("quant", None)', 'kwargs.pop("quant", None)\n'
                                      '        kwargs.pop("route_idx", None)'))
    # the pop may come after the splat for all this knows: the passed value stays possible
    assert found(files) == DEAD
