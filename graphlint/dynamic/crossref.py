"""Cross-check dynamic findings with ``graphlint check`` on the target's own code.

Every finding lands in one bucket: confirmed by both halves, dynamic only (a static miss: the
most valuable line of the report), static with the rule switched off (by ``select``/``ignore``,
``per-file-ignores`` or a ``# graphlint: ignore`` comment: not a miss, the user's choice), or static
only (the static half flags a line the probes never saw happen, e.g. a branch the probed steps
did not take). The halves are matched by line, not by category: the same line is often one
hazard seen from two sides (static: ``torch.arange`` sized by the Python position, data-dependent;
dynamic: a fresh ``arange`` every step, allocation). A kernel that escaped a capture (GL593) is
seen at runtime where the compiled kernel is *called*; the static half flags the ``.launch(...)``
inside its ``@cute.jit`` function, so those two are matched by the kernel's name.

What is checked: every file a probe attributed a finding to, the files defining the regions, and
the target's own modules (wherever they are, also outside the working directory), each widened
to its package, so a wrapper that reaches its engine through an attribute still has the engine
checked. The static half runs once with every rule on; the configuration then decides which of
its findings count. Torch-free, like the static half.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path

from graphlint.finding import Finding

CONFIRMED, DYNAMIC_ONLY, STATIC_ONLY = "confirmed by both", "dynamic only (static miss)", "static only (not reached at runtime)"
IGNORED = "static: rule ignored by config"
SUPPRESSED = "static: suppressed in the source"


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


def _package_root(path: str) -> str:
    """The outermost directory above ``path`` that is still a package (has ``__init__.py``)."""
    here = Path(path).parent
    while (here / "__init__.py").is_file() and (here.parent / "__init__.py").is_file():
        here = here.parent
    return str(here / "__init__.py") if (here / "__init__.py").is_file() else path


def _static_findings(paths: list[str], entries: list[str]):
    """(findings with every rule on, the enabled codes per file under the user's configuration)."""
    from graphlint.check import run
    from graphlint.check_settings import resolve
    from graphlint.config_file import load_config

    config = load_config()
    configured = resolve(config, paths=paths, entries=list(entries), use_cache=False, jobs=1)
    everything = dataclasses.replace(resolve(config, paths=paths, entries=list(entries), select=["ALL"],
                                             use_cache=False, jobs=1), per_file_ignores=())
    findings = [f for f in run(everything).findings if f.category != "meta"]

    def enabled(path: str) -> set[str]:
        codes = set(configured.options.enabled)
        for matcher, ignored in configured.per_file_ignores:
            if matcher(Path(path)):
                codes -= ignored
        return codes

    return findings, enabled


def _kernel_lines(static: list[Finding]) -> list[tuple[str, Finding]]:
    """(kernel function name, GL504 finding) for every ``name(...).launch(`` the static half flags."""
    out = []
    for f in static:
        match = re.search(r"(\w+)\s*\([^()]*\)\s*\.launch\(", f.line_text) if f.rule == "GL504" else None
        if match:
            out.append((match.group(1), f))
    return out


def cross_reference(findings: list[Finding], entries: list[str], sources: list[str] = (),
                    modules: list[str] = ()) -> CrossRef:
    """Run the static half on the dynamic findings' files, the regions' ``sources`` and the target's
    own ``modules`` (each widened to its package), and bucket every finding."""
    files = sorted({f.path for f in findings if f.line > 0} | {e.rsplit(":", 1)[0] for e in entries}
                   | set(sources) | set(modules))
    files = [f for f in files if Path(f).is_file()]
    paths = _packages(sorted({_package_root(f) for f in files}))
    if not paths:
        return CrossRef(False, "nothing to cross-reference: no finding points at a source file")
    try:
        import libcst  # noqa: F401
    except ImportError as exc:
        return CrossRef(False, f"skipped: libcst is not importable ({exc}), so `graphlint check` cannot run here")
    try:
        static, enabled = _static_findings(paths, entries)
    except ImportError as exc:
        return CrossRef(False, f"skipped: the static analyzer is not available ({exc})")
    except Exception as exc:  # the report must still come out
        return CrossRef(False, f"skipped: `graphlint check` failed: {type(exc).__name__}: {exc}")
    active = [f for f in static if not f.suppressed and f.rule in enabled(f.path)]
    static_lines: dict[tuple[str, int], list[str]] = {}
    for f in active:
        codes = static_lines.setdefault((f.path, f.line), [])
        if f.rule not in codes:
            codes.append(f.rule)
    switched_off = {(f.path, f.line): (SUPPRESSED if f.suppressed else IGNORED, f.rule)
                    for f in static if f not in active}
    how = (f"the {len(entries)} probed region function(s) as decode entries" if entries
           else "its default decode entries (some regions are closures, which cannot be named as entries)")
    result = CrossRef(True, f"`graphlint check` on {', '.join(paths)} with {how}", static_rules=static_lines)
    kernels = _kernel_lines(active)
    for f in findings:
        key = (f.path, f.line, f.category)
        kernel = f.kernel
        launch = next((s for name, s in kernels if kernel and name in kernel), None) if f.rule == "GL593" else None
        if key[:2] in static_lines:
            result.status[key] = CONFIRMED
        elif launch is not None:
            result.status[key] = CONFIRMED
            result.static_rules[key[:2]] = [f"{launch.rule} at {launch.path}:{launch.line}"]
        elif key[:2] in switched_off:
            bucket, rule = switched_off[key[:2]]
            result.status[key] = f"{bucket} ({rule})"
        else:
            result.status[key] = DYNAMIC_ONLY
    dynamic_lines = {(f.path, f.line) for f in findings}
    seen = set()
    for f in active:
        key = (f.path, f.line, f.category)
        if key[:2] not in dynamic_lines and key not in seen and f.path in files:
            seen.add(key)
            result.status[key] = STATIC_ONLY
            result.static_only.append(f)
    return result

