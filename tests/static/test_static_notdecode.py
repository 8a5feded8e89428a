"""Code that is not the decode step, and values that are not what their spelling says: a profiling
export sized to zero unless profiling is built in (:mod:`graphlint.static.guards`), and a position
annotated ``int`` that every caller hands a device tensor (:mod:`graphlint.static.overrules`), a type
test of a Python number (:func:`graphlint.static.branchwalk.given_none_test`), and a ``while`` loop
draining a work list its own function built, no serving loop (:mod:`graphlint.static.worklists`)."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from static_helpers import assert_marked, check_fixture

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "static" / "notdecode"


def test_profiler_sized_branch_is_off_the_decode_path(monkeypatch, tmp_path):
    name = "profiler_size.py"
    assert_marked(check_fixture(monkeypatch, tmp_path, FIXTURES, name), FIXTURES, name)


def test_int_position_every_caller_hands_a_tensor_is_a_device_gather(monkeypatch, tmp_path):
    name = "device_position.py"
    assert_marked(check_fixture(monkeypatch, tmp_path, FIXTURES, name), FIXTURES, name)


def test_type_test_of_python_number_is_a_dead_conversion(monkeypatch, tmp_path):
    name = "host_typetest.py"
    assert_marked(check_fixture(monkeypatch, tmp_path, FIXTURES, name), FIXTURES, name)


def test_a_loop_draining_its_own_work_list_is_no_serving_loop(monkeypatch, tmp_path):
    name = "worklist.py"
    assert_marked(check_fixture(monkeypatch, tmp_path, FIXTURES, name), FIXTURES, name)


@pytest.mark.parametrize(("src", "drains"), [
    ("h = deque()\nfor g in gs:\n    if len(h) == 4:\n        h.popleft().wait()\n    h.append(g.compile())\n"
     "while h:\n    h.popleft().wait()\n", True),
    ("q = deque(xs)\nwhile len(q) > 0:\n    q.popleft().run()\n", True),
    ("while q:\n    q.popleft().run()\n", False),  # a parameter: the caller's queue
    ("while self.q:\n    self.q.popleft().run()\n", False),  # a field another method fills
    ("q = deque()\nThread(target=produce, args=(q,)).start()\nwhile q:\n    q.popleft().run()\n", False),
    ("q = deque()\nstart(q)\nwhile q:\n    q.popleft().run()\n", False),  # handed to a call that may keep it
    ("if q is None:\n    q = deque()\nwhile q:\n    q.popleft().run()\n", False),  # fresh on one path only
    ("q = []\ndef add(x):\n    q.append(x)\nregister(add)\nwhile q:\n    q.pop().run()\n", False),  # a closure fills it
    ("q = []\nself.pending = q\nwhile q:\n    q.pop().run()\n", False),  # stored where others reach it
    ("q = make_queue()\nwhile q:\n    q.pop().run()\n", False),  # not a fresh container
    ("while True:\n    msg = recv()\n    run(msg)\n", False),
])
def test_a_local_work_list(src, drains):
    from graphlint.static.worklists import drains_local_list

    fn = cst.parse_module("def f(q, xs, gs):\n" + "".join(f"    {line}\n" for line in src.splitlines())).body[0]
    loop = next(s for s in fn.body.body if isinstance(s, cst.While))
    assert drains_local_list(loop, fn.body) is drains


@pytest.mark.parametrize(("test", "branch"), [
    ('cfg["debug"]', "body"),
    ('msg[b"debug"]', None),  # a bytes key (a msgpack message's) is no guard's name, and no crash
    ('msg[b"size"] > 0', None),
])
def test_a_subscript_key_names_a_guard_only_when_it_is_text(test, branch):
    from graphlint.static.guards import guarded_branch

    assert guarded_branch(cst.parse_expression(test), {}, ("*debug*", "*size*")) == branch


def test_a_handler_that_re_raises_runs_on_no_working_step(monkeypatch, tmp_path):
    """``except RuntimeError: torch.cuda.synchronize(); print(...); raise`` is a failed step's debug dump; a
    handler that recovers stays on the step (:meth:`graphlint.static.branchwalk.BranchWalker.handler`)."""
    name = "failed_launch.py"
    assert_marked(check_fixture(monkeypatch, tmp_path, FIXTURES, name), FIXTURES, name)
