"""Compound conditions and values (:mod:`graphlint.static.compound`): an operand that runs only
when an earlier one decides so (``b`` in ``a and b``, ``a or b``, the sides of ``x if c else y``)
is dead where no value reaching the function makes it run; ``a or b``, ``a and b`` and ``x if c
else y`` are values that decide later tests. Counter-cases: an operand evaluated first, a value
that does take the branch, an undecided first operand."""

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
        textwrap.indent(textwrap.dedent(body).lstrip("\n"), " " * 8)


def run(args: str, body: str) -> list[int]:
    findings = analyze({"m.py": LOOP.format(args=args), "n.py": model_with(body)})
    return sorted(f.line for f in findings if f.path == "n.py")


SHORT_AND = """
if mask is not None and mask.sum().item() > 0:
    return x
return x
"""


def test_the_right_operand_of_and_is_dead_when_the_left_is_false():
    assert run("", SHORT_AND) == []


def test_it_stays_reported_when_the_mask_is_passed():
    assert run(", mask=x + 1", SHORT_AND) == [5]
    assert run(", mask=pick(x)", SHORT_AND) == [5]


def test_an_operand_evaluated_first_is_never_guarded():
    first = "if mask.sum().item() > 0 and mask is not None:\n    return x\nreturn x\n"
    assert run("", first) == [5]


def test_an_undecided_first_operand_leaves_the_rest_reported():
    undecided = "if x.any() and mask.sum().item() > 0:\n    return x\nreturn x\n"
    assert 5 in run("", undecided)


def test_or_guards_its_right_operand_by_the_left_being_false():
    short_or = 'if mode == "decode" or x.sum().item() > 0:\n    return x\nreturn x\n'
    assert run("", short_or) == []
    assert run(', mode="prefill"', short_or) == [5]


def test_not_and_nesting():
    nested = 'if not (mask is None or mode != "decode") and (x.max().item() > 0 or x.sum().item() > 0):\n' \
             '    return x\nreturn x\n'
    assert run("", nested) == []
    assert run(", mask=x + 1", nested) == [5, 5]


def test_the_sides_of_a_conditional_expression():
    ifexp = "y = mask.sum().item() if mask is not None else x.max()\nreturn y\n"
    assert run("", ifexp) == []
    assert run(", mask=x + 1", ifexp) == [5]
    other = 'y = x if mode == "decode" else x.sum().item()\nreturn y\n'
    assert run("", other) == []
    assert run(', mode="prefill"', other) == [5]


def test_compound_values_decide_later_tests():
    for bind in ('m = mask if mode == "decode" else x + 1', "m = mask or None", "m = mask and x + 1"):
        body = f"{bind}\nif m is not None:\n    x.sum().item()\nreturn x\n"
        assert run("", body) == [], bind
        assert run(", mask=x + 1", body) == [7], bind
    # a side that is unknown and may be taken: undecided
    body = 'm = mask if mode == "decode" else pick(x)\nif m is not None:\n    x.sum().item()\nreturn x\n'
    assert run("", body) == []
    assert run(', mode="prefill"', body) == [7]


def test_a_conditional_expression_as_a_condition():
    body = 'if (mask if mode == "decode" else x + 1) is not None:\n    x.sum().item()\nreturn x\n'
    assert run("", body) == []
    assert run(', mode="prefill"', body) == [6]
    test = 'if (mask is not None) if mode == "decode" else True:\n    x.sum().item()\nreturn x\n'
    assert run("", test) == []
    assert run(', mode="prefill"', test) == [6]


def test_a_tensor_truth_test_in_a_guarded_operand():
    """GL105 reads each operand of the test on its own: one the left operand guards is dead with it."""
    body = "if mask is not None and torch.any(x):\n    return x * 2\nreturn x\n"
    assert run("", body) == []
    assert run(", mask=x + 1", body) == [5]
    first = "if torch.any(x) and mask is not None:\n    return x * 2\nreturn x\n"
    assert run("", first) == [5]
