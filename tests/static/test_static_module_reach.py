"""Layers behind module containers, configuration-chosen classes and installed forwards are on the
decode path: a ``.item()`` planted in such a layer is reported with the severity of its context (an
error inside a captured region). The call graph edges of each flow are in
``fixtures/static/callgraph/`` (``moduledict_attribute``, ``module_containers_built``,
``getattr_module_class``, ``config_class_field``, ``installed_forward``, ``installed_submodule``)."""

from __future__ import annotations

import textwrap

import pytest

from static_helpers import analyze

PLANT = "_planted = x.sum().item()"

CAPTURE = """
import torch
{imports}

def capture(x, path):
    {build}
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = model(x)
    return g, out
"""

LAYER = """
class {name}(nn.Module):
    def __init__(self, *args):
        super().__init__()

    def forward(self, x):
        {body}
        return x
"""


def layers(*names: str, planted: str) -> str:
    return "".join(LAYER.format(name=n, body=PLANT if n == planted else "x = x + 1") for n in names)


def item_findings(files: dict[str, str]) -> list[tuple[str, int, str]]:
    files = {path: textwrap.dedent(src) for path, src in files.items()}
    return [(f.path, f.line, f.severity) for f in analyze(files) if f.rule == "GL101"]


def line_of(src: str, text: str) -> int:
    return textwrap.dedent(src).splitlines().index("        " + text) + 1


CONTAINERS = {
    "moduledict-of-modulelist": """
        self.body = nn.ModuleDict(dict(embed=Embed(), blocks=nn.ModuleList(Block(c, i) for i in range(c.n))))

    def forward(self, x):
        x = self.body.embed(x)
        for block in self.body.blocks:
            x = block(x)
        return x
""",
    "list-multiplication": """
        self.blocks = nn.ModuleList([Block(c, 0)] * c.n)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x
""",
    "append-in-a-loop": """
        self.blocks = nn.ModuleList()
        for i in range(c.n):
            self.blocks.append(Block(c, i))

    def forward(self, x):
        for i in range(len(self.blocks)):
            x = self.blocks[i](x)
        return x
""",
    "sequential-of-a-list": """
        blocks = [Block(c, i) for i in range(c.n)]
        self.blocks = nn.Sequential(*blocks)

    def forward(self, x):
        return self.blocks(x)
""",
}


@pytest.mark.parametrize("shape", sorted(CONTAINERS))
def test_a_layer_behind_a_module_container_is_captured(shape):
    model = ("import torch.nn as nn\n" + layers("Embed", "Block", planted="Block")
             + "\n\nclass Net(nn.Module):\n    def __init__(self, c):\n        super().__init__()\n"
             + CONTAINERS[shape])
    files = {"model.py": model,
             "run.py": CAPTURE.format(imports="from model import Net", build="model = Net(object())")}
    assert item_findings(files) == [("model.py", line_of(model, PLANT), "error")]


CHOSEN = {
    "getattr-on-a-module": ("""
import model
class Config:
    name: str = "Dense"

    @property
    def mlp_class(self):
        return getattr(model, self.name)
""", "self.mlp = c.mlp_class(c)"),
    "registry-dict": ("""
from model import Dense, Sparse
REGISTRY = {"dense": Dense, "sparse": Sparse}
class Config:
    name: str = "dense"
""", "cls = REGISTRY[c.name]\n        self.mlp = cls(c)"),
    "class-in-a-config-field": ("""
from dataclasses import dataclass
from model import Sparse
@dataclass
class Config:
    mlp_class: type = Sparse
""", "self.mlp = c.mlp_class(c)"),
}


@pytest.mark.parametrize("shape", sorted(CHOSEN))
def test_a_layer_whose_class_the_config_chooses_is_captured(shape):
    config, build = CHOSEN[shape]
    model = "import torch.nn as nn\n" + layers("Dense", "Sparse", planted="Sparse")
    net = (f"import torch.nn as nn\nfrom config import *\n\n\nclass Net(nn.Module):\n"
           f"    def __init__(self, c: Config):\n        super().__init__()\n        {build}\n\n"
           f"    def forward(self, x):\n        return self.mlp(x)\n")
    files = {"model.py": model, "config.py": config, "net.py": net,
             "run.py": CAPTURE.format(imports="from net import Net\nfrom config import Config",
                                      build="model = Net(Config())")}
    assert item_findings(files) == [("model.py", line_of(model, PLANT), "error")]


INSTALLED = {
    "lambda": "layer.forward = lambda x: fast_forward(layer, x)",
    "partial": "layer.forward = partial(fast_forward, layer)",
    "method-type": "layer.forward = types.MethodType(fast_forward, layer)",
    "setattr-forward": 'setattr(layer, "forward", partial(fast_forward, layer))',
    "setattr-submodule": "setattr(model, name, QuantLinear(layer))",
}


@pytest.mark.parametrize("shape", sorted(INSTALLED))
def test_a_forward_installed_into_a_library_model_is_captured(shape):
    patch = textwrap.dedent(f"""
        import types
        from functools import partial

        import torch.nn as nn


        def fast_forward(layer, x):
            {PLANT}
            return x


        class QuantLinear(nn.Module):
            def __init__(self, layer):
                super().__init__()
                self.layer = layer

            def forward(self, x):
                {PLANT}
                return x


        def patch(model):
            for name, layer in model.named_modules():
                {INSTALLED[shape]}
    """)
    files = {"patch.py": patch,
             "run.py": CAPTURE.format(imports="from transformers import AutoModelForCausalLM\nfrom patch import patch",
                                      build="model = AutoModelForCausalLM.from_pretrained(path)\n    patch(model)")}
    lines = [i + 1 for i, text in enumerate(patch.splitlines()) if text.strip() == PLANT]
    planted = lines[1] if shape == "setattr-submodule" else lines[0]
    assert ("patch.py", planted, "error") in item_findings(files)
    assert [f for f in item_findings(files) if f[1] not in lines] == []


def test_a_forward_a_project_class_installs_on_itself_is_no_target_of_a_library_model():
    own = textwrap.dedent(f"""
        import torch.nn as nn


        class Own(nn.Module):
            def __init__(self):
                super().__init__()
                self.forward = self.fast

            def fast(self, x):
                {PLANT}
                return x
    """)
    files = {"own.py": own,
             "run.py": CAPTURE.format(imports="from transformers import AutoModelForCausalLM",
                                      build="model = AutoModelForCausalLM.from_pretrained(path)")}
    assert item_findings(files) == []


def test_a_compiled_lambda_does_not_make_direct_calls_of_its_model_replays():
    """``torch.compile(lambda x: model(x), mode="reduce-overhead")`` compiles the closure -- the
    lambda, a function of its own, is the graph root -- while an eager loop calling ``model`` itself
    stays an eager per-token loop, and the function defining the lambda does not call the model by
    defining it (the body's call is a reference, made when it is called)."""
    from graphlint.static.link import link
    from static_helpers import TOY_MODEL, builtin_rules, options, summarize

    files = {
        "model.py": TOY_MODEL,
        "run.py": textwrap.dedent("""
            import torch
            from model import Model

            def main():
                model = Model()
                fast = torch.compile(lambda x: model(x), mode="reduce-overhead")
                x = torch.zeros(1, dtype=torch.long)
                for _ in range(8):
                    logits = model(x)
                    x = logits.argmax(-1)
                return fast
        """),
    }
    rules = builtin_rules()
    entries: list = []
    link(summarize(files), rules, options(rules), entries_out=entries)
    assert [(e.context, e.function[1]) for e in entries] == [("graph", "main.<lambda0>"), ("eager", "main")]


def test_an_eager_loop_over_a_library_model_reaches_the_forward_installed_into_it():
    """A generate loop calling a Hugging Face model whose attention forward the project replaced
    (``types.MethodType(shifted_attention, module)``): the loop is a per-token loop -- the installed
    function is a module's forward whatever its name -- and a sync in it is an eager error."""
    patch = textwrap.dedent(f"""
        import types

        import torch


        def shifted_attention(self, x):
            {PLANT}
            return torch.softmax(x, -1)


        def enable(model):
            for name, module in model.named_modules():
                module.forward = types.MethodType(shifted_attention, module)
    """)
    loop = textwrap.dedent("""
        from transformers import AutoModelForCausalLM
        from patch import enable

        def generate(path, ids, n):
            model = AutoModelForCausalLM.from_pretrained(path)
            enable(model)
            for _ in range(n):
                logits = model(ids)
                ids = logits.argmax(-1)
            return ids
    """)
    found = item_findings({"patch.py": patch, "run.py": loop})
    line = patch.splitlines().index("    " + PLANT) + 1
    assert found == [("patch.py", line, "error")]
