"""Cross-check dynamic findings with ``graphlint check`` on the target's own code.

It lives beside both halves, not in either: it reads what the probes found and runs the static
check, and the inventory report only renders the :class:`CrossRef` it returns.

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
checked -- but only files of the target's own project (:mod:`graphlint.dynamic.project`): never
the standard library, an installed library or graphlint itself, and the report says what was
left out. More than :data:`MAX_FILES` files is a runaway (a whole library reached by mistake): the
cross-reference is skipped with a note instead of parsing for minutes. The static half runs once
with every rule on; the configuration then decides which of its findings count.

:func:`prepare` starts summarising the target's package in a thread while the probes run; the
cross-reference at the end then reads those summaries from its cache and only links. Torch-free,
like the static half.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from graphlint.dynamic import project
from graphlint.finding import Finding
from graphlint.paths import display_path

MAX_FILES = 2000  # more is not a target's own code: an installed library or a whole tree reached by mistake

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


def _everything(paths: list[str], entries: list[str], cache_dir: str | None):
    """(settings with every rule on, settings under the user's configuration)."""
    from graphlint.check_settings import resolve
    from graphlint.config_file import load_config

    config = load_config()
    configured = resolve(config, paths=paths, entries=list(entries), use_cache=False, jobs=1)
    everything = dataclasses.replace(resolve(config, paths=paths, entries=list(entries), select=["ALL"],
                                             use_cache=False, jobs=1), per_file_ignores=(),
                                     cache_dir=Path(cache_dir) if cache_dir else None)
    return everything, configured


def _too_many(settings) -> int:
    """The number of files ``settings`` would parse when it is more than :data:`MAX_FILES`, else 0."""
    from graphlint.discovery import discover

    count = len(discover(settings, []))
    return count if count > MAX_FILES else 0


def _static_findings(paths: list[str], entries: list[str], cache_dir: str | None = None):
    """(findings with every rule on, the enabled codes per file under the user's configuration);
    raises :class:`_Runaway` rather than parse more than :data:`MAX_FILES` files."""
    from graphlint.check import run

    everything, configured = _everything(paths, entries, cache_dir)
    count = _too_many(everything)
    if count:
        raise _Runaway(count)
    findings = [f for f in run(everything).findings if f.category != "meta"]

    def enabled(path: str) -> set[str]:
        codes = set(configured.options.enabled)
        for matcher, ignored in configured.per_file_ignores:
            if matcher(Path(path)):
                codes -= ignored
        return codes

    return findings, enabled


class _Runaway(Exception):
    def __init__(self, count: int) -> None:
        super().__init__(count)
        self.count = count


class Prepared:
    """The static half's per-file summaries of the target's own package, made in a thread while the
    probes run (:func:`prepare`), kept in a temporary cache that the final cross-reference reads.
    ``close()`` never waits: a run that ends early (a refused target) does not sit out the parse;
    the thread then removes the cache itself when it is done."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.cache_dir = tempfile.mkdtemp(prefix="graphlint-xref-")
        self.paths = _target_package(target) if target else []
        self._thread = threading.Thread(target=self._summarise, name="graphlint-xref", daemon=True)
        self._lock, self._closed = threading.Lock(), False

    def _summarise(self) -> None:
        try:
            import libcst  # noqa: F401
            from graphlint.check import run

            everything, _configured = _everything(self.paths, [], self.cache_dir)
            if not _too_many(everything):
                run(everything)  # its findings are thrown away: the cache keeps the summaries
        except Exception:  # noqa: BLE001 - the final cross-reference reports whatever went wrong
            pass
        finally:
            with self._lock:
                if self._closed:
                    shutil.rmtree(self.cache_dir, ignore_errors=True)

    def start(self) -> "Prepared":
        if self.paths:
            self._thread.start()
        return self

    def wait(self) -> None:
        if self._thread.is_alive():
            self._thread.join()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if not self._thread.is_alive():
                shutil.rmtree(self.cache_dir, ignore_errors=True)


def _target_package(target: str) -> list[str]:
    """What the cross-reference will check of the target's own code, as far as the spec says: the
    target file widened to its package, or a ``module:FACTORY`` spec's top-level package."""
    where = target.rpartition(":")[0]
    if where.endswith(".py"):
        files, _note = own_files([display_path(where)] if Path(where).is_file() else [], target)
        return _packages([_package_root(f) for f in files])
    roots, _note = project.target_roots(target)
    return [display_path(r) for r in roots if (Path(r) / "__init__.py").is_file()]


def prepare(target: str) -> Prepared:
    """Start summarising ``target``'s own package now (see :class:`Prepared`); ``close()`` it after."""
    return Prepared(target).start()


def own_files(files, target: str = "") -> tuple[list[str], str]:
    """(the files of the target's own project, a note on what was left out or '')."""
    roots, note = project.target_roots(target) if target else ([], "")
    roots = tuple(sorted(set(roots) | set(project.roots())))
    kept = [f for f in files if project.is_project_file(f, roots, strict=True)]
    left = sorted(set(files) - set(kept))
    if left:
        where = sorted({_library_name(f) for f in left})
        note = "; ".join(n for n in (note, f"left out {len(left)} file(s) that are not the target's own code ("
                                     + ", ".join(where[:4]) + (", ..." if len(where) > 4 else "") + ")") if n)
    return kept, note


def _library_name(path: str) -> str:
    """``transformers (installed)``, ``graphlint``, ``the standard library``, or the directory."""
    parts = Path(os.path.abspath(path)).parts
    for i, part in enumerate(parts[:-1]):
        if part in ("site-packages", "dist-packages"):
            return f"{parts[i + 1].removesuffix('.py')} (installed)"
    resolved = Path(path).resolve()
    if resolved.is_relative_to(project.GRAPHLINT_DIR):
        return "graphlint"
    if project.is_stdlib(path):
        return "the standard library"
    return display_path(Path(path).parent)


def _kernel_lines(static: list[Finding]) -> list[tuple[str, Finding]]:
    """(kernel function name, GL504 finding) for every ``name(...).launch(`` the static half flags."""
    out = []
    for f in static:
        match = re.search(r"(\w+)\s*\([^()]*\)\s*\.launch\(", f.line_text) if f.rule == "GL504" else None
        if match:
            out.append((match.group(1), f))
    return out


def cross_reference(findings: list[Finding], entries: list[str], sources: list[str] = (),
                    modules: list[str] = (), *, target: str = "", prepared: Prepared | None = None,
                    library_files: list[str] | None = None, cache_dir: str | None = None,
                    ran: list[str] = ()) -> CrossRef:
    """Run the static half on the dynamic findings' files, the regions' ``sources`` and the target's
    own ``modules`` (each widened to its package; only the project of ``target``, the spec, counts),
    and bucket every finding. ``prepared``: summaries started earlier (see :func:`prepare`).

    ``library_files``: check exactly these files instead, wherever they are (an installed library's
    files that the findings blame: ``graphlint zoo``), with the ``entries`` that lie in them (the
    functions the step ran there); nothing is widened, so no runaway. ``cache_dir`` keeps the
    summaries of files several calls share. ``ran``: ``path:first-last`` of the functions the probed
    step ran (``DeviceResult.ran``); when given, static-only findings are listed only inside them --
    the package also holds code the probed decoder never runs (the eager reference beside a
    full-graph decoder), which is not its report's."""
    if library_files is not None:
        files, left_out = sorted(f for f in set(library_files) if Path(f).is_file()), ""
        entries, outside = [e for e in entries if e.rsplit(":", 1)[0] in files], False
        paths = files
    else:
        files = sorted({f.path for f in findings if f.line > 0} | {e.rsplit(":", 1)[0] for e in entries}
                       | set(sources) | set(modules))
        files, left_out = own_files([f for f in files if Path(f).is_file()], target)
        kept_entries = [e for e in entries if e.rsplit(":", 1)[0] in files]
        outside = len(kept_entries) != len(entries)  # a region's function is not the target's own code
        entries = [] if outside else kept_entries  # partial entries would hide a region
        paths = _packages(sorted({_package_root(f) for f in files}))
    suffix = f" ({left_out})" if left_out else ""
    if not paths:
        return CrossRef(False, "nothing to cross-reference: no finding points at a source file of the target's own "
                        "project" + suffix)
    try:
        import libcst  # noqa: F401
    except ImportError as exc:
        return CrossRef(False, f"skipped: libcst is not importable ({exc}), so `graphlint check` cannot run here")
    if prepared is not None:
        prepared.wait()
    try:
        static, enabled = _static_findings(paths, entries, prepared.cache_dir if prepared else cache_dir)
    except _Runaway as runaway:
        return CrossRef(False, f"skipped: {', '.join(paths)} hold {runaway.count} Python files, more than the "
                        f"{MAX_FILES} a target's own code is expected to have; run `graphlint check` on the engine's "
                        "own package instead" + suffix)
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
    how = (f"the {len(entries)} function(s) the probed step ran (its regions, and what stage() called) as "
           "decode entries" if entries
           else "its default decode entries (a region's function is not the target's own code)" if outside
           else "its default decode entries (some regions are closures, which cannot be named as entries)")
    result = CrossRef(True, f"`graphlint check` on {', '.join(paths)} with {how}{suffix}", static_rules=static_lines)
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
    spans = _spans(ran)
    seen, elsewhere = set(), set()
    for f in active:
        key = (f.path, f.line, f.category)
        if key[:2] in dynamic_lines or key in seen or f.path not in files:
            continue
        seen.add(key)
        if spans and not any(first <= f.line <= last for first, last in spans.get(f.path, ())):
            elsewhere.add(key[:2])
            continue
        result.status[key] = STATIC_ONLY
        result.static_only.append(f)
    if elsewhere:
        result.detail += (f"; {len(elsewhere)} line(s) it flags in code the probed step never ran (not this "
                          "decoder's code) are left out")
    return result


def _spans(ran: list[str]) -> dict[str, list[tuple[int, int]]]:
    """``{"dsv4/moe.py": [(40, 71), ...]}`` from ``DeviceResult.ran``'s ``path:first-last``."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for item in ran:
        path, _, lines = item.rpartition(":")
        first, _, last = lines.partition("-")
        if path and first.isdigit() and last.isdigit():
            spans.setdefault(path, []).append((int(first), int(last)))
    return spans

