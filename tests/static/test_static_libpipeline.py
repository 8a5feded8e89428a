"""A project model a library pipeline's denoising loop runs (:mod:`graphlint.static.libpipelines`, branch
``wrappedexternal``): handed to a library pipeline as a per-step component that the checked code then
calls, its ``forward`` is an eager entry; a text encoder handed alongside, a pipeline never called, a
component the loop does not run per step, a pipeline class of the project itself are not."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_static_fixture import assert_marked, load
from static_helpers import analyze, check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "libpipeline"


def test_the_fixture_reports_what_its_markers_say(monkeypatch, tmp_path):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, "denoise")
    assert_marked(result.findings, load(FIXTURES / "denoise"))


MODEL = """
import torch
from lib.models import LibTransformer
{imports}

class Wrapper(LibTransformer):
    def forward(self, x):
        return x * torch.ones(x.shape[0], device=x.device)


class Tagger(torch.nn.Module):  # a decode loop of its own: evidence, so no name guess is made
    def __init__(self):
        super().__init__()
        self.head = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.head(x)


def tag(x, n):
    model = Tagger()
    for _ in range(n):
        x = torch.nn.functional.one_hot(model(x).argmax(-1), 8).float()
    return x


def serve(path, prompt):
    pipe = {build}
    {use}
"""


def entry_hit(imports: str, build: str, use: str = "return pipe(prompt)") -> bool:
    findings = analyze({"m.py": MODEL.format(imports=imports, build=build, use=use)})
    return any(f.rule == "GL201" and f.line == 8 for f in findings)


@pytest.mark.parametrize(("imports", "build", "use", "found"), [
    ("from diffusers import FluxPipeline", "FluxPipeline.from_pretrained(path, transformer=Wrapper())",
     "return pipe(prompt)", True),
    ("import diffusers", "diffusers.FluxPipeline(transformer=Wrapper(), vae=None)", "return pipe(prompt)", True),
    ("from diffusers import AutoPipelineForText2Image as Auto", "Auto.from_pretrained(path, unet=Wrapper())",
     "return pipe(prompt)", True),
    # built, never called: no denoising loop runs
    ("from diffusers import FluxPipeline", "FluxPipeline.from_pretrained(path, transformer=Wrapper())",
     "pipe.save_pretrained(path)", False),
    # the text encoder runs once per request
    ("from diffusers import FluxPipeline", "FluxPipeline.from_pretrained(path, text_encoder=Wrapper())",
     "return pipe(prompt)", False),
    # not a pipeline class of the library table
    ("from otherlib import FluxPipeline", "FluxPipeline.from_pretrained(path, transformer=Wrapper())",
     "return pipe(prompt)", False),
    ("from diffusers import FluxTransformer", "FluxTransformer.from_pretrained(path, transformer=Wrapper())",
     "return pipe(prompt)", False),
])
def test_which_pipelines_run_the_model_every_step(imports, build, use, found):
    assert entry_hit(imports, build, use) is found


def test_the_pipeline_is_followed_through_a_returning_method_and_a_field():
    source = MODEL.format(imports="from diffusers import FluxPipeline", build="None", use="") + """

class Runner:
    def load(self, path):
        model = Wrapper.from_pretrained(path)
        return FluxPipeline.from_pretrained(path, transformer=model)

    def setup(self, path):
        self.pipe = self.load(path)

    def run(self, prompt):
        return self.pipe(prompt)
"""
    findings = analyze({"m.py": source})
    assert any(f.rule == "GL201" and f.line == 8 for f in findings)


def test_no_entry_where_the_engine_captures_its_step():
    """Beside a captured decode step, an eager denoising stage runs once per request (scheduleloops)."""
    source = MODEL.format(imports="from diffusers import FluxPipeline",
                          build="FluxPipeline.from_pretrained(path, transformer=Wrapper())", use="return pipe(prompt)")
    source += """

def capture(x):
    model = Tagger()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = model(x)
    return g, y
"""
    assert not any(f.rule == "GL201" and f.line == 8 for f in analyze({"m.py": source}))
