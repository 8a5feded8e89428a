"""Branch ``optinputs``: what the decode path really runs of a forward given optional inputs
(``fixtures/static/optinputs``). Each target test fails on main ``f0c9770``; each control shows
the finding back where the code may run it."""

from __future__ import annotations

from test_static_capfalse import _files, _found


def _fx() -> dict[str, str]:
    return _files("optinputs")


def _lines(files: dict[str, str], path: str) -> set[int]:
    return {line for line, _, _ in _found(files, path)}


def test_a_module_swapped_in_by_a_method_nothing_calls_is_not_decode_code():
    """``freeze_embedding`` replaces ``embed`` with a ``SplitFrozenEmbedding``; no code names the
    method, so the decode step's ``self.embed(ids)`` runs the ``nn.Embedding`` ``__init__`` built."""
    assert not _lines(_fx(), "swap.py") & {13, 15, 16}


def test_a_swap_some_code_calls_is_decode_code():
    files = _fx()
    files["train.py"] = "from swap import TinyLM\n\n\ndef finetune(model: TinyLM):\n    model.freeze_embedding(4)\n"
    assert {(15, "GL105", "error"), (16, "GL303", "error")} <= set(_found(files, "swap.py"))


def test_a_swap_named_by_a_string_is_decode_code():
    files = _fx()
    files["train.py"] = ("from swap import TinyLM\n\n\ndef apply(model: TinyLM, names=(\"freeze_embedding\",)):\n"
                         "    for name in names:\n        getattr(model, name)(4)\n")
    assert (15, "GL105", "error") in _found(files, "swap.py")


def test_a_field_only_a_method_fills_keeps_its_store():
    """No ``__init__`` store of the field: the method is how the module gets built (a hook a
    library calls), so what it stores is what runs."""
    files = _fx()
    files["swap.py"] = files["swap.py"].replace("        self.embed = nn.Embedding(100, 8)\n", "")
    assert (15, "GL105", "error") in _found(files, "swap.py")
