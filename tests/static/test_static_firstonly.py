"""Branch ``firstonly``: loops that time a step are no decode loops (:mod:`graphlint.static.timingloops`),
a call Python refuses or a body that raises at once on the caller's None runs nothing
(:mod:`graphlint.static.arity`, :mod:`graphlint.static.derefs`), a parameter overriding a host
setting is host data, ``x == None`` tests whether a position was given, and a Python position
slice is an error only where a graph captures it (``fixtures/static/firstonly``). Each target test
fails on main ``9e72466``; each control shows the finding back where the code really decodes."""

from __future__ import annotations

from test_static_capfalse import _files, _found


def _fx() -> dict[str, str]:
    return _files("firstonly")


def test_loops_that_time_a_step_are_no_decode_loops():
    """``throughput`` discards its tokens, ``time_embed`` repeats the embedding ten times: their
    syncs are the measurement, and the vision path only ``time_embed`` runs is not hot;
    ``timed_collect`` keeps its tokens: its sync is the decode loop's."""
    assert [f for f in _found(_fx(), "bench.py") if f[0] < 50] == [(43, "GL106", "error")]
    assert (38, "GL403", "error") not in _found(_fx(), "model.py")


def test_a_timed_loop_that_reads_its_product_after_it_decodes():
    files = _fx()
    files["bench.py"] = files["bench.py"].replace("    return steps / (time.time() - t0)",
                                                  "    return token, steps / (time.time() - t0)")
    assert (19, "GL106", "error") in _found(files, "bench.py")


def test_a_repeat_loop_that_reads_its_index_decodes():
    files = _fx()
    files["bench.py"] = files["bench.py"].replace("        print(t1 - t0)", "        print(i, t1 - t0)")
    assert (26, "GL106", "error") in _found(files, "bench.py")


def test_a_timed_loop_that_emits_decodes():
    """The chat generator reads the clock around every step and yields: its sync counts."""
    assert (17, "GL106", "error") in _found(_fx(), "chat.py")


def test_the_first_steps_images_are_not_per_token():
    """``generate`` passes ``media`` on the first step and clears it: ``VLM.embed`` (its upload and
    masked merge) and the vision tower run once per prompt."""
    found = _found(_fx(), "model.py")
    assert not [f for f in found if 36 <= f[0] <= 43 or f[0] == 14]


def test_a_forward_the_call_cannot_run_is_not_hot():
    """``plain``'s ``model(ids, pos)`` may hold a ``VLM`` (the points-to's union), whose ``forward``
    raises at once on ``image_flags=None``: its masked merges (54, 56) are not on the path."""
    assert not [f for f in _found(_fx(), "model.py") if f[0] >= 50]


def test_a_forward_given_its_flags_is_hot():
    files = _fx()
    files["chat.py"] = files["chat.py"].replace("logits = model(ids, pos)", "logits = model(ids, pos, ids)")
    assert (54, "GL303", "error") in _found(files, "model.py")


def test_a_call_leaving_a_required_argument_out_runs_nothing():
    files = _fx()
    files["model.py"] = files["model.py"].replace("image_flags = image_flags.squeeze(-1)", "image_flags = None")
    assert (56, "GL303", "error") in _found(files, "model.py")  # ``model(ids, pos)`` binds pixel_values
    files["chat.py"] = files["chat.py"].replace("logits = model(ids, pos)", "logits = model(input_ids=ids)")
    assert not [f for f in _found(files, "model.py") if f[0] >= 50]


def test_a_parameter_overriding_a_host_setting_is_host_data():
    """``causal = self.causal if causal is None else causal``: a Python bool, no truth test of a
    tensor; ``start_pos == None`` tests whether a position was given; the rotary slice at the
    Python position is a warning in eager code."""
    assert _found(_fx(), "attention.py") == [(13, "GL308", "warning")]


def test_a_parameter_overriding_a_tensor_setting_stays_a_tensor():
    files = _fx()
    files["attention.py"] = files["attention.py"].replace("self.causal = causal", "self.causal = torch.ones(1)")
    assert (28, "GL105", "error") in _found(files, "attention.py")


def test_a_position_slice_under_capture_is_an_error():
    files = _fx()
    files["attention.py"] += (
        "\n\ndef capture(model: Model, x):\n    g = torch.cuda.CUDAGraph()\n"
        "    with torch.cuda.graph(g):\n        out = model(x, 0)\n    return g, out\n")
    assert (13, "GL308", "error") in _found(files, "attention.py")


def test_a_timed_loop_that_stops_on_its_tokens_decodes():
    """``latency`` decodes until the end-of-text token: its sampling and sync are per token (the
    sync ``info``: the stop test's read just before it left nothing pending, :mod:`.syncpending`)."""
    found = _found(_fx(), "bench.py")
    assert (55, "GL109", "error") in found and (59, "GL106", "info") in found
