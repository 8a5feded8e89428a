"""A misspelt factory, option or option value is refused from the target's source, before torch is
imported or anything is built, with a "did you mean" and the names that would work."""

from __future__ import annotations

import resource
import subprocess
import sys
import textwrap
from dataclasses import fields
from pathlib import Path
from typing import get_args

import pytest

from graphlint.dynamic.factory_check import module_source, precheck
from graphlint.dynamic.target import TargetError

ROOT = Path(__file__).resolve().parents[2]

FACTORY = '''\
from __future__ import annotations
from typing import Literal, Optional, TypedDict
from typing_extensions import Unpack

Mode = Literal["fast", "exact"]


class Sizes(TypedDict, total=False):
    dim: int
    layout: Literal["rows", "cols"]


def make_target(devices, *, mode: Mode = "fast", dtype: Optional[Literal["float32", "bfloat16"]] = None,
                seed: int = 0, **options: Unpack[Sizes]):
    raise AssertionError("never called by the precheck")


def make_open(devices, width=8, **anything):
    pass


from elsewhere import built_factory  # bound by an import: only the import can tell
'''


@pytest.fixture
def target(tmp_path) -> str:
    path = tmp_path / "eng" / "target.py"
    path.parent.mkdir()
    path.write_text(FACTORY)
    return str(path)


def _refused(spec: str, **options) -> str:
    with pytest.raises(TargetError) as info:
        precheck(spec, options)
    return str(info.value)


def test_names_values_and_unpacked_fields_are_checked_from_the_source(target):
    precheck(f"{target}:make_target", {"mode": "exact", "dtype": None, "dim": 4, "layout": "cols", "seed": 3})
    assert "takes no option 'dimm'; did you mean dim?" in _refused(f"{target}:make_target", dimm=4)
    said = _refused(f"{target}:make_target", mode="exat")
    assert "takes mode as one of fast, exact; did you mean exact?" in said
    assert "as one of float32, bfloat16, None" in _refused(f"{target}:make_target", dtype="fp32")
    assert "as one of rows, cols" in _refused(f"{target}:make_target", layout="diagonal")
    assert "it takes: dim, dtype, layout, mode, seed" in _refused(f"{target}:make_target", zzz=1)


def test_a_misspelt_factory_gets_a_did_you_mean_but_other_bindings_are_left_to_the_import(target):
    assert f"has no factory 'make_targt'; did you mean {target}:make_target?" in _refused(f"{target}:make_targt")
    precheck(f"{target}:built_factory", {"anything": 1})  # imported: not judged here
    precheck(f"{target}:make_open", {"anything": 1, "width": 2})  # a bare **kwargs takes any name
    precheck(f"{ROOT / 'no' / 'such' / 'file.py'}:make_target", {"x": 1})  # no source: the import decides


def test_module_specs_are_found_without_importing_them():
    before = set(sys.modules)
    assert module_source("dsv4.target") == ROOT / "dsv4" / "target.py"
    assert module_source("graphlint.targets.hf") == ROOT / "graphlint" / "targets" / "hf.py"
    assert "dsv4.target" in before or "dsv4.target" not in sys.modules  # found, not imported
    assert module_source("no_such_package.target") is None


def test_the_bundled_engine_spells_its_choices_where_the_source_is_read():
    from dsv4.config import PRESETS, ConfigOverrides, DSV4Config
    from dsv4.target import DECODERS, DecoderName, PresetName

    assert list(get_args(DecoderName)) == list(DECODERS)
    assert list(get_args(PresetName)) == list(PRESETS)
    assert list(ConfigOverrides.__annotations__) == [f.name for f in fields(DSV4Config)]
    said = _refused("dsv4.target:make_target", n_layer=2)
    assert "did you mean n_layers?" in said and "sinkhorn_iters" in said
    assert "did you mean full-graph?" in _refused("dsv4.target:make_target", decoder="fullgraph")


def test_the_cli_refuses_a_typo_in_a_fraction_of_a_second_without_importing_torch():
    code = textwrap.dedent("""
        import sys
        from graphlint.cli import main
        rc = main(["inventory", "--decoder", "eagr", "--no-progress"])
        assert "torch" not in sys.modules, "torch was imported"
        sys.exit(rc)
    """)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime  # CPU, not wall: a loaded CI
    assert result.returncode == 2, result.stderr                                # machine stretches wall time
    assert "did you mean eager?" in result.stderr and "ab-graph, full-graph" in result.stderr
    assert cpu < 1.5, f"{cpu:.1f} CPU-s"  # it took 4-6 s when the factory refused it after importing torch


def test_the_import_time_check_also_suggests_a_factory(tmp_path):
    from graphlint.dynamic.target import load_factory

    path = tmp_path / "built.py"
    path.write_text("def _make(devices):\n    pass\n\nmake_target = _make\n")
    with pytest.raises(TargetError, match=r"has no callable 'make_targt'; did you mean .*built.py:make_target\?"):
        load_factory(f"{path}:make_targt")
