"""The eager per-token loop's read-back of its step's result (graphlint/static/stepresult.py): the
first read of what the model call produced, in an iteration, is ``info`` (by design once per step);
a second read, a read that gates the step before the model call, a read inside the model and a
read whose value nothing uses keep their severity."""

from __future__ import annotations

import textwrap

from static_helpers import TOY_MODEL, analyze, loop_severities

from graphlint.static.stmtpaths import dominates, encode_path, follows_a_read

MODEL = TOY_MODEL
severities = loop_severities


def test_the_first_read_of_the_sampled_token_is_info_and_a_second_read_is_an_error():
    found = severities("""
    from model import Model

    def generate(model: Model, tok, steps: int, eos: int):
        out = []
        for _ in range(steps):
            logits = model(tok)
            tok = logits.argmax(-1)
            out.append(tok.item())
            if tok.item() == eos:
                break
        return out
    """)
    assert found == {(9, "GL101"): "info", (10, "GL101"): "error"}


def test_a_read_that_gates_the_step_before_the_model_call_keeps_its_severity():
    found = severities("""
    from model import Model

    def generate(model: Model, tok, steps: int, stop: set):
        out = []
        for _ in range(steps):
            if tok.item() in stop:
                break
            logits = model(tok)
            tok = logits.argmax(-1)
            out.append(tok.item())
        return out
    """)
    assert found == {(7, "GL101"): "error", (11, "GL101"): "info"}


def test_a_callback_after_the_model_call_reads_first_and_the_loop_reads_second():
    found = severities("""
    from model import Model

    def show(x, eos: int):
        text = str(x.tolist())
        if x.item() == eos:
            return None
        return text

    def generate(model: Model, tok, steps: int, eos: int):
        ids = []
        for _ in range(steps):
            logits = model(tok)
            tok = logits.argmax(-1)
            ids.append(tok)
            show(ids[-1], eos)
            if ids[-1].item() == eos:
                break
        return ids
    """)
    assert found == {(5, "GL102"): "info", (6, "GL101"): "error", (17, "GL101"): "error"}


def test_each_exclusive_branch_has_its_own_first_read_and_what_follows_it_in_the_branch_is_second():
    found = severities("""
    import torch
    from model import Model

    def accept(logits, cands, greedy: bool):
        if greedy:
            n = (cands == logits.argmax(-1)).sum()
            if n.item() == 0:
                return 0
            return n
        n = (cands == logits.topk(2).indices[0]).sum()
        if n.item() == 0:
            return 0
        keep = torch.nonzero(cands == n)
        return keep

    def generate(model: Model, tok, cands, steps: int, greedy: bool):
        for _ in range(steps):
            logits = model(tok)
            n = accept(logits, cands, greedy)
            tok = logits.argmax(-1) + n
        return tok
    """)
    assert found == {(8, "GL101"): "info", (12, "GL101"): "info", (14, "GL302"): "error"}


def test_a_read_whose_value_nothing_uses_is_no_by_design_read():
    found = severities("""
    from model import Model

    def generate(model: Model, tok, steps: int):
        out = []
        for _ in range(steps):
            logits = model(tok)
            _peak = logits.max().item()
            tok = logits.argmax(-1)
            out.append(tok.item())
        return out
    """)
    assert found == {(8, "GL101"): "error", (10, "GL101"): "info"}


def test_a_read_inside_the_model_keeps_its_severity():
    model = MODEL + """
    def forward(self, tok):
        if tok.max().item() > 7:
            tok = tok.clamp(max=7)
        return self.proj(torch.nn.functional.one_hot(tok, 8).float())
"""
    model = model.replace("\n    def forward", "\n    def _unused_forward", 1)
    findings = analyze({"model.py": textwrap.dedent(model), "run.py": textwrap.dedent("""
    from model import Model

    def generate(model: Model, tok, steps: int):
        out = []
        for _ in range(steps):
            tok = model(tok).argmax(-1)
            out.append(tok.item())
        return out
    """)})
    found = {(f.path, f.rule): f.severity for f in findings}
    assert found[("model.py", "GL101")] == "error"
    assert found[("run.py", "GL101")] == "info"


def test_a_read_of_something_the_step_did_not_produce_keeps_its_severity():
    found = severities("""
    from model import Model

    def generate(model: Model, tok, budget, steps: int):
        out = []
        for _ in range(steps):
            logits = model(tok)
            tok = logits.argmax(-1)
            if budget.item() < 0:
                break
            out.append(tok.item())
        return out
    """)
    assert found == {(9, "GL101"): "error", (11, "GL101"): "info"}


def test_a_test_of_the_accepted_length_is_its_first_read_and_a_batch_stop_check_never_is():
    found = severities("""
    import torch
    from model import Model

    def accept(logits: torch.Tensor, cands: torch.Tensor):
        n = (cands == logits.argmax(-1)).cumprod(-1).sum()
        if n == 0:
            return cands[:1]
        return cands[1:]

    def generate(model: Model, tok, cands, done: torch.Tensor, eos: int, steps: int):
        for _ in range(steps):
            logits = model(tok)
            tok = accept(logits, cands)
            done = done | (tok == eos)
            if done.all():
                break
        return tok
    """)
    assert found == {(7, "GL105"): "info", (16, "GL105"): "error"}


def test_a_stop_check_alone_keeps_its_severity():
    found = severities("""
    import torch
    from model import Model

    def generate(model: Model, tok, done: torch.Tensor, eos: int, steps: int):
        for _ in range(steps):
            tok = model(tok).argmax(-1)
            done = done | (tok == eos)
            if done.all():
                break
        return tok
    """)
    assert found == {(9, "GL105"): "error"}


def test_an_if_whose_every_arm_reads_the_result_comes_before_what_follows_it():
    found = severities("""
    import torch
    from model import Model

    def generate(model: Model, tok, steps: int, greedy: bool):
        out = []
        for _ in range(steps):
            logits = model(tok)
            if greedy:
                tok = logits.argmax(-1)
                n = tok.item()
            else:
                tok = torch.multinomial(logits.softmax(-1), 2, True)
                n = int(tok)
            out.append(tok.tolist())
        return out, n
    """)
    assert found == {(11, "GL101"): "info", (14, "GL104"): "info", (15, "GL102"): "error"}  # a draw reads nothing


def test_slicing_by_the_result_reads_it_and_the_next_read_is_the_second():
    found = severities("""
    import torch
    from model import Model

    def generate(model: Model, tok, cands: torch.Tensor, steps: int):
        out = []
        for _ in range(steps):
            logits = model(tok)
            n = (cands == logits.argmax(-1)).sum()
            kept = cands[: n + 1]
            out.append(kept.tolist())
            tok = kept[-1:]
        return out
    """)
    assert found == {(10, "GL111"): "info", (11, "GL102"): "error"}  # the slice is the first read


def test_dominance_by_statement_paths():
    def at(*levels):
        return encode_path(levels)

    top, later = at(("body", 0), ("body", 2)), at(("body", 0), ("body", 5))
    arm = at(("body", 0), ("body", 2), ("body", 1))
    assert dominates(top, later) and not dominates(later, top)
    assert dominates(top, arm)  # an ``if``'s test runs before its arms
    assert not dominates(arm, later)  # one arm of an ``if`` does not run on every way
    assert not dominates(arm, at(("body", 0), ("body", 2), ("orelse", 0)))
    assert dominates(top, top)  # the same statement: the caller orders by column
    test, body, other = at(("body", 4)), at(("body", 4), ("body", 0)), at(("body", 4), ("orelse", 0))
    after = at(("body", 5))
    assert not follows_a_read([body], after)  # only one arm reads
    assert follows_a_read([body, other], after)  # both arms read: the ``if`` always reads
    elif_arm = at(("body", 4), ("orelse", 0), ("body", 0))
    assert not follows_a_read([body, elif_arm], after)  # an ``elif`` without ``else`` may read nothing
    assert follows_a_read([body, elif_arm, at(("body", 4), ("orelse", 0), ("orelse", 0))], after)
    assert follows_a_read([test], after) and not follows_a_read([after], test)
    assert not dominates(at(("handlers.0", 1)), at(("body", 3)))  # other blocks are other suites


def test_a_read_a_helper_returns_to_a_caller_that_drops_it_is_unused():
    found = severities("""
    import torch
    from model import Model

    def peek(logits: torch.Tensor):
        return logits.max().item()

    def generate(model: Model, tok, steps: int):
        out = []
        for _ in range(steps):
            logits = model(tok)
            peek(logits)
            tok = logits.argmax(-1)
            out.append(tok.item())
        return out
    """)
    assert found == {(6, "GL101"): "error", (14, "GL101"): "info"}


def test_state_kept_on_self_is_the_result_too():
    found = severities("""
    import torch
    from model import Model

    class Runner:
        def __init__(self, model: Model):
            self.model, self.last = model, None

        def run(self, tok, steps: int):
            self.last = tok
            for _ in range(steps):
                self.last = self.model(self.last).argmax(-1)
                if self.last.item() == 0:
                    break
                print(self.last.tolist())
            return self.last
    """)
    # the eager loop's own stop test is a sync (f13miss); the print is the read the host needs
    assert found == {(13, "GL101"): "error", (15, "GL102"): "info"}


def test_a_wrapper_that_passes_the_result_on_leads_to_the_reader():
    found = severities("""
    from model import Model

    def show(x):
        text = str(x.tolist())
        if x.item() == 0:
            return None
        return text

    def generate(model: Model, tok, steps: int):
        def callback(t):
            return show(t)

        for _ in range(steps):
            tok = model(tok).argmax(-1)
            callback(tok)
        return tok
    """)
    assert found == {(5, "GL102"): "info", (6, "GL101"): "error"}


def test_a_helper_that_runs_the_model_it_is_handed_is_the_loops_model_call():
    """``run(model, tok)`` calls the model the loop hands it; another caller hands it something else,
    so the call graph resolves the helper's call per caller (graphlint/static/passedcalls.py): the
    loop's call of the helper is its model call, and the first read after it is the by-design one."""
    found = severities("""
    import torch
    from model import Model

    def run(fn, tok):
        return fn(tok)

    def score(tok):
        return tok * 2

    def warm(tok):
        return run(score, tok)

    def generate(model: Model, tok, steps: int):
        out = []
        for _ in range(steps):
            logits = run(model, tok)
            tok = logits.argmax(-1)
            out.append(tok.item())
            if tok.item() == 0:
                break
        return out
    """)
    assert found == {(19, "GL101"): "info", (20, "GL101"): "error"}


def test_a_host_round_trip_of_the_logits_is_no_read_of_the_result():
    """A numpy top-p filter: the logits read to the host, filtered and uploaded again, then sampled
    (graphlint/static/sidereads.py ``round_trip``): the result does not exist yet at the read, which
    keeps its severity; the eager loop's stop test after it is its own per-token sync."""
    found = severities("""
    import numpy as np
    import torch
    from model import Model

    def generate(model: Model, x, steps: int, top_p, eos: int):
        for _ in range(steps):
            logits = model(x)[0, -1]
            if top_p is not None:
                dev = logits.device
                logits = logits.cpu().numpy()
                order = np.argsort(logits)[::-1]
                logits[order[top_p:]] = -np.inf
                logits = torch.from_numpy(logits).to(dev)
            nxt = torch.softmax(logits, -1).argmax(-1)
            if nxt == eos:
                break
            x = torch.cat((x, nxt[None]), dim=1)
        return x
    """)
    assert found[(11, "GL103")] == "error" and found[(16, "GL105")] == "error"



def test_a_host_path_beside_the_device_path_is_no_round_trip():
    """The host arm of ``if probs.device.type == "cpu": ... else: ...`` samples on the host; the
    device arm reads its own value, and both return ``int(out)``: no pass runs both arms, so the host
    arm's read is no round trip (it stays the step's one read, as before)."""
    found = severities("""
    import numpy as np
    import torch
    from model import Model

    class Pipeline:
        def __init__(self, model: Model):
            self.model = model

        def pick(self, logits):
            probs = torch.softmax(logits.float(), dim=-1)
            if probs.device.type == "cpu":
                probs = probs.cpu().numpy()
                out = np.random.choice(a=len(probs), p=probs / np.sum(probs))
                return int(out)
            else:
                out = torch.multinomial(probs, num_samples=2, replacement=True)[0]
                return int(out)

        def generate(self, tok, steps: int, stop: set):
            found = []
            for _ in range(steps):
                out = self.model(tok)
                token = self.pick(out)
                if token in stop:
                    break
                found.append(token)
                tok = torch.tensor([token])
            return found
    """)
    # the host arm runs only with ``probs`` on the CPU, so its ``.cpu()`` copies nothing (branch hostslots:
    # ``devicenarrow.narrow_body``); the device arm's read is the step's one read, no round trip
    assert (13, "GL103") not in found and found[(18, "GL104")] == "info"
