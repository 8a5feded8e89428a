"""GL207 on state a decode loop carries through parameters and returns (branch ``carried``, issue 19;
``fixtures/static/carriedparams``): a cache joined in one branch and handed back from either, a per-row
list of grown caches handed back, a returned join whose parameter the step loop passes back in
(``mems = update(h, mems)``), a record's list field rebuilt one id longer every step and joined whole
are reported; the caller's keys joined and consumed, a join the loop
hands fresh tensors every call, one carried round a loop over blocks, are not."""

from __future__ import annotations

from pathlib import Path

from static_helpers import analyze

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "static"


def _files() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((FIXTURES / "carriedparams").glob("*.py"))}


def _lines(files: dict[str, str], path: str) -> list[int]:
    return sorted(f.line for f in analyze(files) if f.path == path and f.rule == "GL207")


def _marked(text: str, mark: str = "# GROWS") -> list[int]:
    return [i for i, line in enumerate(text.splitlines(), 1) if mark in line]


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_carried_caches_grow_and_this_steps_joins_do_not():
    files = _files()
    assert _lines(files, "layers.py") == _marked(files["layers.py"])
    assert _lines(files, "generate.py") == []


def test_a_returned_join_grows_only_where_the_step_loop_passes_it_back():
    """``update_memory``'s join is the caller's business: bound to another name, nothing grows."""
    files = _files()
    files["generate.py"] = files["generate.py"].replace("mems = update_memory(", "fresh = update_memory(")
    grown = [n for n in _marked(files["layers.py"]) if "return" not in files["layers.py"].splitlines()[n - 1]]
    assert _lines(files, "layers.py") == grown


def test_the_ids_a_helper_extends_grow_once_the_loop_keeps_them():
    files = _files()
    files["generate.py"] = files["generate.py"].replace("seen = extend(ids, x)", "ids = seen = extend(ids, x)")
    extend = _line_of(files["layers.py"], "return torch.cat([ids, tok]")
    assert _lines(files, "layers.py") == sorted(_marked(files["layers.py"]) + [extend])


def test_a_join_carried_round_a_loop_over_blocks_is_no_step_state():
    """``w = widen(w)`` in the blocks loop inside the step loop: the innermost loop carries it, not the step's."""
    files = _files()
    assert _line_of(files["layers.py"], "return torch.cat([h, h.mean(") not in _lines(files, "layers.py")
    files["generate.py"] = files["generate.py"].replace("        for _ in range(3):\n            w = widen(w)",
                                                        "        w = widen(w)")
    assert _line_of(files["layers.py"], "return torch.cat([h, h.mean(") not in _lines(files, "layers.py")


def test_a_record_rebuilt_one_id_longer_every_step_grows_its_join():
    """``Request(ids=s.ids + [t])`` in the step loop, ``torch.cat(state.ids)`` in it: the history grows;
    rebuilt from this step's id alone (``ids=[t]``), the join is as long every step."""
    files = {"records.py": _files()["records.py"]}
    assert _lines(files, "records.py") == _marked(files["records.py"])
    files["records.py"] = files["records.py"].replace("ids=s.ids + [t]", "ids=[t]")
    assert _lines(files, "records.py") == _marked(files["records.py"])[1:]


def test_the_callers_tensor_joined_onto_itself_grows_where_the_loop_passes_it_back():
    """``x = torch.cat([x, pad]); return x``: handed this step's tokens, nothing grows; handed what it
    returned the step before (``history = pad_tokens(history, x)``), or storing it on a field, it does."""
    files = _files()
    pad = _line_of(files["layers.py"], "x = torch.cat([x, pad], dim=1)")
    assert pad not in _lines(files, "layers.py")
    carried = dict(files, **{"generate.py": files["generate.py"].replace(
        "padded = pad_tokens(h, h2)", "padded = history = pad_tokens(history, x)")})
    assert pad in _lines(carried, "layers.py")
    stored = dict(files, **{"layers.py": files["layers.py"].replace(
        "    x = torch.cat([x, pad], dim=1)  # this step: the loop hands it this step's tokens\n    return x",
        "    x = torch.cat([x, pad], dim=1)\n    pad.kept = x\n    return x")})
    assert pad in _lines(stored, "layers.py")


def test_a_view_of_the_carried_value_taken_first_is_still_carried():
    """``history = history.expand(...)`` before ``history = pad_tokens(history, x)``: the same carried ids."""
    files = _files()
    pad = _line_of(files["layers.py"], "x = torch.cat([x, pad], dim=1)")
    viewed = dict(files, **{"generate.py": files["generate.py"].replace(
        "padded = pad_tokens(h, h2)",
        "history = history.expand(1, -1)\n        padded = history = pad_tokens(history, x)")})
    assert pad in _lines(viewed, "layers.py")
