"""A recorded run as the decode step's entries (``graphlint check --decode-path FILE``).

``graphlint record`` writes which functions a real run executed each step, and in which role
(:mod:`graphlint.decode_path_file`). Here they become entries of :class:`~graphlint.static.entries.Discovery`,
the way ``--entry`` entries do, each with the context of its role:

- ``captured`` -> **graph** (every rule, strictly);
- ``host`` -> **host** (per-step costs only, at most warnings);
- ``eager`` -> **eager** (every rule, strictly: the model step);
- ``loop`` -> **eager**, as the loop's *host logic* (GL311/GL312 skip it, as for a per-token
  loop the analyzer finds itself); the function that owns a decode loop is entered only at the
  loops that call its step (else at its ``while``/``for ... in range`` loops, else whole).

The call graph then spreads them as usual, so code the run did not execute -- a function added
since, called from a recorded one -- is hot in its caller's context. A record replaces the
``hot-names`` guess (the run says what is hot); the evidence the analyzer finds itself (captures,
replays, per-token loops) still counts. A recorded file is matched to an analysed file by its
path relative to the record, else by path suffix (a library recorded with ``--source``).

A recorded function that no longer exists is a ``GL004 stale-decode-path`` warning at its file
(line 1), or at the record when the file is gone: re-record. A file the run recorded but this
check did not analyse (excluded, or another package's) is not judged.
"""

from __future__ import annotations

import os

from graphlint.finding import Finding
from graphlint.rules import Rule
from graphlint.static.facts import ModuleInfo
from graphlint.static.options import RecordedEntry

STALE = "GL004"
CONTEXT_OF = {"captured": "graph", "host": "host", "eager": "eager", "loop": "eager"}
_WHAT = {"captured": "ran inside a CUDA-graph capture", "host": "ran between two replays of a graph",
         "eager": "ran inside an eager decode step", "loop": "ran in an eager decode loop between its steps"}


def matched_files(infos: list[ModuleInfo], recorded: tuple[RecordedEntry, ...]) -> dict[str, ModuleInfo]:
    """Recorded path -> the analysed file it names: the same path, else the one analysed file whose
    path ends with it (ambiguous suffixes match nothing)."""
    by_path = {os.path.normpath(i.path): i for i in infos}
    out: dict[str, ModuleInfo] = {}
    for path in sorted({e.path for e in recorded}):
        info = by_path.get(os.path.normpath(path))
        if info is None:
            suffix = "/" + path.lstrip("./")
            found = [i for p, i in by_path.items() if ("/" + p.replace(os.sep, "/")).endswith(suffix)]
            info = found[0] if len(found) == 1 else None
        if info is not None:
            out[path] = info
    return out


def add_recorded(discovery) -> None:
    """Adds the recorded functions to ``discovery`` (a :class:`~graphlint.static.entries.Discovery`)
    as entries; called before it spreads its contexts."""
    options = discovery.options
    if not options.recorded:
        return
    files = matched_files(discovery.infos, options.recorded)
    source = options.decode_path or "the decode path"
    for entry in options.recorded:
        info = files.get(entry.path)
        if info is None or entry.function not in info.functions:
            continue
        fid = (info.path, entry.function)
        for role in entry.roles:
            reason = f"recorded: {_WHAT[role]} ({source})"
            if entry.step and role in ("loop", "host"):
                loops = _step_loops(discovery, fid, entry.step, files)
                if loops:
                    discovery.add(CONTEXT_OF[role], fid, reason + f", the loop calling {entry.step.rpartition(':')[2]}",
                                  loops=loops)
                    continue
            discovery.add(CONTEXT_OF[role], fid, reason)
        if "loop" in entry.roles and "eager" not in entry.roles:
            discovery.step_entries.discard(fid)  # host logic around the step, not the model step


def _step_loops(discovery, owner: tuple[str, str], step: str, files: dict[str, ModuleInfo]) -> frozenset[int]:
    """The loops of ``owner`` that call ``step`` (when the call resolves), else its step loops."""
    path, _, qual = step.rpartition(":")
    info = files.get(path)
    target = (info.path, qual) if info is not None else None
    loops = frozenset().union(*(site.loops for callee, site in discovery.calls.get(owner, ()) if callee == target))
    return loops or frozenset(discovery.fn(owner).range_loops)


def stale_findings(infos: list[ModuleInfo], rules: dict[str, Rule], options) -> list[Finding]:
    """GL004 for each recorded function that the analysed code no longer defines."""
    rule = rules.get(STALE)
    if rule is None or STALE not in options.enabled or not options.recorded:
        return []
    files = matched_files(infos, options.recorded)
    source = options.decode_path or "the decode path"
    out = []
    for entry in options.recorded:
        info = files.get(entry.path)
        where = f"{source}:{entry.line}" if entry.line else source
        if info is not None:
            if entry.function in info.functions:
                continue
            message = (f"{where} records {entry.function} ({', '.join(entry.roles)}), which {info.path} no longer "
                       "defines: re-record the decode path (graphlint record)")
            out.append(Finding.from_rule(rule, info.path, 1, message=message, source="static"))
        elif entry.local and not os.path.exists(entry.path):
            message = (f"{where} records {entry.path}:{entry.function} ({', '.join(entry.roles)}), but {entry.path} "
                       "no longer exists: re-record the decode path (graphlint record)")
            out.append(Finding.from_rule(rule, options.decode_path or entry.path, entry.line or 1, message=message,
                                         source="static"))
    return out


def unmatched_paths(infos: list[ModuleInfo], options) -> list[str]:
    """Recorded paths that are not the project's own (see ``RecordedEntry.local``) and match no
    analysed file: their functions are checked nowhere, which the check says in a warning."""
    if not options.recorded:
        return []
    files = matched_files(infos, options.recorded)
    return sorted({e.path for e in options.recorded if not e.local and e.path not in files})
