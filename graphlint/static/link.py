"""Phase 2: summaries -> whole-program points-to call graph (:mod:`.callgraph`) -> decode entries and
contexts (:mod:`.entries`) -> findings, each with the severity its context gives it.
"""

from __future__ import annotations

from graphlint.finding import Finding
from graphlint.rules import Rule
from graphlint.static.callgraph import CallGraph
from graphlint.static.contexts import FuncId
from graphlint.static.decode_path import DecodePath, decode_path
from graphlint.static.entries import Contexts, Discovery, Entry
from graphlint.static.facts import CallSite, FileSummary, ModuleInfo
from graphlint.static.index import Index
from graphlint.static.names import norm_path
from graphlint.static.options import StaticOptions
from graphlint.static.recorded import stale_findings
from graphlint.static.unresolved import from_call_graph


def link(summaries: list[FileSummary], rules: dict[str, Rule], options: StaticOptions,
         entries_out: list[Entry] | None = None, contexts_out: list[Contexts] | None = None,
         decode_out: list[DecodePath] | None = None) -> list[Finding]:
    """Findings of every hot candidate; ``entries_out``, when given, receives the decode step's
    entries with their reasons (``graphlint entries``), ``contexts_out`` the contexts themselves
    (which functions are hot where: ``bench/record_vs_static.py``), ``decode_out`` the
    :class:`DecodePath`."""
    infos = sorted(
        (s.data for s in summaries if isinstance(s.data, ModuleInfo) and not s.skip_file), key=lambda i: i.path
    )
    index = Index(infos)
    graph = CallGraph(infos, index)
    calls: dict[FuncId, list[tuple[FuncId, CallSite]]] = {}
    for info in infos:
        for qual in sorted(info.functions):
            fn = info.functions[qual]
            out: dict[FuncId, CallSite] = {}
            sites = [] if fn.device_code else [(call, graph.site_targets(info, qual, call)) for call in fn.calls]
            sites += [(site, (callee,)) for callee, site in graph.implicit_sites(info, qual) if not fn.device_code]
            for call, callees in sites:  # DSL code calls DSL code, not the host
                for callee in callees:
                    known = out.get(callee)
                    if known is None:  # the summary's own site (never mutated: summaries are cached)
                        out[callee] = call
                    else:  # the same callee reached by two spellings: one edge, everything it knows
                        out[callee] = CallSite(known.expr, known.in_capture or call.in_capture,
                                               min(known.order, call.order), known.loops | call.loops,
                                               known.reference and call.reference,
                                               multi_device=known.multi_device or call.multi_device)
            calls[(info.path, qual)] = sorted(out.items())
    contexts = Discovery(infos, index, calls, options, graph).run()
    if entries_out is not None:
        entries_out.extend(contexts.entries)
    if contexts_out is not None:
        contexts_out.append(contexts)
    if decode_out is not None:
        decode_out.append(decode_path(infos, calls, contexts, options, rules,
                                      find_unresolved=lambda hot: from_call_graph(graph, hot)))
    return _findings(infos, rules, options, contexts, index) + stale_findings(infos, rules, options)


class Unset:
    """Attributes no analysed code gives a value: ``if self.x is not None:`` bodies are dead there."""

    def __init__(self, infos: list[ModuleInfo], index: Index):
        self.index = index
        self.anywhere = {w for info in infos for w in info.attr_writes if ":" not in w}  # ``obj.x = v``

    def dead(self, info: ModuleInfo, cand) -> bool:
        needs = [f[6:] for f in cand.flags if f.startswith("needs:")]
        fn = info.functions.get(cand.function)
        if not needs or fn is None or fn.cls not in info.classes:
            return False
        ref = (info, fn.cls)
        family = [*self.index.mro(ref), *self.index.subclasses(ref)]
        return any(attr not in self.anywhere and not any(f"{name}:{attr}" in owner.attr_writes
                                                         or f"{name}:*" in owner.attr_writes for owner, name in family)
                   for attr in needs)


def missing_entries(summaries: list[FileSummary], options: StaticOptions) -> list[str]:
    """Configured entries that name no function in the summaries (a typo finds nothing, silently,
    unless the check warns with this)."""
    known = {
        (norm_path(s.path), qual)
        for s in summaries
        if isinstance(s.data, ModuleInfo)
        for qual in s.data.functions
    }
    missing = []
    for entry in options.entries:
        path, _, qual = entry.rpartition(":")
        if (norm_path(path), qual) not in known:
            missing.append(entry)
    return missing


def _findings(infos: list[ModuleInfo], rules: dict[str, Rule], options: StaticOptions,
              contexts: Contexts, index: Index) -> list[Finding]:
    findings: dict[tuple, Finding] = {}
    unset = Unset(infos, index)
    for info in infos:
        for cand in info.candidates:
            rule = rules.get(cand.code)
            if rule is None or cand.code not in options.enabled:
                continue
            if unset.dead(info, cand):
                continue
            fn = info.functions.get(cand.function)
            if fn is not None and fn.device_code and rule.params.get("scope") != "anywhere":
                continue  # a kernel DSL compiles this function: its branches and shapes are device-side
            placed = contexts.placement.place(rule, (info.path, cand.function), cand)
            if placed is None:
                continue
            chain, severity, note = placed
            message = rule.message.replace("{name}", cand.name) if "{name}" in rule.message else rule.message
            finding = Finding.from_rule(
                rule, info.path, cand.line, cand.col, message=message + note, severity=severity,
                chain=tuple(f"{p}:{q}" for p, q in chain), evidence=("static",), source="static",
                function=cand.function, line_text=cand.line_text,
            )
            findings.setdefault(finding.sort_key(), finding)
    return [findings[k] for k in sorted(findings)]
