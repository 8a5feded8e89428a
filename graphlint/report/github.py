"""GitHub Actions workflow commands: one annotation per finding on the pull request diff.

``::error file=a.py,line=3,col=9,title=GL101 host-sync-item::message``. Severity maps to the
command (error / warning / notice). Suppressed findings are never annotated, even with
``--show-suppressed``: a reviewer cannot act on them. Escaping follows @actions/core.
"""

from __future__ import annotations

from graphlint.finding import Finding
from graphlint.report.context import ReportContext

COMMAND = {"error": "error", "warning": "warning", "info": "notice"}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(findings: list[Finding], ctx: ReportContext) -> str:
    lines = []
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
