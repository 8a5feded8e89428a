"""Branch ``policy``: methods a load-time policy replaces by a function a record holds
(``fixtures/static/callgraph/policy_record_*``, :mod:`graphlint.static.policies`), and forwards a
class installs on its own submodule (``installed_on_own_field``, :func:`.installed.own_field`).
The call graphs are checked by ``test_static_callgraph``; these check what the evidence is worth."""

from __future__ import annotations

from pathlib import Path

from static_helpers import analyze

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "static" / "callgraph"
READ = "    n = ids.sum().item()\n"


def _files(flow: str) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((ROOT / flow).glob("*.py"))}


def _planted(files: dict[str, str], path: str, signature: str) -> dict[str, str]:
    """A read-back as the first statement of the function ``signature`` opens."""
    assert signature in files[path]
    return {**files, path: files[path].replace(signature + "\n", signature + "\n" + READ)}


def _at(findings, path: str, rule: str = "GL101"):
    return [f for f in findings if f.path == path and f.rule == rule]


def test_a_replacement_tied_to_a_project_class_runs_in_the_capture_as_an_error():
    """``policy[Llama] = Description(method_replacement={"forward": fast_llama_forward})``: the
    captured ``self.model(ids)`` (a ``Llama``) runs it, at full severity."""
    files = _planted(_files("policy_record_project"), "fast.py", "def fast_llama_forward(self, ids):")
    found = _at(analyze(files), "fast.py")
    assert [(f.line, f.severity) for f in found] == [(5, "error")]


def test_replacements_two_policies_make_of_one_method_are_at_most_warnings():
    """``Norm.forward`` is replaced by ``fast_norm_forward`` in one policy and ``other_norm_forward``
    in another: ``fast_llama_forward``'s ``self.norm(ids)`` (its ``self`` the ``Llama`` bound) runs
    either -- a family of policies, chosen by data -- so their read-backs are warnings."""
    files = _planted(_files("policy_record_project"), "fast.py", "def fast_norm_forward(self, x):")
    files = _planted(files, "fast.py", "def other_norm_forward(self, x):")
    found = _at(analyze(files), "fast.py")
    assert [(f.line, f.severity) for f in found] == [(9, "warning"), (18, "warning")]
    assert all("load-time policy" in f.message for f in found)


def test_one_policy_for_the_method_makes_its_replacement_an_error():
    """Without the second policy, ``Norm.forward``'s one replacement is sound evidence."""
    files = _planted(_files("policy_record_project"), "fast.py", "def fast_norm_forward(self, x):")
    files["policy.py"] = files["policy.py"][:files["policy.py"].index("class FastNormPolicy")]
    found = _at(analyze(files), "fast.py")
    assert [(f.line, f.severity) for f in found] == [(9, "error")]


def test_a_function_no_record_names_is_not_reached():
    files = _planted(_files("policy_record_project"), "fast.py", "def unused_forward(self, x):")
    found = [f for f in _at(analyze(files), "fast.py") if f.severity != "info"]
    assert [f.severity for f in found if f.line == 13] in ([], ["warning"])
    assert not [f for f in found if f.severity == "error"]


def test_a_replacement_tied_to_a_library_class_is_reached_but_at_most_a_warning():
    """The records name ``transformers``' classes: any library model call may run them (a family of
    policies, any class), so the capture reaches both and their read-backs are warnings that say why."""
    files = _planted(_files("policy_record_library"), "fast.py", "def causal_forward(self, ids):")
    files = _planted(files, "fast.py", "def layer_forward(self, hidden):")
    found = _at(analyze(files), "fast.py")
    assert [(f.line, f.severity) for f in found] == [(5, "warning"), (10, "warning")]
    assert all("load-time policy" in f.message for f in found)


def test_a_forward_installed_on_the_classs_own_submodule_is_not_every_library_models():
    """The drafter's ``setattr(getattr(self, "model"), "forward", MethodType(...))``: the runner's
    unknown ``self.model(ids)`` does not run it (on main it did, as a captured forward)."""
    files = _planted(_files("installed_on_own_field"), "main.py", "def draft_model_forward(self, ids):")
    files["main.py"] = files["main.py"].replace("    def step(self, ids):\n",
                                                "    def step(self, ids):\n"
                                                "        with torch.cuda.graph(torch.cuda.CUDAGraph()):\n"
                                                "            return self.model(ids)\n")
    files["main.py"] = "import torch\n" + files["main.py"]
    assert not _at(analyze(files), "main.py")


def test_graphlint_entries_says_which_captured_forwards_are_weakly_tied():
    from graphlint.static.link import link
    from static_helpers import builtin_rules, options, summarize

    rules = builtin_rules()
    entries = []
    link(summarize(_files("policy_record_library"), rules), rules, options(rules), entries_out=entries)
    graph = {e.function[1]: e.reason for e in entries if e.context == "graph"}
    assert set(graph) == {"causal_forward", "layer_forward"}
    assert all("weakly tied" in reason for reason in graph.values())
