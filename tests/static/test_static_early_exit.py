"""``if cond: return`` decides the rest of its block (:meth:`ValueFacts.early_exit`): the code after
an early exit that always happens is dead, the exit's body is dead when it never happens, and a
test on tensor shapes decides nothing."""

from __future__ import annotations

import textwrap

from static_helpers import DECODE_LOOP, analyze

LOOP = "\nimport torch\n" + DECODE_LOOP + """
def main():
    from n import M
    loop(M(), torch.zeros(3), 4)
"""


def model_with(body: str) -> str:
    return "import torch\n\nclass M(torch.nn.Module):\n    def forward(self, x, mask=None, mode=\"decode\"):\n" + \
        textwrap.indent(textwrap.dedent(body), " " * 8)


def lines(findings) -> list[int]:
    return sorted(f.line for f in findings if f.path == "n.py")


def run(args: str, body: str) -> list[int]:
    return lines(analyze({"m.py": LOOP.format(args=args), "n.py": model_with(body)}))


EXIT_THEN_SYNC = """
if mask is None:
    return x * 2
x.sum().item()
return x
"""


def test_the_rest_of_the_block_after_an_exit_that_always_happens_is_dead():
    assert run("", EXIT_THEN_SYNC) == []


def test_the_rest_is_live_when_the_exit_never_happens_and_the_exit_body_is_dead():
    sync_in_exit = "if mask is None:\n    x.max().item()\n    return x\nx.sum().item()\nreturn x\n"
    assert run(", mask=x + 1", sync_in_exit) == [8]  # only the rest: the loop always passes a mask


def test_an_unknown_value_decides_nothing():
    assert run(", mask=pick(x)", EXIT_THEN_SYNC) == [8]
    assert run(", mask=None if x is None else x", EXIT_THEN_SYNC) == [8]


def test_raise_continue_and_break_exit_too():
    for jump in ("raise ValueError(mode)", "return None"):
        body = f'if mode == "decode":\n    {jump}\nx.sum().item()\nreturn x\n'
        assert run("", body) == [], jump
    loop_body = 'for i in range(3):\n    if mode != "prefill":\n        {jump}\n    x.sum().item()\nreturn x\n'
    for jump in ("continue", "break"):
        assert run("", loop_body.format(jump=jump)) == [], jump
        assert run(', mode="prefill"', loop_body.format(jump=jump)) == [8], jump


def test_an_elif_chain_of_exits_adds_each_negation():
    chain = 'if mode == "prefill":\n    return x\nelif mask is None:\n    return x * 2\nx.sum().item()\nreturn x\n'
    assert run("", chain) == []
    assert run(', mode="prefill", mask=x + 1', chain) == []
    assert run(', mask=x + 1', chain) == [9]
    # a first branch that does not exit: the rest runs after it too, nothing is decided
    keeps = 'if mode == "decode":\n    x = x + 1\nelif mask is None:\n    return x\nx.sum().item()\nreturn x\n'
    assert run("", keeps) == [9]


def test_the_exit_only_covers_its_own_block():
    nested = 'if mode == "decode":\n    if mask is None:\n        return x\n    x.max().item()\nx.sum().item()\nreturn x\n'
    # the inner exit kills the inner rest (line 8); the outer rest (line 9) runs whatever it decides
    assert run(', mode=pick(x)', nested) == [9]


def test_a_shape_test_never_decides_the_rest():
    body = "if x.shape[-1] > 64:\n    return x * 2\nx.sum().item()\nreturn x\n"
    assert run("", body) == [7]


def test_bindings_after_exits_stay_decidable():
    """A name bound after early exits keeps its values: the exits' conditions are not copied into
    every binding (each read past them runs under them anyway), which kept long guard chains from
    making the name unknown."""
    guards = "".join(f"if mode == \"m{i}\" and mask is not None and x is None:\n    raise ValueError(mode)\n"
                     for i in range(6))
    body = guards + "pad = None\nif mask is not None:\n    pad = mask\nreturn self.pad_fn(torch.relu(x), pad)\n"
    model = model_with(body) + """
    def pad_fn(self, x: torch.Tensor, pad):
        if pad is not None:
            x.sum().item()
        return x
"""
    assert lines(analyze({"m.py": LOOP.format(args=""), "n.py": model})) == []
    assert lines(analyze({"m.py": LOOP.format(args=", mask=x + 1"), "n.py": model})) == [24]
