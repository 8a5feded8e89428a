"""Which read of an eager per-token loop is the one its algorithm needs, and what follows from a read.

- A read in a loop that visits every row or beam of the step, in the loop's function or in a helper
  it calls, is one transfer per element where one would do: never the by-design read
  (graphlint/static/stepresult.py ``per_element``); a loop that stops at the first rejected draft
  token decides one by one, and its read may be.
- A helper handed what an earlier step left (``tokens`` before this step's update rebinds it)
  re-reads the step before's result: not this step's (``StepResult``).
- ``if i == 0:`` of the per-token loop runs once per decode, not per token, and so does what only a
  call under it runs (graphlint/static/iterations.py).
- A function that runs or starts a per-token loop is never the model step, so the loop's logit
  filters stay its host logic (GL311/GL312 are not reported there), also when a decode-named
  driver above it reaches it (graphlint/static/entries.py ``eager_host_logic``).
- A loop index is data-chosen only by data read back before the loop (graphlint/static/readbacks.py).
"""

from __future__ import annotations

import textwrap

from static_helpers import TOY_MODEL, analyze, loop_severities

MODEL = TOY_MODEL
severities = loop_severities


def test_a_read_per_row_in_the_loop_is_never_the_by_design_read():
    found = severities("""
    from model import Model

    def generate(model: Model, tok, steps: int, rows: int):
        out = []
        for _ in range(steps):
            tok = model(tok).argmax(-1)
            for r in range(rows):
                out.append(tok[r].item())
        return out
    """)
    assert found == {(9, "GL101"): "error"}


def test_one_read_of_the_whole_batch_is_and_the_rows_are_host_values():
    found = severities("""
    from model import Model

    def generate(model: Model, tok, steps: int):
        out = []
        for _ in range(steps):
            tok = model(tok).argmax(-1)
            for t in tok.tolist():
                out.append(t)
        return out
    """)
    assert found == {(8, "GL102"): "info"}  # the loop's iterable is read once, before its body


def test_a_read_per_beam_in_a_helper_the_loop_calls_is_an_extra_read():
    found = severities("""
    import torch
    from model import Model

    def update(logits: torch.Tensor, beams: int):
        best = []
        for b in range(beams):
            best.append(logits[b].argmax().item())
        return best

    def generate(model: Model, tok, steps: int, beams: int):
        out = []
        for _ in range(steps):
            logits = model(tok)
            out.append(update(logits, beams))
            tok = logits.argmax(-1)
        return out
    """)
    assert found == {(8, "GL101"): "error"}


def test_a_loop_that_stops_at_the_first_rejection_decides_one_by_one():
    found = severities("""
    import torch
    from model import Model

    def generate(model: Model, tok, drafts: torch.Tensor, steps: int):
        out = []
        for _ in range(steps):
            logits = model(tok)
            for i in range(drafts.shape[0]):
                if logits[i].argmax() != drafts[i]:
                    break
                out.append(i)
            tok = logits.argmax(-1)
        return out
    """)
    assert found == {(10, "GL105"): "info"}


def test_a_helper_handed_the_previous_steps_tokens_rereads_them():
    found = severities("""
    import torch
    from model import Model

    def penalize(logits: torch.Tensor, tokens: torch.Tensor):
        seen = tokens.tolist()
        logits[:, seen] -= 1.0

    def generate(model: Model, tokens: torch.Tensor, steps: int):
        out = []
        for _ in range(steps):
            logits = model(tokens[:, -1])
            penalize(logits, tokens)
            tokens = torch.cat([tokens, logits.argmax(-1, keepdim=True)], dim=-1)
            out.append(tokens[:, -1].tolist())
        return out
    """)
    assert found[(6, "GL102")] == "error"  # what the step before left: a re-read
    assert found[(15, "GL102")] == "info"  # this step's token, read once


def test_a_read_on_the_first_iteration_only_runs_once_per_decode():
    found = severities("""
    from model import Model

    def generate(model: Model, tok, steps: int, keep: bool):
        first = None
        out = []
        for i in range(steps):
            logits = model(tok)
            if i == 0 and keep:
                first = logits[:, 0].softmax(-1).tolist()
            tok = logits.argmax(-1)
            out.append(tok.item())
            if i == 0:
                print(tok.item())
            else:
                print(tok.tolist())
        return out, first
    """)
    assert (10, "GL102") not in found  # once per decode: no per-step cost
    assert (14, "GL101") not in found
    assert found[(12, "GL101")] == "info"
    assert found[(16, "GL102")] == "error"  # the ``else`` runs every other step: a second read


def test_a_first_iteration_guard_of_a_nested_loop_still_runs_every_step():
    found = severities("""
    from model import Model

    def generate(model: Model, tok, steps: int, rows: int):
        out = []
        for _ in range(steps):
            tok = model(tok).argmax(-1)
            for r in range(rows):
                if r == 0:
                    out.append(tok.item())
        return out
    """)
    assert (10, "GL101") in found  # once per step, not once per decode: still reported


LOGIT_FILTER_ENGINE = """
import torch
from model import Model


class Stamps:
    def __init__(self, begin: int):
        self.begin = begin

    def apply(self, logits: torch.Tensor, tokens: torch.Tensor):
        for k in range(tokens.shape[0]):
            seq = tokens[k].tolist()
            last = len(seq) > 0 and seq[-1] >= self.begin
            if last:
                logits[k, self.begin :] = -1.0


class Task:
    def __init__(self, model: Model, begin: int):
        self.model, self.filters = model, [Stamps(begin)]

    def loop(self, tokens: torch.Tensor, steps: int):
        for _ in range(steps):
            logits = self.model(tokens[:, -1])
            for f in self.filters:
                f.apply(logits, tokens)
            tokens = torch.cat([tokens, logits.argmax(-1, keepdim=True)], dim=-1)
        return tokens


def decode(model: Model, tokens: torch.Tensor, steps: int):
    tokens = tokens.to("cuda")
    return Task(model, 3).loop(tokens, steps)
"""


def test_a_logit_filter_below_a_decode_named_driver_is_host_logic():
    found = severities(LOGIT_FILTER_ENGINE)
    assert found[(12, "GL102")] == "error"  # a per-row re-read of the tokens the step before left
    assert (14, "GL312") not in found and (15, "GL311") not in found  # the loop's host logic


def test_the_filters_branch_and_index_in_the_model_step_are_reported_but_not_the_row_number():
    model = MODEL + """
    def step(self, logits, tokens, begin: int):
        for k in range(tokens.shape[0]):
            seq = tokens[k].tolist()
            if seq[-1] >= begin:
                logits[k, begin:] = -1.0
        return logits
"""
    findings = analyze({"model.py": textwrap.dedent(model)}, entries=("model.py:Model.step",))
    found = {(f.line, f.rule) for f in findings}
    assert (16, "GL102") in found and (17, "GL312") in found  # the read and the branch capture would freeze
    assert (18, "GL311") not in found  # ``k`` is the row the loop visits whatever the data says


def test_a_loop_over_data_read_back_before_it_is_chosen_by_that_data():
    findings = analyze({"moe.py": """
    import torch

    def decode_step(x: torch.Tensor, w: torch.Tensor, ids: torch.Tensor):
        counts = torch.bincount(ids).tolist()
        out = torch.zeros_like(x)
        for expert, count in enumerate(counts):
            if count == 0:
                continue
            out += x * w[expert]
        return out
    """})
    found = {(f.line, f.rule) for f in findings}
    assert (8, "GL312") in found and (10, "GL311") in found


def test_what_a_call_on_the_first_iteration_only_runs_is_not_per_token():
    found = severities("""
    import torch
    from model import Model

    def language(logits: torch.Tensor):
        return logits[:, :4].argmax(-1).tolist()

    def peek(logits: torch.Tensor):
        return logits.sum().item()

    def generate(model: Model, tok, steps: int):
        lang, out = None, []
        for i in range(steps):
            logits = model(tok)
            if i == 0:
                lang = language(logits)
            if i == 0:
                peek(logits)
            peek(logits)
            tok = logits.argmax(-1)
        return lang, out
    """)
    assert (6, "GL102") not in found  # only the first step calls it
    assert (9, "GL101") in found  # also called every step


def test_a_counter_advanced_by_hand_guards_the_first_iteration_too():
    found = severities("""
    from model import Model

    def generate(model: Model, tok, eos: int):
        done = 0
        out, first = [], None
        while True:
            logits = model(tok)
            if done == 0:
                first = logits.max(-1).values.tolist()
            tok = logits.argmax(-1)
            out.append(tok.item())
            if len(out) > 8:
                break
            done += 1
        return out, first
    """)
    assert (10, "GL102") not in found
    assert found[(12, "GL101")] == "info"


def test_a_counter_advanced_only_under_a_branch_guards_nothing():
    found = severities("""
    from model import Model

    def generate(model: Model, tok, accept: bool):
        n = 0
        out = []
        while len(out) < 8:
            logits = model(tok)
            if n == 0:
                out.append(logits.max(-1).values.tolist())
            tok = logits.argmax(-1)
            if accept:
                n += 1
        return out
    """)
    assert (10, "GL102") in found
