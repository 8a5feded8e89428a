"""A server loop that picks no token runs once per request (issue 19 item 2: a loop over images or
requests is not per-token by itself; gLLM's encoder-disaggregation server, in look-alikes of our
own under ``fixtures/static/mmonce/``).

- ``encoderserver``: ``while True:`` poll the peers (stored on ``self``), drain the socket's jobs,
  encode each image with a vision tower and ship it to the peer (read from ``self``, stored again on
  a reconnect). The loop's only carry is that bookkeeping, it never stops and nothing it calls picks
  a token: an image per job, not a token step, so the tower's grid read-back and mask index and the
  server's copy barrier are not reported. Before the change all five were errors of a per-token loop.
- ``stream``: the same engine run by a per-step image stream that feeds its token back: reported.
"""

from __future__ import annotations

from pathlib import Path

from static_helpers import analyze
from test_static_fixture import assert_marked, load

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "fixtures" / "static" / "mmonce" / "encoderserver"
STREAM = ROOT / "fixtures" / "static" / "mmonce" / "stream"


def _edit(name: str, old: bytes, new: bytes, files: dict[str, bytes] | None = None) -> dict[str, bytes]:
    files = files or load(SERVER)
    path = next(p for p in files if p.endswith(name))
    assert old in files[path]
    files[path] = files[path].replace(old, new)
    return files


def _per_token(files: dict[str, bytes], server: bool = True) -> dict[str, bytes]:
    """The same files where the tower's hazards (and the server's, with ``server``) are expected."""
    files = _edit("vision.py", b"expect-per-token:", b"expect:", files)
    return _edit("server.py", b"expect-server:", b"expect:", files) if server else files


def test_encoder_server_reports_exactly_its_markers():
    files = load(SERVER)
    assert_marked(analyze(files), files)


def test_a_server_loop_that_picks_tokens_stays_per_token():
    """A token picker outside a module's forward (here the engine's ``encode`` returns an argmax): a
    token step, so the loop's field carry stays evidence."""
    files = _per_token(_edit("vision.py", b"        return torch.cat(self.tower(pixels, grid))",
                             b"        return torch.cat(self.tower(pixels, grid)).argmax(-1, keepdim=True).float()"))
    assert_marked(analyze(files), files)


def test_a_loop_that_can_stop_is_no_server():
    """A drain that stops when nothing arrived is run by its caller once a tick: that caller decides."""
    files = _per_token(_edit("server.py", b"            for job in batch:",
                             b"            if not batch:\n                break\n            for job in batch:"))
    assert_marked(analyze(files), files)


def test_a_per_step_image_stream_reports_the_tower():
    """The tower run by a loop that feeds its sampled token back is per token, as before."""
    files = _per_token(load(SERVER), server=False)
    files.update({p: d for p, d in load(STREAM).items()})
    assert_marked(analyze(files), files)


def test_a_loop_whose_test_calls_is_no_server():
    """``while self.step(): pass`` (an interpreter's loop, torch's own Dynamo has one): the call in the
    test is the step and its result ends the loop, so the loop is judged as before -- per token here."""
    files = _per_token(_edit("server.py", b"        while True:\n            self._poll_peers()",
                             b"        while self._poll_peers():"))
    assert_marked(analyze(files), files)


def test_a_server_loop_run_until_a_flag_says_stop_is_still_a_server():
    """``while self.running:``: a flag set elsewhere stops it, not the pass's work: once per request."""
    files = _edit("server.py", b"        while True:\n            self._poll_peers()",
                  b"        while self.running:\n            self._poll_peers()")
    assert_marked(analyze(files), files)
