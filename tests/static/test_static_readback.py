"""Values read back from the device (``.item()``, ``.tolist()``, ``int(t)``) and what is
computed from them, used as an index, a branch condition or a size: GL311-GL313."""

from __future__ import annotations

from static_helpers import analyze


def found(source: str) -> list[tuple[int, str]]:
    return sorted((f.line, f.rule) for f in analyze({"step.py": source}))


MOE = """
import torch

def decode_step(h: torch.Tensor, ids: torch.Tensor, w: torch.Tensor, out: torch.Tensor, top_k: int):
    order = ids.argsort(stable=True)
    counts = torch.bincount(ids, minlength=w.shape[0]).tolist()
    out.zero_()
    offset = 0
    for expert, count in enumerate(counts):
        if count == 0:
            continue
        slots = order[offset : offset + count]
        rows = slots // top_k
        out.index_add_(0, rows, h[rows] @ w[expert])
        offset += count
    return out
"""


def test_grouped_moe_reports_the_branch_the_slice_and_the_filtered_expert_not_the_sync_twice():
    # line 14: ``w[expert]`` -- which experts get past ``if count == 0: continue`` is the data's choice
    assert found(MOE) == [(6, "GL102"), (6, "GL301"), (10, "GL312"), (12, "GL311"), (14, "GL311")]


def test_a_branch_on_a_read_back_makes_the_loop_targets_data_chosen_inside_it():
    source = """
    import torch

    def decode_step(x: torch.Tensor, t: torch.Tensor, w: torch.Tensor, limit: int):
        for i, row in enumerate(w):
            if i > limit:
                continue
            x = x + w[i]
        for i, n in enumerate(t.tolist()):
            if n > 0:
                x = x + w[i]
            else:
                x = x - w[i]
            x = x * w[i]
        return x
    """
    assert found(source) == [(9, "GL102"), (10, "GL312"), (11, "GL311"), (13, "GL311")]


def test_an_accumulated_offset_is_a_read_back_on_its_own():
    source = """
    import torch

    def decode_step(x: torch.Tensor, counts: torch.Tensor):
        offset = 0
        for c in counts.tolist():
            offset += c
        return x[offset]
    """
    assert found(source) == [(6, "GL102"), (8, "GL311")]


def test_direct_read_back_is_only_the_sync():
    source = """
    import torch

    def decode_step(x: torch.Tensor, i: torch.Tensor):
        if i.item() > 0:
            x = x * 2
        return x[i.item()]
    """
    assert found(source) == [(5, "GL101"), (7, "GL101")]


def test_lengths_rebinding_tensors_and_bounds_checks_are_not_read_backs():
    source = """
    import torch

    def decode_step(x: torch.Tensor, t: torch.Tensor, cap: int):
        counts = t.tolist()
        n = len(counts)
        y = x[:n]
        back = torch.tensor(counts)
        z = x[back]
        m = int(t.sum())
        if m > cap:
            raise ValueError("too many tokens")
        m = x.shape[0]
        return y + z + x[:m]
    """
    # ``torch.tensor(counts)`` builds a tensor from the host list every step (GL205), not an index
    assert found(source) == [(5, "GL102"), (8, "GL205"), (10, "GL104")]


def test_comprehension_and_split_sizes():
    source = """
    import torch

    def decode_step(x: torch.Tensor, t: torch.Tensor):
        parts = [x[:c] for c in t.tolist()]
        sizes = t.tolist()
        return parts, torch.split(x, sizes), torch.zeros(sizes[0]), x.split(sizes), x.view(sizes[0], -1)
    """
    assert found(source) == [(5, "GL102"), (5, "GL311"), (6, "GL102")] + [(7, "GL313")] * 4


def test_writing_a_read_back_into_a_tensor_is_a_python_scalar_write():
    source = """
    import torch

    def decode_step(buf: torch.Tensor, t: torch.Tensor):
        first = t.tolist()[0]
        buf[0] = first
        return buf
    """
    assert found(source) == [(5, "GL102"), (6, "GL306")]


def test_cold_code_is_not_reported():
    source = """
    import torch

    def summary(x: torch.Tensor, t: torch.Tensor):
        n = t.item()
        return x[:n]
    """
    assert found(source) == []
