"""A synchronize with nothing pending, or one the next read waits for anyway, is ``info``
(:mod:`graphlint.static.syncpending`, the README's synchronize rule); its twins stay reported."""

from pathlib import Path

import pytest

from test_static_fixture import assert_marker_severities, expected
from static_helpers import check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "syncpending"


@pytest.mark.parametrize("name", ["timed_stream.py", "pending_tail.py", "waited.py", "switched_timer.py",
                                  "host_helpers.py", "runner_waits.py", "timer_helpers.py"])
def test_each_synchronize_has_the_severity_its_marker_says(monkeypatch, tmp_path, name):
    result = check_fixture(monkeypatch, tmp_path, FIXTURES, name)
    files = {(FIXTURES / name).relative_to(ROOT).as_posix(): (FIXTURES / name).read_bytes()}
    assert {(f.path, f.line, f.rule) for f in result.findings if f.category != "meta"} == expected(files)
    assert_marker_severities(result.findings, files)


def sync_flags(body: str) -> list[set[str]]:
    """The unconditional ``sync-*`` flags of each synchronize of ``def f(model, ids, n, tokenizer):`` + ``body``."""
    from static_helpers import summarize

    source = "import time\nimport torch\n\n\ndef f(model, ids, n, tokenizer):\n" + body
    (summary,) = summarize({"m.py": source})
    return [{f for f in c.flags if f.startswith("sync-") and "-if:" not in f}  # conditional ones: at link time
            for c in summary.data.candidates if c.code == "GL106"]


READ_TAIL = """\
    out = []
    for _ in range(n):
        torch.cuda.synchronize()
        ids = model(ids).argmax(-1)
        out.append(ids.item())
{tail}"""


@pytest.mark.parametrize(("tail", "idle"), [
    ("", True),
    ("        print(tokenizer.decode(out), time.time())\n", True),
    ("        prompt = list(tokenizer('a b')['input_ids'])\n        print(prompt[1:])\n", True),
    ("        rows = list(ids)\n        print(rows[1:])\n", True),  # slicing a list launches nothing
    ("        rows = list(ids)\n        print(rows[0] + 1)\n", False),  # adding to its tensor element does
    ("        if len(out) > 8:\n            break\n", True),
    ("        ids = ids + 1\n", False),  # a launch on the device after the read
    ("        model.cache.advance()\n", False),  # a call the flow cannot see into
    ("        for x in model.cache:\n            pass\n", False),  # an iterator's next() may launch
    ("        try:\n            pass\n        except ValueError:\n            pass\n", False),  # not modelled
    ("        with model.profile():\n            pass\n", False),  # its exit may launch
    ("        with torch.no_grad():\n            pass\n", True),
    ("        try:\n            ids = ids + 1\n            continue\n        except ValueError:\n            pass\n"
     "        out.append(ids.item())\n", False),  # the continue goes round pending
    ("        if len(out) % 2:\n            continue\n        ids = ids * 2\n", False),
    ("        d = abs(ids)\n", False),  # Tensor.__abs__ launches a kernel
    ("        d = round(ids)\n", False),
    ("        d = abs(len(out))\n", True),  # a Python number's: host code
])
def test_nothing_pending_round_the_loop_only_when_every_way_back_ends_in_a_wait(tail, idle):
    flags = sync_flags(READ_TAIL.format(tail=tail))
    assert [any(f.startswith("sync-idle:") for f in fl) for fl in flags] == [idle]


def test_a_continue_before_the_read_leaves_the_step_pending():
    body = """\
    out = []
    for i in range(n):
        torch.cuda.synchronize()
        ids = model(ids).argmax(-1)
        if i % 2:
            continue
        out.append(ids.item())
"""
    assert sync_flags(body) == [set()]


def test_the_entry_of_a_loop_inside_another_may_be_on_the_step():
    """A synchronize in an inner loop: its first pass may follow what an outer step launched."""
    body = """\
    for _ in range(n):
        ids = model(ids)
        for _ in range(2):
            torch.cuda.synchronize()
            t = ids.sum().item()
"""
    assert sync_flags(body) == [set()]


def test_a_while_loop_test_runs_every_pass():
    body = """\
    while ids.sum().item() < n:
        torch.cuda.synchronize()
        ids = model(ids)
"""
    assert [bool(f) for f in sync_flags(body)] == [True]
    body = """\
    while len(ids) < n:
        torch.cuda.synchronize()
        ids = model(ids)
"""
    assert sync_flags(body) == [set()]


@pytest.mark.parametrize(("after", "waited"), [
    ("    return ids.cpu()\n", True),
    ("    t = int(ids[0])\n", False),  # the subscript of a device value comes first
    ("    return ids.to('cpu', non_blocking=True)\n", False),
    ("    ids = ids.argmax(-1)\n    return ids.cpu()\n", False),
    ("    print('synced')\n    return ids.tolist()\n", True),
    ("    t = time.time()\n    torch.cuda.synchronize()\n    return ids.cpu()\n", False),  # the first sync pays
    ("    if ids.numel():\n        return ids.cpu()\n", False),  # a compound statement ends the search
])
def test_waited_for_anyway_only_when_the_next_device_event_is_a_blocking_read(after, waited):
    flags = sync_flags("    ids = model(ids)\n    torch.cuda.synchronize()\n" + after)
    assert [("sync-waited" in f) for f in flags][0] == waited


def test_a_yield_of_device_data_hands_the_consumer_pending_work():
    body = """\
    for _ in range(n):
        torch.cuda.synchronize()
        logits = model(ids)
        ids = logits.argmax(-1)
        tok = ids.item()
        yield tok, {tail}
"""
    assert [bool(f) for f in sync_flags(body.format(tail="tokenizer.decode([tok])"))] == [True]
    assert sync_flags(body.format(tail="logits")) == [set()]


@pytest.mark.parametrize(("read", "idle"), [
    ("last = ids.item()", True),
    ("last = ids.item() if len(out) % 2 else None", False),  # read on odd steps only: pending on the others
    ("last = len(out) % 2 and ids.item()", False),  # ``and`` reads only when its left side is true
    ("rows = list(ids); last = [t.item() for t in rows[:len(out) % 2]]", False),  # a comprehension reads once per element, maybe never
])
def test_a_read_that_may_not_run_leaves_the_launch_before_it_pending(read, idle):
    body = f"""\
    out = []
    for _ in range(n):
        torch.cuda.synchronize()
        ids = model(ids).argmax(-1)
        out.append(len(out))
        {read}
"""
    assert [any(f.startswith("sync-idle:") for f in fl) for fl in sync_flags(body)] == [idle]


SWITCHED = """\
    on = {switch}
    for i in range(n):
        if {test}:
            torch.cuda.synchronize()
        ids = torch.cat((ids, model(ids)[:, -1:]), dim=1)
        if {closing}:
            torch.cuda.synchronize()
{tail}"""


@pytest.mark.parametrize(("switch", "test", "closing", "tail", "idle"), [
    ("ids.device.type == 'cuda'", "on", "on", "", True),
    ("True", "not on", "not on", "", True),
    ("True", "on", "not (not on)", "", True),
    ("True", "on", "on and n", "", False),  # another test: the closing synchronize may be skipped
    ("True", "on", "on", "        on = i % 2 == 0\n", False),  # the loop rebinds the switch
    ("True", "on", "on", "        ids.on = 1\n", True),  # a store to another name's attribute
    ("model.cfg", "on.sync", "on.sync", "        on.sync = i > 2\n", False),  # a store to the switch itself
    ("model.cfg", "on.sync", "on.sync", "        on = model\n", False),  # a store to its root
    ("{}", "on['sync']", "on['sync']", "        on[i] = 1\n", False),  # a store to some element
    ("model", "on.ready()", "on.ready()", "", False),  # a call may answer differently each time
])
def test_a_switch_the_loop_cannot_change_runs_both_synchronizes_or_neither(switch, test, closing, tail, idle):
    flags = sync_flags(SWITCHED.format(switch=switch, test=test, closing=closing, tail=tail))
    assert [any(f.startswith("sync-idle:") for f in fl) for fl in flags][0] == idle


@pytest.mark.parametrize(("body", "after"), [
    ("    t = model(ids).argmax(-1).item()\n    print(t)\n    torch.cuda.synchronize()\n", True),
    ("    ids = model(ids)\n    torch.cuda.synchronize()\n    torch.cuda.synchronize()\n", True),  # the second is free
    ("    ids = model(ids)\n    if n:\n        t = ids.item()\n    torch.cuda.synchronize()\n", False),
    ("    t = ids.item()\n    ids = ids + 1\n    torch.cuda.synchronize()\n", False),
    ("    t = ids.item()\n    for _ in range(n):\n        torch.cuda.synchronize()\n        ids = model(ids)\n", False),
    ("    t = ids.item()\n    try:\n        pass\n    finally:\n        torch.cuda.synchronize()\n", False),
])
def test_after_the_functions_own_wait_on_every_path_from_its_entry(body, after):
    flags = sync_flags(body)
    assert ("sync-after-wait" in flags[-1]) == after
