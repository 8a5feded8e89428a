"""A temperature kept as a 0-dim device tensor reaches the sampler's ``max(temp, 1e-5)``
(issue 19 recall, fresh16's whisperspeech shape, look-alike in ``fixtures/static/temperature/``):
``torch.tensor(number, device=...)`` is a 0-dim device tensor (graphlint/static/scalars.py); a
pure forwarder (``def step_next(self, *args, **kwargs): return self.step_one(*args, **kwargs)``)
passes its callers' values on (graphlint/static/paramkinds.py ``_forwarded``), also after
``self.step_next = torch.compile(self.step_next)`` (graphlint/static/valueflow.py ``_rewrapped``);
and ``max``/``min`` of two values compare them (GL104 ``compared``)."""

from __future__ import annotations

from pathlib import Path

from graphlint.check import run
from graphlint.check_settings import resolve
from graphlint.config_file import load_config

from test_static_fixture import assert_marked, load

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fixtures" / "static" / "temperature"


def test_a_device_temperature_compared_by_max_in_the_sampler_is_a_read(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    settings = resolve(load_config(cwd=tmp_path), paths=[str(PACKAGE.relative_to(ROOT))], jobs=1, use_cache=False)
    assert_marked(run(settings).findings, load(PACKAGE))
