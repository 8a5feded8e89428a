"""GL207 on state carried across steps, not on activations (branch ``growcaches``, issue 19;
``fixtures/static/growcaches``): the memory a helper returns grown, a cache handed in and stored on
the returned object, a list the step loop appends to and joins whole are reported; a local the
call computed and joined (a head join, the text query), and the caller's tensor joined and consumed,
are not."""

from __future__ import annotations

from pathlib import Path

from static_helpers import analyze

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "static"


def _files() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((FIXTURES / "growcaches").glob("*.py"))}


def _lines(files: dict[str, str], path: str) -> list[int]:
    return sorted(f.line for f in analyze(files) if f.path == path and f.rule == "GL207")


def _marked(text: str, mark: str = "# GROWS") -> list[int]:
    return [i for i, line in enumerate(text.splitlines(), 1) if mark in line]


def test_carried_state_grows_and_activations_do_not():
    files = _files()
    assert _lines(files, "layers.py") == _marked(files["layers.py"])
    assert _lines(files, "generate.py") == _marked(files["generate.py"])


def test_the_cache_grows_only_when_the_object_holding_it_is_handed_back():
    files = _files()
    files["layers.py"] = files["layers.py"].replace("return score, out", "return score, None")
    grows = [n for n in _marked(files["layers.py"]) if "cache" not in files["layers.py"].splitlines()[n - 1]]
    assert _lines(files, "layers.py") == [grows[0]]


def test_a_list_joined_once_after_the_loop_is_no_growing_tensor():
    files = _files()
    files["generate.py"] = files["generate.py"].replace("generated.append(tok)", "pass")
    assert _lines(files, "generate.py") == []


def test_a_local_joined_round_a_loop_still_grows():
    """``out`` computed before the loop and joined onto in it: carried round, every iteration;
    ``step``, computed in the loop and joined there, is this iteration's activation."""
    src = '''
import torch

class M(torch.nn.Module):
    def forward(self, x):
        return x.float()

def run(model: M, x, steps):
    out = model(x)
    for _ in range(steps):
        step = model(x)
        step = torch.cat([step, x], dim=-1)
        out = torch.cat([out, step], dim=-1)  # GROWS
        x = step.argmax(-1)
        if out.sum().item() > 0:
            break
    return out
'''
    assert _lines({"m.py": src}, "m.py") == _marked(src)


def test_a_list_appended_under_a_test_grows_per_frame_not_per_step():
    """Appended only on some steps (once a frame), the join is not a per-step growth."""
    files = _files()
    files["generate.py"] = files["generate.py"].replace(
        "        generated.append(tok)", "        if steps > 4:\n            generated.append(tok)")
    assert _lines(files, "generate.py") == []
