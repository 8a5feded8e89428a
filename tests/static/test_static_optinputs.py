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


def _checked(tmp_path, files: dict[str, str], path: str) -> list[tuple[int, str, str]]:
    """The whole check (the cross-file value rounds included) on ``files`` written to ``tmp_path``."""
    from graphlint.check import run
    from graphlint.check_settings import resolve
    from graphlint.config_file import load_config

    pkg = tmp_path / "pkg"
    pkg.mkdir(parents=True)
    for name, text in files.items():
        (pkg / name).write_text(text)
    settings = resolve(load_config(cwd=tmp_path), paths=[str(pkg)], jobs=1, use_cache=False)
    return sorted((f.line, f.rule, f.severity) for f in run(settings).findings
                  if f.category != "meta" and f.path.endswith("/" + path))


def test_a_flag_every_caller_passes_as_a_bool_is_no_tensor(tmp_path):
    """``forward`` passes ``pad_left=True if use_cache or ... else False``: ``splice``'s fallback
    ``if pad_left is None: pad_left = torch.any(...)`` never runs, so ``if pad_left:`` reads nothing
    back (18, 25)."""
    assert not _lines_of(_checked(tmp_path, _fx(), "merge.py")) & {18, 25}


def test_the_same_flag_with_a_literal_default_is_no_tensor(tmp_path):
    files = _fx()
    files["merge.py"] = files["merge.py"].replace("targets=None, pad_left=None", "targets=None, pad_left=True")
    assert not _lines_of(_checked(tmp_path, files, "merge.py")) & {18, 25}


def test_a_caller_leaving_the_flag_out_keeps_the_fallback(tmp_path):
    """One caller passes nothing: ``pad_left`` may be None, ``torch.any`` may bind it, and the
    truth test reads a tensor back."""
    files = _fx()
    files["model.py"] += "\n\ndef prefill(model: ImageTextLM, ids, mask):\n    e = model.embed(ids)\n" \
                         "    return splice(e, ids, mask)\n"
    assert (18, "GL105", "error") in _checked(tmp_path, files, "merge.py")


def _lines_of(found: list[tuple[int, str, str]]) -> set[int]:
    return {line for line, _, _ in found}


def test_the_model_inputs_a_loop_builds_pick_the_forwards_branches(tmp_path):
    """``sample`` splats a dict it builds (``inputs = {"input_ids": ..., "attention_mask": ...}``):
    no labels and no pixels reach ``forward``, so ``splice``'s labels branch (22) and the image
    encoder (``model.py:20``) are not on the decode path."""
    assert 22 not in _lines_of(_checked(tmp_path, _fx(), "merge.py"))
    assert 20 not in _lines_of(_checked(tmp_path / "m", _fx(), "model.py"))


def test_a_dict_changed_in_place_is_unknown(tmp_path):
    files = _fx()
    files["model.py"] = files["model.py"].replace("            logits = self(**inputs, use_cache=True)",
                                                  "            inputs[\"labels\"] = input_ids\n"
                                                  "            logits = self(**inputs, use_cache=True)")
    assert (22, "GL304", "error") in _checked(tmp_path, files, "merge.py")


def test_a_dict_handed_to_a_helper_is_unknown(tmp_path):
    files = _fx()
    files["model.py"] = files["model.py"].replace("            logits = self(**inputs, use_cache=True)",
                                                  "            self.prepare(inputs)\n"
                                                  "            logits = self(**inputs, use_cache=True)")
    assert (20, "GL201", "warning") in _checked(tmp_path, files, "model.py")


def test_a_key_one_binding_holds_reaches_the_forward(tmp_path):
    """The first step's inputs carry the pixels: the image encoder may run (once per prompt, which
    the splat does not tell apart), so it stays."""
    files = _fx()
    files["model.py"] = files["model.py"].replace(
        '                inputs = {"input_ids": input_ids, "attention_mask": attention_mask}',
        '                inputs = {"input_ids": input_ids, "attention_mask": attention_mask, "pixels": input_ids}')
    assert (20, "GL201", "warning") in _checked(tmp_path, files, "model.py")


def test_a_decorated_swap_is_decode_code():
    """A decorator may register the method with a library that calls it: its store counts."""
    files = _fx()
    files["swap.py"] = files["swap.py"].replace("    def freeze_embedding(self, split: int):",
                                                "    @register\n    def freeze_embedding(self, split: int):")
    files["swap.py"] = files["swap.py"].replace("class TinyLM(nn.Module):",
                                                "def register(fn):\n    return fn\n\n\nclass TinyLM(nn.Module):")
    assert (15, "GL105", "error") in _found(files, "swap.py")


def test_a_fallback_no_caller_takes_keeps_its_flows(tmp_path):
    """Branch ``nonefix``: the one caller passes ``sampler=0``, so ``if sampler is None:`` is off
    the decode path and its read-back (line 20) is not reported; but the body may still run (another
    caller, later), so its flow stays: ``sampler.forward`` can run ``Greedy.forward`` and its
    ``.cpu()`` (line 15). Skipping the body outright lost that flow (fails on main ``ce50912``)."""
    found = _checked(tmp_path, {"fallback.py": _fx()["fallback.py"]}, "fallback.py")
    assert (15, "GL103", "error") in found
    assert not [f for f in found if f[0] == 20]
