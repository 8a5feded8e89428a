"""``graphlint explain CODE``: one rule as a page -- what, why, bad/good, fix, and where it was seen.

A rule's ``seed`` field points into the real-world inventory graphlint generalises (a DeepSeek-V4
engine made graph-ready on 8 B200s), in that document's numbering ("3. Data-dependent control
flow (...)", "CATEGORY 9", "Phase 1: memory leak check"). A user has never seen that document, so
the page says what happened there in the tool's own words instead of citing it.
"""

from __future__ import annotations

import re
import textwrap

from graphlint.report.context import rule_message
from graphlint.rules import Rule

ENGINE = "a DeepSeek-V4 inference engine made graph-ready by hand on 8 B200 GPUs"

#: What each of the real inventory's categories was, as graphlint would say it.
SEEN = {
    "1": "host syncs on the decode path (`.item()` reads)",
    "2": "per-step tensor allocations",
    "3": "data-dependent control flow and shapes",
    "4": "cross-GPU copies inside a graph",
    "5": "`torch.cuda.synchronize()` on the decode path",
    "6": "allocations inside CUDA-graph capture (GEMM outputs, dtype casts, per-step weight casts)",
    "7": "CuTeDSL kernels bound to the wrong device during capture",
    "8": "cross-GPU operations inside graph capture",
    "9": "graphs captured without an explicit per-device stream, which replayed all zeros on GPUs 1-7",
}
_REF = re.compile(r"^\s*(?:CATEGORY\s+)?(\d)(?:\s*/\s*(?:CATEGORY\s+)?(\d))?\.?:?\s*")


#: How the real inventory titles its categories: a reference's text that only repeats one is dropped.
_TITLES = ("explicit .item() syncs on hot path", "per-step tensor allocations", "data-dependent control flow",
           "cross-gpu transfers inside graph", "cross-gpu transfers", "torch.cuda.synchronize() on hot path",
           "allocations inside capture", "cutedsl from_dlpack device mismatch in graph capture",
           "cutedsl from_dlpack device mismatch", "multi-gpu cuda graph stream issue", "stream sync")


def seen_in_practice(seed: str) -> str:
    """One sentence saying what the real engine hit, e.g. ``Seen in practice: ENGINE hit per-step
    tensor allocations (there: torch.zeros_like -> scalar).``; '' for a rule without a seed."""
    seed = " ".join(seed.split())
    if not seed:
        return ""
    lowered = seed.lower()
    if lowered.startswith("phase 1:"):
        return (f"Seen in practice: {ENGINE} still had a {seed.split(':', 1)[1].strip()} open before its graphs "
                "could ship; this rule is that check.")
    if lowered.startswith("method 2"):
        return f"Seen in practice: {ENGINE} found its capture failures by trial-capturing each graph, as this rule does."
    what, details = [], []
    for part in (p.strip() for p in seed.split(" / ")):
        match = _REF.match(part)
        if match:
            what += [SEEN[n] for n in match.groups() if n and n in SEEN]
            part = part[match.end():]
        paren = re.search(r"\((.+)\)\s*$", part)
        outside = part[: paren.start()].strip() if paren else part
        outside = next((outside[len(t):] for t in _TITLES if outside.lower().startswith(t)), outside)
        details += [d for d in (outside.strip(" :;,"), paren.group(1) if paren else "") if d]
    what = list(dict.fromkeys(what)) or ["this"]
    sentence = f"Seen in practice: {ENGINE} hit {' and '.join(what)}"
    return sentence + (f" (there: {'; '.join(details)})." if details else ".")


def render_explain(rule: Rule) -> str:
    kind = "runtime (graphlint inventory / capture-test)" if rule.dynamic else "graphlint check"
    out = [f"{rule.code} {rule.name}  [{rule.category}, {rule.severity}, {kind}]", "", rule_message(rule), ""]
    why_title = "Why it matters:" if rule.category == "meta" else "Why it breaks capture:"
    out += [why_title, textwrap.indent(textwrap.fill(rule.why, 88), "  "), ""]
    for title, examples in (("Bad", rule.bad), ("Good", rule.good)):
        for example in examples:
            out += [f"{title}:", textwrap.indent(example.rstrip(), "    "), ""]
    out += ["How to fix:", textwrap.indent(textwrap.fill(rule.fix, 88), "  ")]
    seen = seen_in_practice(rule.seed)
    if seen:
        out += ["", textwrap.fill(seen, 90)]
    return "\n".join(out) + "\n"
