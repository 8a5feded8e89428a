"""GitHub Actions workflow commands: one annotation per finding on the pull request diff.

``::error file=a.py,line=3,col=9,title=GL101 host-sync-item::message``. Severity maps to the
command (error / warning / notice). Suppressed findings are never annotated, even with
``--show-suppressed``: a reviewer cannot act on them. Escaping follows @actions/core.

In CI the annotations are all anyone reads, so what the text report opens with comes too when
it changes what the check means: a ``::warning`` when the decode path was only guessed (its
errors are warnings) or not found, and a ``::notice`` at the first unchecked hazard of each
function named like decode code that nothing on the decode path reaches.
"""

from __future__ import annotations

from graphlint.finding import Finding
from graphlint.report.context import ReportContext
from graphlint.report.decode_path import headline

COMMAND = {"error": "error", "warning": "warning", "info": "notice"}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def _decode_path_annotations(record: dict) -> list[str]:
    lines = []
    first = headline(record)[0]
    if record["guessed"] or first.startswith("No decode path"):
        lines.append(f"::warning title={_prop('graphlint decode path')}::{_data(first)}")
    for row in record["unreached"]:
        line = row["hazards"][0]["line"] if row["hazards"] else 1
        message = (f"{row['function']} is named like decode code but is not on the decode path ({row['why']}): "
                   f"{len(row['hazards'])} hazard(s) not checked; give it with --entry {row['path']}:{row['function']}")
        lines.append(f"::notice file={_prop(row['path'])},line={line},title={_prop('graphlint unchecked')}::"
                     f"{_data(message)}")
    return lines


def render_github(findings: list[Finding], ctx: ReportContext) -> str:
    lines = _decode_path_annotations(ctx.decode_path) if ctx.decode_path and ctx.files else []
    for f in findings:
        if f.suppressed:
            continue
        props = [f"file={_prop(f.path)}", f"line={f.line}"]
        if f.col:
            props.append(f"col={f.col}")
        props.append(f"title={_prop(f'{f.rule} {f.name}')}")
        message = f.message + (f" (via {' -> '.join(f.chain)})" if ctx.show_chain and f.chain else "")
        lines.append(f"::{COMMAND.get(f.severity, 'warning')} {','.join(props)}::{_data(message)}")
    return "".join(line + "\n" for line in lines)
