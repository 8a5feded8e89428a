"""Branch ``prefillsplit``: a prefill arm behind a predicate helper, host staging slots read through
another object, and a ``str`` key's membership (``fixtures/static/prefillsplit``). Each fixture is
reported on main; each twin changes one fact and the finding comes back."""

from __future__ import annotations

from pathlib import Path

from graphlint.check import run
from graphlint.check_settings import resolve
from graphlint.config_file import load_config

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "prefillsplit"


def _found(monkeypatch, tmp_path: Path, name: str, edits: dict[str, tuple[str, str]] | None = None) -> list[tuple]:
    """(file, line, rule, severity) of ``graphlint check`` on a copy of one fixture folder, each
    ``edits[file] = (old, new)`` applied first (the old text must be there)."""
    root = tmp_path / name
    root.mkdir()
    for src in sorted((FIXTURES / name).glob("*.py")):
        text = src.read_text()
        if edits and src.name in edits:
            old, new = edits[src.name]
            assert old in text, (src.name, old)
            text = text.replace(old, new)
        (root / src.name).write_text(text)
    (root / "pyproject.toml").write_text("[tool.graphlint]\n")
    monkeypatch.chdir(root)
    result = run(resolve(load_config(cwd=root), paths=["."], jobs=1, use_cache=False))
    return sorted((Path(f.path).name, f.line, f.rule, f.severity) for f in result.findings)


# -- a prefill arm behind a predicate helper ------------------------------------------------------

def test_the_chunked_arm_behind_a_one_token_predicate_is_not_captured(monkeypatch, tmp_path):
    """``Mixer._one_token_rows`` returns ``getattr(batch, "max_query_len", 1) == 1``: the branch
    on its call is the branch on that test, whose ``else`` is the prompt's (a query length of one
    token is the decode step's), so ``chunk_layout``'s reads are no captured code."""
    assert _found(monkeypatch, tmp_path, "split") == []


def test_a_predicate_on_another_count_decides_nothing(monkeypatch, tmp_path):
    edits = {"engine.py": ('getattr(batch, "max_query_len", 1) == 1', "batch.num_rows == 1")}
    assert ("engine.py", 17, "GL102", "error") in _found(monkeypatch, tmp_path, "split", edits)


def test_a_predicate_defined_twice_is_not_inlined(monkeypatch, tmp_path):
    """Two functions of the name in the module: which one a call runs is not the walk's to say."""
    edits = {"engine.py": ("class Net(nn.Module):", "def _one_token_rows(batch):\n    return True\n\n\nclass Net(nn.Module):")}
    assert ("engine.py", 17, "GL102", "error") in _found(monkeypatch, tmp_path, "split", edits)


def test_a_helper_doing_more_than_returning_a_test_is_no_predicate(monkeypatch, tmp_path):
    edits = {"engine.py": ('        return getattr(batch, "max_query_len", 1) == 1',
                           '        batch.num_rows += 0\n        return getattr(batch, "max_query_len", 1) == 1')}
    assert ("engine.py", 17, "GL102", "error") in _found(monkeypatch, tmp_path, "split", edits)


# -- host staging slots read through another object ---------------------------------------------

def test_a_slot_of_a_list_of_pinned_host_tensors_is_host_memory(monkeypatch, tmp_path):
    """``stager.host_scores[slot][:1].tolist()``: ``stager`` is a parameter no annotation types,
    and every store of ``host_scores`` anywhere is a list of host tensors (``Request.follow``'s
    ``setattr(self, f, getattr(prev, f, None))`` copies fields by name: no new value)."""
    assert _found(monkeypatch, tmp_path, "pinned") == []


def test_a_device_tensor_in_the_slot_list_makes_the_read_a_copy(monkeypatch, tmp_path):
    edits = {"slots.py": ('            torch.zeros(rows, dtype=torch.float32, device="cpu", pin_memory=True),\n        ]',
                          '            torch.zeros(rows, dtype=torch.float32, device="cuda"),\n        ]')}
    assert ("loop.py", 14, "GL102", "error") in _found(monkeypatch, tmp_path, "pinned", edits)


def test_a_computed_setattr_of_another_value_may_store_anything(monkeypatch, tmp_path):
    edits = {"slots.py": ("setattr(self, f, getattr(prev, f, None))", "setattr(self, f, prev)")}
    assert ("loop.py", 14, "GL102", "error") in _found(monkeypatch, tmp_path, "pinned", edits)


def test_a_setattr_copying_another_name_is_no_copy_by_name(monkeypatch, tmp_path):
    edits = {"slots.py": ("setattr(self, f, getattr(prev, f, None))", "setattr(self, f, getattr(prev, f + \"_0\", None))")}
    assert ("loop.py", 14, "GL102", "error") in _found(monkeypatch, tmp_path, "pinned", edits)


# -- a str key's membership ----------------------------------------------------------------------

def test_a_string_key_in_a_container_reads_no_tensor(monkeypatch, tmp_path):
    """``f"extra_{i}" in extras`` and ``"final" + "_bias" in extras``: a dict hashes a str key, and
    ``Tensor.__contains__`` refuses one before reading anything."""
    assert _found(monkeypatch, tmp_path, "dictkey") == []


def test_a_number_sought_in_an_unknown_container_is_still_a_tensor_search(monkeypatch, tmp_path):
    edits = {"extras.py": ('if extras is not None and f"extra_{i}" in extras:', "if extras is not None and i in extras:")}
    assert ("extras.py", 16, "GL105", "warning") in _found(monkeypatch, tmp_path, "dictkey", edits)
