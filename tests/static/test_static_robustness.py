"""Never crash: bad bytes, bad syntax, huge files, broken rules, user rule packs."""

from __future__ import annotations

import pickle
import time
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from static_helpers import analyze, builtin_rules, codes, options, summarize

from graphlint.rules import RuleError, load_rules
from graphlint.static.link import link
from graphlint.static.matchers import build_matchers
from graphlint.static.summarize import summarize_file


def one(src: bytes | str, **kw):
    (summary,) = summarize({"m.py": src}, **kw)
    return summary


def test_syntax_error_is_an_error_entry_with_its_position():
    s = one(b"def decode(x:\n    return x\n")
    assert s.data is None and len(s.errors) == 1
    line, col, message = s.errors[0]
    assert (line, col, message) == (1, 11, "syntax error: '(' was never closed")  # Python's words and place
    (error,) = one(b"x = = 1\n").errors
    assert error == (1, 5, "syntax error: invalid syntax")
    (error,) = one(b"x = 1\n(pars): bool = True\n").errors  # Python accepts it, libcst 1.9 does not
    assert error[2].startswith("valid Python that libcst cannot parse")


def test_non_utf8_without_cookie_cannot_be_decoded():
    s = one(b"x = '\xff\xfe'\n")
    assert s.errors and "cannot decode" in s.errors[0][2]


def test_pep263_cookie_is_honoured():
    src = "# -*- coding: latin-1 -*-\nimport torch\n\ndef decode(x):\n    s = 'caf\xe9'\n    return x.item()\n"
    s = one(src.encode("latin-1"))
    assert s.errors == [] and [c.code for c in s.data.candidates] == ["GL101"]
    assert s.data.candidates[0].line == 6


def test_form_feeds_do_not_shift_the_reported_line_text():
    src = 'def decode(x):\n    """doc\x0c\n\x0c\n    more"""\n    return x.item()\n'
    (finding,) = analyze({"m.py": src})
    assert (finding.line, finding.col, finding.line_text) == (5, 12, "return x.item()")


def test_bom_empty_file_and_null_bytes():
    assert one(b"\xef\xbb\xbfdef decode(x):\n    return x.item()\n").errors == []
    empty = one(b"")
    assert (empty.errors, empty.lines, empty.data.candidates) == ([], 0, [])
    nul = one(b"x = 1\ny = '\x00'\n")
    assert nul.errors and nul.errors[0][0] == 2


def test_summaries_pickle_and_carry_line_counts():
    s = one("import torch\n\ndef decode(x):\n    return x.item()\n")
    assert s.lines == 4
    again = pickle.loads(pickle.dumps(s))
    assert again.data.candidates == s.data.candidates


@pytest.mark.slow
def test_fifty_thousand_lines_are_fast():
    body = "".join(f"def f{i}(x):\n    y = x + {i}\n    return y\n\n" for i in range(12500))
    start = time.perf_counter()
    s = one(body + "def decode(x):\n    return x.item()\n")
    assert s.lines > 50_000 and s.errors == []
    assert time.perf_counter() - start < 60


def test_deeply_nested_expression_is_an_error_not_a_crash():
    s = one("x = " + "(" * 400 + "1" + ")" * 400 + "\n")
    assert s.errors or s.data is not None


def test_columns_count_characters_and_multiline_statements_point_at_the_call():
    src = "import torch\n\ndef decode(x):\n    ü = foo(\n        1,\n        x.item(),\n    )\n    return ü\n"
    (f,) = analyze({"m.py": src})
    assert (f.line, f.col, f.line_text) == (6, 9, "x.item(),")


def test_an_internal_error_in_one_rule_is_reported_and_the_rest_still_runs(monkeypatch):
    from graphlint.static.matchers import truth_test

    def boom(self, node, ctx):
        raise RuntimeError("matcher bug")

    monkeypatch.setattr(truth_test.TruthTest, "visit", boom)
    s = one("import torch\n\ndef decode(x):\n    if x:\n        pass\n    return x.item()\n")
    assert len(s.errors) == 1 and "GL105" in s.errors[0][2] and "tensor-truth-test" in s.errors[0][2]
    assert s.errors[0][0] == 4  # the statement where the rule broke
    assert [c.code for c in s.data.candidates] == ["GL101"]


def write_pack(tmp_path, text: str):
    path = tmp_path / "team.yaml"
    path.write_text(text)
    return path


def test_user_rule_pack_declares_a_syncing_kernel_wrapper(tmp_path):
    pack = write_pack(
        tmp_path,
        """
rules:
  - code: GL181
    name: team-sync-launch
    category: host-sync
    severity: error
    message: "`sync_launch` synchronizes the stream"
    why: it calls cudaStreamSynchronize inside the C++ wrapper
    fix: use launch_async
    matcher: function-call
    params: {callees: [mylib.kernels.sync_launch]}
    bad: |
      from mylib.kernels import sync_launch
      def decode(x):
          sync_launch(x)
      #   ^ GL181
    good: |
      from mylib.kernels import launch_async
      def decode(x):
          launch_async(x)
""",
    )
    rules = load_rules([pack])
    rule = rules["GL181"]
    assert codes(analyze({"m.py": rule.bad[0]}, rules=rules)) == ["GL181"]
    assert analyze({"m.py": rule.good[0]}, rules=rules) == []
    src = "import mylib.kernels as K\n\ndef decode(x):\n    K.sync_launch(x)\n"
    assert codes(analyze({"m.py": src}, rules=rules)) == ["GL181"]
    own = "def sync_launch(x):\n    pass\n\ndef decode(x):\n    sync_launch(x)\n"
    assert codes(analyze({"src/mylib/kernels.py": own}, rules=rules)) == ["GL181"]
    assert analyze({"src/other.py": own}, rules=rules) == []


@pytest.mark.parametrize(
    ("matcher", "params", "message"),
    [
        ("regex-magic", "{}", "unknown matcher 'regex-magic'"),
        ("method-call", "{methods: [item], colour: red}", "has no parameter 'colour'"),
        ("method-call", "{}", "needs a non-empty 'methods' list"),
        ("function-call", "{callees: [x], scope: sometimes}", "scope must be one of"),
        ("device-copy", "{target: moon}", "target must be"),
    ],
)
def test_bad_matcher_declarations_are_rule_errors(tmp_path, matcher, params, message):
    pack = write_pack(
        tmp_path,
        f"""
rules:
  - code: GL182
    name: team-rule
    category: host-sync
    severity: error
    message: m
    why: w
    fix: f
    matcher: {matcher}
    params: {params}
""",
    )
    with pytest.raises(RuleError, match=message):
        build_matchers(load_rules([pack]))


def test_a_rule_error_at_summarize_time_is_an_error_entry_not_an_exception():
    rules = dict(builtin_rules())
    rules["GL101"] = replace(rules["GL101"], matcher="nope")
    s = summarize_file("m.py", b"x = 1\n", rules, options(rules))
    assert s.errors and "unknown matcher" in s.errors[0][2]


# -- property test: generated and mutated Python never crashes the analyzer ----------------

HEADERS = [
    "import torch\nimport torch as T\nfrom torch import nn\nfrom . import sibling\nfrom .. import up\n",
    "# -*- coding: latin-1 -*-\nimport torch\n",
    "",
]
STATEMENTS = [
    "y = x.item()", "if x:\n    pass", "self.pos += 1", "y = x[x > 0]", "buf[0] = pos",
    "with torch.cuda.graph(g):\n    torch.cuda.set_device(0)",
    "for layer in self.layers:\n    x = layer(x.to(x.device))",
    "self.layers = nn.ModuleList([M() for _ in range(2)])",
    "x = torch.tensor([pos], device='cuda')  # graphlint: ignore",
    "f = lambda: x.cpu()", "match x:\n    case 1:\n        pass", "try:\n    pass\nexcept E:\n    pass",
    "if self._runner is None:\n    self._runner = sibling.build()", "cache[:, self.pos] = x", "return T.where(x > 0)",
    "while pos < 3:\n    pos += 1", "async def inner():\n    await x", "global G", "del x", "x = yield",
    "x = [c for c in range(pos) if c]", "x: torch.Tensor = up.f(x)", "super().forward(x)", "assert x.all(), 'm'",
]


def program(header: str, methods: list[list[str]]) -> str:
    out = [header, "class M(nn.Module):"]
    for i, body in enumerate(methods):
        out.append(f"    def forward{i}(self, x, pos: int, g=None, buf=None, cache=None):")
        out.extend("        " + line for stmt in body or ["pass"] for line in stmt.split("\n"))
    if not methods:
        out.append("    pass")
    return "\n".join(out) + "\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    header=st.sampled_from(HEADERS),
    methods=st.lists(st.lists(st.sampled_from(STATEMENTS), max_size=6), max_size=4),
    cut=st.integers(min_value=0, max_value=600),
    junk=st.binary(max_size=6),
    drop=st.integers(min_value=0, max_value=40),
)
@pytest.mark.slow
def test_generated_and_mutated_python_never_crashes(header, methods, cut, junk, drop):
    rules = builtin_rules()
    opts = options(rules)
    source = program(header, methods).encode("latin-1")
    lines = source.split(b"\n")
    variants = [
        source,
        source[:cut] + junk + source[cut:],
        b"\n".join(lines[:drop] + lines[drop + 1 :]),
        source.replace(b"    ", b"  ", 1),
    ]
    summaries = []
    for i, variant in enumerate(variants):
        summary = summarize_file(f"pkg/sub/m{i}.py", variant, rules, opts)
        assert all(isinstance(e, tuple) and len(e) == 3 and isinstance(e[2], str) for e in summary.errors)
        assert not any("internal error" in e[2] for e in summary.errors), summary.errors
        summaries.append(summary)
    assert summaries[0].data is not None  # the unmutated program is valid Python
    for finding in link(summaries, rules, opts):
        assert finding.line >= 1 and finding.col >= 1
