"""A field every store of which is a device tensor, read on an object of another class (issue 19
recall; fresh23's gsv-tts-lite shape, in a look-alike of our own under
``fixtures/static/devicefields/``): graphs captured per cache size keep their position counter in
a plain object's field, filled from a slice of an UPPER_CASE local a torch factory places on the
device, and the host loop truth-tests it every token. A field some store makes a Python number, or
one filled from ``.cpu()``, is no device tensor: testing it is not reported."""

from __future__ import annotations

from pathlib import Path

from graphlint.check import run
from graphlint.check_settings import resolve
from graphlint.config_file import load_config
from test_static_fixture import expected, load

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "static" / "devicefields"


def check(monkeypatch, tmp_path, edit=None) -> set[tuple[str, int, str, str]]:
    """The whole check (the field facts come from the value rounds) on the fixture, edited in a copy."""
    folder = tmp_path / "devicefields"
    folder.mkdir()
    for path in FIXTURE.iterdir():
        text = path.read_text()
        (folder / path.name).write_text(edit(text) if edit and path.name == "slots.py" else text)
    monkeypatch.chdir(tmp_path)
    settings = resolve(load_config(cwd=tmp_path), paths=["devicefields"], jobs=1, use_cache=False)
    return {(f.path, f.line, f.rule, f.severity) for f in run(settings).findings if f.category != "meta"}


def test_the_counter_field_is_read_every_token_and_the_others_are_not(monkeypatch, tmp_path):
    marked = {(p.replace("fixtures/static/", ""), line, rule) for p, line, rule in expected(load(FIXTURE))}
    assert marked == {("devicefields/slots.py", 57, "GL105")}
    assert check(monkeypatch, tmp_path) == {("devicefields/slots.py", 57, "GL105", "warning")}


def test_one_store_of_a_number_anywhere_keeps_the_field_unknown(monkeypatch, tmp_path):
    edit = lambda text: text.replace("        slot.used = 0", "        slot.used = 0\n        slot.pos = 0")  # noqa: E731
    assert not check(monkeypatch, tmp_path, edit)


def test_a_computed_setattr_on_the_slot_class_keeps_its_fields_unknown(monkeypatch, tmp_path):
    put = "    limit: int = None\n\n    def put(self, key, value):\n        setattr(self, key, value)\n"
    assert not check(monkeypatch, tmp_path, lambda text: text.replace("    limit: int = None\n", put))
