"""An entry the analysed code calls itself runs with its API defaults or with what those calls pass
(:meth:`graphlint.static.argvalues.ArgValues._entries_called`); one nothing calls stays open."""

from __future__ import annotations

from pathlib import Path

from static_helpers import analyze

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "entrycalls"


def fixture_files() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(FIXTURE.glob("*.py"))}


def reported(files: dict[str, str]) -> list[str]:
    """The fixture's markers on the lines reported."""
    out = []
    for f in analyze(files):
        if f.rule.startswith("GL1"):
            text = files[f.path].splitlines()[f.line - 1]
            out.append("DEAD" if "# DEAD" in text else "LIVE" if "# LIVE" in text else text.strip())
    return sorted(out)


def with_script(old: str, new: str) -> dict[str, str]:
    files = fixture_files()
    assert old in files["run.py"]
    files["run.py"] = files["run.py"].replace(old, new)
    return files


def test_a_branch_neither_the_default_nor_the_scripts_take_is_dead():
    # main reported the top-k read too: the entry's parameters were unknown
    assert reported(fixture_files()) == ["LIVE"]


def test_a_value_a_script_passes_keeps_its_branch():
    assert reported(with_script("top_k = -1", "top_k = 50")) == ["DEAD", "LIVE"]


def test_the_api_default_keeps_its_branch_whatever_the_scripts_pass():
    # ``stop`` is False by default, the script passes True: both run (and here the default runs)
    assert reported(with_script("top_k=top_k, stop=True", "top_k=top_k")) == []
    files = fixture_files()
    files["sampling.py"] = files["sampling.py"].replace("top_k=-1, stop", "top_k=40, stop")
    assert reported(files) == ["DEAD", "LIVE"]


def test_an_unknown_argument_or_an_uncalled_entry_stays_open():
    import_sys = "import sys\nimport torch"
    unknown = with_script("top_k = -1", "top_k = int(sys.argv[1])")
    unknown["run.py"] = unknown["run.py"].replace("import torch", import_sys, 1)
    assert reported(unknown) == ["DEAD", "LIVE"]
    files = fixture_files()
    del files["run.py"]  # nothing in the analysed code calls the entry: anything may be passed
    assert reported(files) == ["DEAD", "LIVE"]


def test_an_entry_taking_kwargs_stays_open():
    files = fixture_files()
    files["sampling.py"] = files["sampling.py"].replace("stop=False):", "stop=False, **extra):")
    assert reported(files) == ["DEAD", "LIVE"]
