"""Receivers known only by a class's cone run the overrides of the subclasses the program may build
(:mod:`graphlint.static.builtclasses`), and a field converted to a host value by its own read, once,
is that value in the rest of the function (:mod:`graphlint.static.hostconversions`)."""

from __future__ import annotations

from pathlib import Path

from static_helpers import analyze, assert_marked, check_fixture

ROOT = Path(__file__).resolve().parents[2]
CACHES = ROOT / "fixtures" / "static" / "builtclasses"
CONVERSIONS = ROOT / "fixtures" / "static" / "hostconversions"


def test_only_the_caches_the_program_builds_run(monkeypatch, tmp_path):
    """``self.update`` in the base and ``cls()`` in ``GrowingCache.from_pairs`` reach neither
    ``HostOffloadCache`` nor ``WindowCache``: nothing builds them. ``GrowingCache`` (built by the
    model) keeps its growth."""
    result = check_fixture(monkeypatch, tmp_path, CACHES, ".")
    assert_marked(result, CACHES, ".")


def test_a_buffer_converted_once_by_its_own_read_is_a_number_after(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, CONVERSIONS, "quantlayer.py")
    assert_marked(result, CONVERSIONS, "quantlayer.py")


LIBRARY = """
import torch


class Cache:
    def write(self, k):
        return self.update(k)

    def update(self, k):
        return k


class Growing(Cache):
    def update(self, k):
        self.k = torch.cat([self.k, k])
        return self.k


class Offloaded(Cache):
    def update(self, k):
        return k.to("cpu")
"""

LOOP = """
from kv import Cache


def decode(model, cache: Cache, x, n):
    for _ in range(n):
        x = model(x, cache.write(x)).argmax(-1)
    return x
"""


def _rules(files):
    return sorted((f.path, f.rule) for f in analyze(files))


def test_a_cone_nothing_visibly_builds_keeps_every_subclass():
    """The caches come from outside the checked code: every override may run, as before."""
    assert _rules({"kv.py": LIBRARY, "run.py": LOOP}) == [("kv.py", "GL108"), ("kv.py", "GL207")]


def test_a_class_built_by_name_string_or_public_export_stays():
    """``Growing()`` is built; ``Offloaded`` is dropped unless a string, a registry or the package's
    ``__init__`` names it."""
    built = LOOP + "\n\ndef make():\n    from kv import Growing\n    return Growing()\n"
    assert _rules({"kv.py": LIBRARY, "run.py": built}) == [("kv.py", "GL207")]
    by_string = built + "\n\nKINDS = {'offload': 'kv.Offloaded'}\n"
    assert _rules({"kv.py": LIBRARY, "run.py": by_string}) == [("kv.py", "GL108"), ("kv.py", "GL207")]
    exported = {"pkg/__init__.py": "from .kv import Offloaded\n", "pkg/kv.py": LIBRARY,
                "pkg/run.py": built.replace("from kv import", "from pkg.kv import")}
    assert _rules(exported) == [("pkg/kv.py", "GL108"), ("pkg/kv.py", "GL207")]


def test_a_hierarchy_that_registers_its_subclasses_keeps_them():
    """``__init_subclass__`` may build any subclass from a registry graphlint cannot read."""
    registering = LIBRARY.replace("class Cache:\n", "class Cache:\n    def __init_subclass__(cls):\n"
                                  "        REGISTRY[cls.__name__] = cls\n\n", 1)
    built = LOOP + "\n\ndef make():\n    from kv import Growing\n    return Growing()\n"
    assert _rules({"kv.py": "REGISTRY = {}\n" + registering, "run.py": built}) == [("kv.py", "GL108"), ("kv.py", "GL207")]
