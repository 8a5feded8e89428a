"""Branch ``optpick``: a capture guarded by a test of a field's class runs only the classes that
pass it (``fixtures/static/optpick``: a registry of two backbones, the captured step taken only
when the built one is the fused implementation). The target tests fail on main ``1bc9143``; each
control keeps the finding where some link of the guard is missing."""

from __future__ import annotations

import pytest

from test_static_capfalse import _files
from test_static_optinputs import _checked

PLAIN_WRITES = {(20, "GL308", "error"), (21, "GL308", "error")}


def _plain(tmp_path, files: dict[str, str]) -> set[tuple[int, str, str]]:
    return set(_checked(tmp_path, files, "plain.py"))


def _swap(files: dict[str, str], old: str, new: str) -> dict[str, str]:
    assert old in files["speaker.py"], old
    return {**files, "speaker.py": files["speaker.py"].replace(old, new)}


def test_a_predicate_every_caller_passes_keeps_the_other_backbone_out_of_the_capture(tmp_path):
    """``allow_graphs`` is ``self.graphable()`` on the only call: ``"fused" in
    str(self.backbone.__class__)`` holds wherever the capture runs, so its ``self.backbone(h)`` never
    runs ``PlainBackbone``, whose host-offset writes are not captured code."""
    assert not _plain(tmp_path, _files("optpick")) & PLAIN_WRITES


def test_an_isinstance_guard_in_the_capturing_method_narrows_too(tmp_path):
    files = _swap(_files("optpick"), "        if not allow_graphs:\n",
                  "        if not allow_graphs or not isinstance(self.backbone, FusedBackbone):\n")
    files = _swap(files, "            logits = self._step(ids, state, allow_graphs=cg)\n",
                  "            logits = self._step(ids, state)\n")
    files = _swap(files, "from plain import StepState\n", "from fused import FusedBackbone\nfrom plain import StepState\n")
    assert not _plain(tmp_path, files) & PLAIN_WRITES


def test_a_bool_local_bound_from_the_test_narrows(tmp_path):
    files = _swap(_files("optpick"), "        if not allow_graphs:\n",
                  "        fused = type(self.backbone).__name__ == \"FusedBackbone\"\n        if not fused:\n")
    files = _swap(files, "            logits = self._step(ids, state, allow_graphs=cg)\n",
                  "            logits = self._step(ids, state)\n")
    assert not _plain(tmp_path, files) & PLAIN_WRITES


KEPT = {
    # a second call without ``allow_graphs`` captures whatever was built (the default is True)
    "default": ("        return ids\n", "        return self._step(ids, state)\n"),
    "literal": ("allow_graphs=cg)", "allow_graphs=True)"),
    # handed to a thread, which calls it with arguments nothing here shows
    "handed": ("        return ids\n", "        threading.Thread(target=self._step, args=(ids, state)).start()\n        return ids\n"),
    # a test the plain class passes too
    "passing": ('"fused" in str(self.backbone.__class__)', '"Backbone" in str(self.backbone.__class__)'),
    # a method that swaps the field may run between the test and the capture
    "rebound": ("    def _logits(", "    def use(self, backbone):\n        self.backbone = backbone\n\n    def _logits("),
}


@pytest.mark.parametrize("case", sorted(KEPT))
def test_a_missing_link_keeps_every_backbone_captured(tmp_path, case):
    """A caller on the default, a literal flag, a test the plain class passes, a field rebound after
    ``__init__``: the capture may run the plain backbone, whose writes stay errors."""
    files = _swap(_files("optpick"), *KEPT[case])
    files["speaker.py"] = "import threading\n" + files["speaker.py"]
    assert PLAIN_WRITES <= _plain(tmp_path, files)


CAPTURED_LOOP = '''

def captured_loop(model: HandCacheAttention, x: torch.Tensor, steps: int) -> torch.Tensor:
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = model(x)
    for _ in range(steps):
        g.replay()
        x.copy_(out[:, -1:])
    return x
'''


def _gl307(files: dict[str, str]) -> set[tuple[int, str]]:
    from test_static_capfalse import _found

    return {(line, severity) for line, rule, severity in _found(files, "handcache.py") if rule == "GL307"}


def test_a_counter_field_indexing_eager_code_is_a_warning():
    """GL307 follows GL308: a host counter indexing a cache is frozen only where a capture runs it;
    in an eager per-token loop it costs nothing (the step cannot be captured as written)."""
    found = _gl307(_files("optpick_eager"))
    assert found and all(severity == "warning" for _, severity in found)


def test_a_counter_field_indexing_captured_code_is_an_error():
    files = _files("optpick_eager")
    files["handcache.py"] += CAPTURED_LOOP
    assert {(17, "error"), (18, "error")} <= _gl307(files)


def test_a_capability_the_plain_class_declares_false_narrows(tmp_path):
    """``supports_graphs()`` returns False in ``PlainBackbone``'s body: where the capture runs, the
    backbone is a class whose method may return something true."""
    files = _swap(_files("optpick"), '"fused" in str(self.backbone.__class__)', "self.backbone.supports_graphs()")
    files["plain.py"] += "\n    def supports_graphs(self) -> bool:\n        return False\n"
    files["fused.py"] += "\n    def supports_graphs(self) -> bool:\n        return True\n"
    assert not _plain(tmp_path, files) & PLAIN_WRITES


def test_a_capability_attribute_set_on_an_instance_keeps_the_capture(tmp_path):
    """``graph_safe = False`` in the class body, but some code stores ``graph_safe`` on an object."""
    files = _swap(_files("optpick"), '"fused" in str(self.backbone.__class__)', "self.backbone.graph_safe")
    files["plain.py"] = files["plain.py"].replace('    """The portable implementation', '    graph_safe = False\n    """The portable implementation')
    assert not _plain(tmp_path / "declared", files) & PLAIN_WRITES
    files["plain.py"] += "\n\ndef allow(backbone: PlainBackbone):\n    backbone.graph_safe = True\n"
    assert PLAIN_WRITES <= _plain(tmp_path / "stored", files)
