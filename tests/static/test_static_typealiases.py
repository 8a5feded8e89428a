"""Names bound to a tensor type (:mod:`graphlint.static.typealiases`): a forward annotated through
a shared typing module holds tensors (fresh21 recurrentgemma's planted ``.item()`` in
``MLPBlock.forward(self, x: at.Activations)`` was missed: the alias read as a class, not a tensor)."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from static_helpers import assert_marked, check_fixture

from graphlint.static.params import is_tensor_annotation
from graphlint.static.typealiases import module_aliases

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "typealiases"
IMPORTS = {"jt": "jaxtyping", "torch": "torch", "Float": "jaxtyping.Float", "PyTree": "jaxtyping.PyTree"}


def test_a_model_typed_through_imported_and_local_aliases_holds_tensors(monkeypatch, tmp_path):
    assert_marked(check_fixture(monkeypatch, tmp_path, FIXTURES, "shapemodel"), FIXTURES, "shapemodel")


def test_a_jaxtyping_dtype_is_its_array_type_and_a_pytree_a_container():
    def tensor(text: str) -> bool:
        return is_tensor_annotation(cst.parse_expression(text), IMPORTS)

    assert tensor('jt.Float[torch.Tensor, "b t"]') and tensor('Float[torch.Tensor, "b"] | None')
    assert not tensor('PyTree[Float[torch.Tensor, "b"]]') and not tensor('jt.Float[np.ndarray, "b"]')
    assert not tensor('other.Float[torch.Tensor, "b"]')


def test_module_aliases_are_found_in_order_and_strings_are_data():
    body = cst.parse_module(
        "import jaxtyping as jt\nimport torch\n"
        "Late = Act\nAct = jt.Float[torch.Tensor, 'b']\nAct2 = Act\nName = 'Tensor'\n"
        "Pair = tuple[Act, Act]\nfrom .shapes import Imported\nAlso = Imported\n").body
    found = module_aliases(body, {}, frozenset({"Imported"}), is_tensor_annotation)
    assert found == {"Act", "Act2", "Imported", "Also"}
