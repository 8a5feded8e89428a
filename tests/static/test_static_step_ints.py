"""A per-step Python int carried into compiled code: the counter a per-token loop advances
(``filled += 1``), passed to a ``torch.compile``'d step (directly, through a local bound to the
compiled function, through ``functools.partial``, by keyword) and on to the model's forward, which
slices by it -- a new shape, and a new CUDA-graph recording, every token (GL308). The parameter
has no position's name: only the value flow from the loop tells (:data:`.valuekinds.STEP`).
Counter-cases: a static length, a counter only logged or used for a host ``range()``, a loop that
feeds nothing back, and ``if upto is not None:`` (the same answer every step)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from graphlint.check import run
from graphlint.check_settings import resolve
from graphlint.config_file import load_config

NET = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, n: int, vocab: int):
        super().__init__()
        self.emb = nn.Embedding(vocab, n)
        self.head = nn.Linear(n, vocab)
        self.register_buffer("bias", torch.ones(1, 1, 512, 512))
        self.k = torch.zeros(1, 512, n)

    def forward(self, ids: torch.Tensor, where: torch.Tensor, upto: int | None = None) -> torch.Tensor:
        x = self.emb(ids)
        self.k.index_copy_(1, where, x)
        mask = self.bias.index_select(2, where)
        if upto is not None:
            mask = mask[..., :upto]  # SLICE
            keys = self.k[:, :upto]  # SLICE
        else:
            keys = self.k
        att = (x @ keys.transpose(1, 2)).masked_fill(mask[0] == 0, -1e9)
        return self.head(att.softmax(-1) @ keys)
"""

GEN = """
import functools

import torch

from pkg.net import Net


def pick(model: Net, where: torch.Tensor, ids: torch.Tensor, upto: int | None = None) -> torch.Tensor:
    logits = model(ids, where, upto=upto)
    return logits[:, -1].argmax(-1, keepdim=True)


def log_progress(n: int) -> None:
    print(f"{n} tokens")


def keep(out: list, n: int) -> list:
    return [out[i] for i in range(n)]


def run(model: Net, prompt: torch.Tensor, budget: int, max_len: int) -> list[int]:
    {bind}
    filled = prompt.size(0)
    where = torch.arange(0, filled, device=prompt.device)
    tok = prompt
    out = []
    for _ in range(budget):
        tok = {call}
        out.append(tok.item())
        where = where[-1:] + 1
        log_progress(filled)
        filled += 1
    return keep(out, filled)
"""

COMPILED = 'step = torch.compile(pick, mode="reduce-overhead")'


def findings(tmp_path: Path, monkeypatch, bind: str, call: str, gen: str = GEN) -> dict[tuple[str, int], tuple[str, str]]:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "net.py").write_text(textwrap.dedent(NET))
    (pkg / "gen.py").write_text(textwrap.dedent(gen).replace("{bind}", bind).replace("{call}", call))
    (tmp_path / "pyproject.toml").write_text("[tool.graphlint]\n")
    monkeypatch.chdir(tmp_path)
    settings = resolve(load_config(cwd=tmp_path), paths=["pkg"], jobs=1, use_cache=False)
    return {(Path(f.path).name, f.line): (f.rule, f.severity.value if hasattr(f.severity, "value") else str(f.severity))
            for f in run(settings).findings}


SLICES = [i + 1 for i, line in enumerate(textwrap.dedent(NET).splitlines()) if "# SLICE" in line]


@pytest.mark.parametrize("bind, call", [
    (COMPILED, "step(model, where, tok.view(1, -1), upto=filled)"),  # a local bound to the compiled step, keyword
    (COMPILED, "step(model, where, tok.view(1, -1), filled)"),  # positional
])
def test_a_counter_the_token_loop_advances_slices_the_compiled_forward(tmp_path, monkeypatch, bind, call):
    found = findings(tmp_path, monkeypatch, bind, call)
    assert {line for (path, line), (rule, _) in found.items() if path == "net.py" and rule == "GL308"} == set(SLICES)
    assert all(found[("net.py", line)][1] == "error" for line in SLICES)
    assert not any(rule == "GL309" for rule, _ in found.values())  # ``if upto is not None:`` is no per-step branch
    # the counter only logged, and bounding a host ``range()``: nothing
    assert not any(path == "gen.py" and rule.startswith("GL3") for (path, _), (rule, _) in found.items())


def test_a_module_level_compile_of_the_step_function(tmp_path, monkeypatch):
    gen = GEN.replace("def run(", 'pick = torch.compile(pick, mode="reduce-overhead")\n\n\ndef run(')
    found = findings(tmp_path, monkeypatch, "pass", "pick(model, where, tok.view(1, -1), upto=filled)", gen)
    assert {line for (path, line), (rule, _) in found.items() if path == "net.py" and rule == "GL308"} == set(SLICES)


@pytest.mark.parametrize("call", [
    "step(model, where, tok.view(1, -1), upto=max_len)",  # a static length: one graph for every token
    "step(model, where, tok.view(1, -1))",  # no length at all
])
def test_a_static_length_or_none_is_no_per_step_int(tmp_path, monkeypatch, call):
    found = findings(tmp_path, monkeypatch, COMPILED, call)
    assert not any(rule in ("GL308", "GL309", "GL310") for rule, _ in found.values())
    read = next(i + 1 for i, line in enumerate(textwrap.dedent(GEN).splitlines()) if ".item()" in line)
    assert found[("gen.py", read)] == ("GL101", "info")  # the by-design single read of the sampled token


def test_a_loop_that_feeds_nothing_back_passes_no_per_step_int(tmp_path, monkeypatch):
    """A loop over chunks advancing an offset: the same offsets every step, nothing to re-record."""
    gen = GEN.replace(
        "    for _ in range(budget):\n        tok = {call}\n",
        "    for _ in range(budget):\n        chunk = step(model, where, prompt.view(1, -1), upto=filled)\n"
        "        tok = chunk\n")
    found = findings(tmp_path, monkeypatch, COMPILED, "unused", gen)
    assert not any(rule == "GL308" for rule, _ in found.values())


def test_a_read_of_the_loops_own_position_after_the_replay_is_no_result_read(tmp_path, monkeypatch):
    """The sampled token's read stays the by-design one (``info``); ``where.sum().item()`` after the
    replay reads the loop's own device position, which the step did not produce: a sync of its own."""
    gen = GEN.replace("        filled += 1\n", "        filled += 1\n        last = where.sum().item()\n"
                      "        print(last)\n")
    found = findings(tmp_path, monkeypatch, COMPILED, "step(model, where, tok.view(1, -1), upto=max_len)", gen)
    lines = textwrap.dedent(gen).splitlines()
    token = next(i + 1 for i, line in enumerate(lines) if "tok.item()" in line)
    position = next(i + 1 for i, line in enumerate(lines) if "where.sum().item()" in line)
    assert found[("gen.py", token)] == ("GL101", "info")
    assert found[("gen.py", position)] == ("GL101", "warning")


def test_what_a_call_given_a_position_returns_is_no_per_step_int(monkeypatch):
    """dsv4's eager block: ``attn_out = self.attn.attend_eager(..., start, ...)`` is tainted by the
    position it was given, and so is ``h`` unpacked from ``self.ffn_input(attn_out, ...)``; passed
    on, that taint is no per-step int: ``MoE.forward_grouped``'s ``torch.zeros(h.shape[0], ...)``
    stays a per-step allocation (GL201), not a shape sized by a position (GL310)."""
    repo = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(repo)
    settings = resolve(load_config(cwd=repo), paths=["dsv4"], jobs=1, use_cache=False)
    moe = [(f.line, f.rule) for f in run(settings).findings if f.path.endswith("dsv4/moe.py")]
    zeros = next(i + 1 for i, line in enumerate((repo / "dsv4/moe.py").read_text().splitlines())
                 if "out = torch.zeros(h.shape[0]" in line)
    assert (zeros, "GL201") in moe and (zeros, "GL310") not in moe
