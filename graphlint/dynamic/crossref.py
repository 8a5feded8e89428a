"""Cross-check dynamic findings with ``graphlint check`` on the same source files.

Every finding lands in one of three buckets: confirmed by both halves, dynamic only (a static
miss: the most valuable line of the report), or static only (the static half flags a line the
probes never saw happen, e.g. a branch the probed steps did not take). The halves are matched
by line, not by category: the same line is often one hazard seen from two sides (static:
``torch.arange`` sized by the Python position, data-dependent; dynamic: a fresh ``arange`` every
step, allocation), and calling that a miss would be wrong. The static rules are shown beside it. The static half runs with the probed regions' functions as its decode
entries, so it looks at exactly the code the probes ran. Torch-free, like the static half.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from graphlint.finding import Finding

CONFIRMED, DYNAMIC_ONLY, STATIC_ONLY = "confirmed by both", "dynamic only (static miss)", "static only (not reached at runtime)"


@dataclass
class CrossRef:
    ran: bool
    detail: str  # why it was skipped, or what it checked
    status: dict[tuple[str, int, str], str] = field(default_factory=dict)  # (path, line, category) -> bucket
    static_only: list[Finding] = field(default_factory=list)
    static_rules: dict[tuple[str, int], list[str]] = field(default_factory=dict)  # (path, line) -> codes

    def of(self, finding: Finding) -> str:
        return self.status.get((finding.path, finding.line, finding.category), "")

    def rules_at(self, finding: Finding) -> list[str]:
        return self.static_rules.get((finding.path, finding.line), [])


def _packages(files: list[str]) -> list[str]:
    """The directories holding ``files`` (the static half follows calls across a package),
    outermost only; a file directly in the working directory stands for itself."""
    dirs = sorted({str(Path(f).parent) if Path(f).parent != Path(".") else f for f in files})
    return [d for d in dirs if not any(d != o and Path(d).is_relative_to(o) for o in dirs if Path(o).is_dir())]


def cross_reference(findings: list[Finding], entries: list[str], sources: list[str] = ()) -> CrossRef:
    """Run the static half on the dynamic findings' files and the regions' ``sources`` (so the
    package a closure region lives in is checked whole), and bucket every finding."""
    files = sorted({f.path for f in findings if f.line > 0} | {e.rsplit(":", 1)[0] for e in entries} | set(sources))
    files = [f for f in files if not Path(f).is_absolute() and Path(f).is_file()]
    paths = _packages(files)
    if not paths:
        return CrossRef(False, "nothing to cross-reference: no finding points at a source file")
    try:
        import libcst  # noqa: F401
    except ImportError as exc:
        return CrossRef(False, f"skipped: libcst is not importable ({exc}), so `graphlint check` cannot run here")
    try:
        from graphlint.config import load_config
        from graphlint.runner import run
        from graphlint.settings import resolve

        settings = resolve(load_config(), paths=paths, entries=list(entries), use_cache=False, jobs=1)
        static = [f for f in run(settings).findings if not f.suppressed and f.category != "meta"]
    except ImportError as exc:
        return CrossRef(False, f"skipped: the static analyzer is not available ({exc})")
    except Exception as exc:  # the report must still come out
        return CrossRef(False, f"skipped: `graphlint check` failed: {type(exc).__name__}: {exc}")
    static_lines: dict[tuple[str, int], list[str]] = {}
    for f in static:
        static_lines.setdefault((f.path, f.line), [])
        if f.rule not in static_lines[(f.path, f.line)]:
            static_lines[(f.path, f.line)].append(f.rule)
    dynamic_keys = {(f.path, f.line, f.category) for f in findings}
    dynamic_lines = {(path, line) for path, line, _ in dynamic_keys}
    how = (f"the {len(entries)} probed region function(s) as decode entries" if entries
           else "its default decode entries (some regions are closures, which cannot be named as entries)")
    result = CrossRef(True, f"`graphlint check` on {', '.join(paths)} with {how}", static_rules=static_lines)
    for key in dynamic_keys:
        result.status[key] = CONFIRMED if key[:2] in static_lines else DYNAMIC_ONLY
    seen = set()
    for f in static:
        key = (f.path, f.line, f.category)
        if key[:2] not in dynamic_lines and key not in seen and f.path in files:
            seen.add(key)
            result.status[key] = STATIC_ONLY
            result.static_only.append(f)
    return result
