"""Work a serving step does once per request, not per token (issue 19: hot code only from evidence;
vox-serve's shape, in look-alikes of our own under ``fixtures/static/perrequest/``).

- ``admission``: the step admits its requests, ``if not req.prefilled: model.preprocess(req.audio);
  req.prefilled = True``, then replays the decode graph. The admission branch arms its request's
  flag and nothing clears it, so ``preprocess`` (a device mel basis, a length read back) runs once
  per request and is not reported; the step's per-token upload stays reported. Before the change
  both hazards in ``preprocess`` were host-step warnings.
"""

from __future__ import annotations

from pathlib import Path

from static_helpers import analyze
from test_static_fixture import assert_marked, load

ROOT = Path(__file__).resolve().parents[2]
ADMISSION = ROOT / "fixtures" / "static" / "perrequest" / "admission"


def _edit(old: bytes, new: bytes, files: dict[str, bytes] | None = None, name: str = "worker.py") -> dict[str, bytes]:
    files = files or load(ADMISSION)
    path = next(p for p in files if p.endswith(name))
    assert old in files[path]
    files[path] = files[path].replace(old, new)
    return files


def _per_step(files: dict[str, bytes]) -> dict[str, bytes]:
    """The same files where ``preprocess``'s two hazards are expected (they run every step)."""
    return _edit(b"expect-reset:", b"expect:", files, "model.py")


def test_admission_reports_exactly_its_markers():
    files = load(ADMISSION)
    assert_marked(analyze(files), files)


def test_a_flag_cleared_every_step_keeps_the_admission_per_step():
    """A step that clears the flag (``req.prefilled = False`` after the replay) re-runs the branch."""
    files = _per_step(_edit(b"        return self.out.argmax(-1)",
                            b"        for req in requests:\n            req.prefilled = False\n"
                            b"        return self.out.argmax(-1)"))
    assert_marked(analyze(files), files)


def test_a_branch_that_does_not_arm_its_flag_runs_every_step():
    """Without ``req.prefilled = True`` in the branch nothing says it runs once."""
    files = _per_step(_edit(b"                req.prefilled = True\n", b"                req.last_id = 0\n"))
    assert_marked(analyze(files), files)


def test_a_flag_on_an_object_built_in_the_step_is_no_request_state():
    """The owner must outlive the call: a parameter or an item of a loop, not a local built there."""
    files = _per_step(_edit(b"            if not req.prefilled:",
                            b"            req = Request(req.audio)\n            if not req.prefilled:"))
    assert_marked(analyze(files), files)


def test_a_flag_armed_only_under_a_stop_test_runs_every_step_until_then():
    """``if not req.prefilled: ...; if stop: req.prefilled = True`` runs on every step the test fails."""
    files = _per_step(_edit(b"                req.prefilled = True\n",
                            b"                if req.last_id == 0:\n                    req.prefilled = True\n"))
    assert_marked(analyze(files), files)


def test_a_jump_in_the_branch_may_skip_the_arming():
    """``continue`` before the arming: the branch runs again on the next step."""
    files = _per_step(_edit(b"                prompts.append(self.model.preprocess(req.audio))\n",
                            b"                prompts.append(self.model.preprocess(req.audio))\n"
                            b"                if req.last_id:\n                    continue\n"))
    assert_marked(analyze(files), files)


def test_a_flag_on_the_handed_batch_is_no_request_state():
    """``if not batch.prepared:`` on the object the step is handed: the step's own batch may be built
    anew every step, so only a loop's item (a request of the batch) owns a per-request flag."""
    files = _per_step(_edit(b"        for req in requests:\n            if not req.prefilled:\n"
                            b"                prompts.append(self.model.preprocess(req.audio))\n"
                            b"                req.prefilled = True\n",
                            b"        req = requests[0]\n        if not requests.prefilled:\n"
                            b"            prompts.append(self.model.preprocess(req.audio))\n"
                            b"            requests.prefilled = True\n"))
    assert_marked(analyze(files), files)


def test_a_raise_in_the_admission_skips_no_arming():
    """``raise`` on a request the model cannot take ends the step; the branch stays once per request."""
    files = _edit(b"            if not req.prefilled:\n",
                  b"            if not req.prefilled:\n                if req.audio is None:\n"
                  b"                    raise ValueError(\"no reference audio\")\n")
    assert_marked(analyze(files), files)


def test_a_flag_on_an_object_unpacked_in_the_step_is_no_request_state():
    """``req, _ = Request(req.audio), 0`` rebinds the owner as ``req = ...`` does: fresh every call."""
    files = _per_step(_edit(b"            if not req.prefilled:",
                            b"            req, _ = Request(req.audio), 0\n            if not req.prefilled:"))
    assert_marked(analyze(files), files)
