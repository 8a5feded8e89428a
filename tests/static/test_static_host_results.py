"""Which read-back after a replay is the host step's result: the eager loop's definition, shared.

graphlint/static/stepresult.py decides, for an eager per-token loop and for a captured engine's host
step loop alike (``host_result_reads``), which read of the step's result is the one the algorithm
needs (``info``):

- a read whose host value the function combines with the data it read (a min-p threshold read off
  the logits and applied back to them) is an *intermediate*: the sampler is still computing the
  step's result, so the read is no read of the result at all -- it keeps its severity (a warning in
  the host step, an error eagerly), and the read of the finished ids after it is still the one;
- a second read of the result, and a read per row, keep their severity in the host step too;
- a read whose value goes to the host only (an accepted count returned, the ids printed) is the one.
"""

from __future__ import annotations

import textwrap

from static_helpers import TOY_MODEL, analyze

ENGINE = TOY_MODEL + """

class Runner:
    def __init__(self, model: Model):
        self.model = model
        self.tok = torch.zeros(4, dtype=torch.long, device="cuda")
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.out = self.model(self.tok)

    def run(self, tok) -> torch.Tensor:
        self.tok.copy_(tok)
        self.graph.replay()
        return self.out.clone()
"""

SAMPLER = """
import torch


def cut_below(probs, floor):
    probs.masked_fill_(probs < floor, 0.0)


def sample(logits, min_p: float):
    probs = torch.softmax(logits, dim=-1)
    top = probs.max().item()
    cut_below(probs, top * min_p)
    return probs.argmax(-1)
"""


def severities(loop: str, files: dict[str, str] | None = None) -> dict[tuple[int, str], str]:
    sources = {"engine.py": ENGINE, "sampler.py": SAMPLER, **(files or {}), "run.py": textwrap.dedent(loop)}
    return {(f.line, f.rule): f.severity for f in analyze(sources) if f.path in ("run.py", "sampler.py")}


def test_a_threshold_the_sampler_reads_after_the_replay_is_no_result_read():
    found = severities("""
    from engine import Runner
    from sampler import sample

    def generate(runner: Runner, tok, steps: int, min_p: float, out: list):
        for _ in range(steps):
            logits = runner.run(tok)
            tok = sample(logits, min_p)
            out.append(tok.cpu())
        return out
    """)
    # the threshold (sampler.py:11) costs a sync every step; the ids' `.cpu()` is the step's one read
    assert found == {(11, "GL101"): "warning", (9, "GL103"): "info"}


def test_the_same_sampler_in_an_eager_loop_keeps_its_error():
    found = severities("""
    from engine import Model
    from sampler import sample

    def generate(model: Model, tok, steps: int, min_p: float, out: list):
        for _ in range(steps):
            logits = model(tok)
            tok = sample(logits, min_p)
            out.append(tok.cpu())
        return out
    """)
    assert found == {(11, "GL101"): "error", (9, "GL103"): "info"}


def test_a_read_that_only_reaches_the_host_is_the_one():
    found = severities("""
    from engine import Runner

    def accept(logits, draft):
        hits = (logits.argmax(-1) == draft).int().cumprod(-1)
        n = hits.sum().item()
        return draft[:, :n], n

    def generate(runner: Runner, tok, draft, steps: int, out: list):
        for _ in range(steps):
            logits = runner.run(tok)
            tok, n = accept(logits, draft)
            out.append(n)
        return out
    """)
    assert found == {(6, "GL101"): "info"}


def test_a_second_read_after_the_replay_is_a_warning():
    found = severities("""
    from engine import Runner

    def generate(runner: Runner, tok, steps: int, out: list):
        for _ in range(steps):
            tok = runner.run(tok).argmax(-1)
            n = tok[1].item()
            out.append(n)
            if tok[0].item() == 2:
                break
        return out
    """)
    assert found == {(7, "GL101"): "info", (9, "GL101"): "warning"}


def test_a_read_per_row_after_the_replay_is_a_warning():
    found = severities("""
    from engine import Runner

    def generate(runner: Runner, tok, steps: int, rows: int, out: list):
        for _ in range(steps):
            tok = runner.run(tok).argmax(-1)
            for r in range(rows):
                out.append(tok[r].item())
        return out
    """)
    assert found == {(8, "GL101"): "warning"}


def test_a_second_replay_in_the_iteration_makes_a_result_of_its_own():
    found = severities("""
    from engine import Runner

    def generate(draft: Runner, verify: Runner, tok, steps: int, out: list):
        for _ in range(steps):
            guess = draft.run(tok).argmax(-1)
            g = guess[0].item()
            tok = verify.run(guess).argmax(-1)
            t = tok[0].item()
            out.append((g, t))
            if tok[1].item() == 2:
                break
        return out
    """)
    # one read of each replay's result is the host's; reading the verifier's again is one too many
    assert found == {(7, "GL101"): "info", (9, "GL101"): "info", (11, "GL101"): "warning"}


def test_a_value_read_only_to_bind_an_index_is_no_intermediate():
    found = severities("""
    from engine import Runner

    def generate(runner: Runner, tok, table, steps: int, out: list):
        for _ in range(steps):
            logits = runner.run(tok)
            tok = logits.argmax(-1)
            n = tok[0].item()
            out.append(table[n])
        return out
    """)
    assert found == {(8, "GL101"): "info"}


def test_growth_in_the_host_step_is_a_local_carried_round_the_step_loop():
    """GL207 between replays (rules/allocation.yaml ``host_step: loop-carried``): the ids the step
    loop grows by torch.cat every token are reported (a warning: the host step's cost); a request's
    history grown by a method and a local joined once per call are not."""
    found = severities("""
    import torch
    from engine import Runner

    class Request:
        def __init__(self, ids):
            self.ids = ids

        def append(self, tok):
            self.ids = torch.cat([self.ids, tok])

    def guided(logits, extra):
        both = logits
        both = torch.cat([both, extra], dim=0)
        return both.argmax(-1)

    def generate(runner: Runner, tok, extra, req: Request, steps: int):
        seq = tok
        for _ in range(steps):
            logits = runner.run(tok)
            tok = guided(logits, extra)
            seq = torch.cat([seq, tok], dim=-1)
            req.append(tok)
        return seq
    """)
    assert found == {(22, "GL207"): "warning"}
