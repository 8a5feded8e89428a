"""The one finding type both halves produce and every report consumes.

A static finding says "this line will break capture if it runs in the decode step"; a
dynamic finding says "a probe saw this happen". Both point at a user source line, so the
inventory can cross-reference them by ``(path, line, category)``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from graphlint.rules import Rule


INTERNAL_ERROR = "GL002"  # graphlint crashed (on a file, or in a whole-program stage): the result is incomplete
#: the evidence of the GL002 a crash of a whole-program stage gives (the cross-file pass, the link):
#: the check reports it beside every per-file finding, so it fails like any error (exit 1), not as
#: a file graphlint could not analyse (exit 2)
WHOLE_PROGRAM = "static:whole-program"


@dataclass(frozen=True)
class Finding:
    """One hazard at one source location.

    ``path`` is POSIX and relative to the working directory when it lies under it.
    ``line`` and ``col`` are 1-based (``col`` 0 when unknown, e.g. a runtime event
    attributed to a frame). ``chain`` is the call chain from a decode entry to the
    enclosing function (static) or the user stack (dynamic), outermost first.
    ``evidence`` names what saw it: ``"static"`` or a probe (``"tracer"``, ``"sync-debug"``,
    ``"capture"``, ``"replay"``, ``"soak"``) with detail after a colon.
    """

    rule: str
    name: str
    category: str
    severity: str
    path: str
    line: int
    col: int
    message: str
    chain: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()
    source: str = "static"  # "static" | "dynamic"
    function: str = ""  # enclosing qualname, used by baselines
    line_text: str = ""  # the stripped source line, used by baselines and text output
    fix: str = ""
    device: str = ""  # dynamic findings: the device the probe ran on ("cuda:0", "cpu")
    region: str = ""  # dynamic findings: the target region ("layer3.graph_a")
    suppressed: bool = False
    suppression_reason: str = ""
    # What a probe knows beyond the location (not part of a finding's identity):
    count: int = field(default=1, compare=False)  # times per step the probe saw it
    in_graph: bool | None = field(default=None, compare=False)  # seen in captured code; None: not asked (static)
    kernel: str = field(default="", compare=False)  # GL593: the kernel that ran outside its capture
    regions: tuple[str, ...] = field(default=(), compare=False)  # every region a line ran in, when several

    @classmethod
    def from_rule(cls, rule: Rule, path: str, line: int, col: int = 0, *, message: str | None = None,
                  **fields: Any) -> "Finding":
        """The one way to turn a rule into a finding: code, name, category, severity and fix come
        from the rule; ``message`` (default: the rule's) and ``fields`` from the analyzer."""
        fields.setdefault("severity", rule.severity)
        return cls(rule=rule.code, name=rule.name, category=rule.category, path=path, line=line, col=col,
                   message=rule.message if message is None else message, fix=rule.fix, **fields)

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.col, self.rule, self.message)

    def with_(self, **changes: Any) -> "Finding":
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able; the probe fields travel under ``extra``, and only when set (the schema
        ``graphlint inventory --format json`` has always written)."""
        data = asdict(self)
        data["chain"] = list(self.chain)
        data["evidence"] = list(self.evidence)
        data["extra"] = {}
        for name, default in _PROBE_FIELDS.items():
            value = data.pop(name)
            if value != default:
                data["extra"][name] = value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Finding":
        data = dict(data)
        data["chain"] = tuple(data.get("chain", ()))
        data["evidence"] = tuple(data.get("evidence", ()))
        data.update({k: v for k, v in (data.pop("extra", None) or {}).items() if k in _PROBE_FIELDS})
        data["regions"] = tuple(data.get("regions", ()))
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


_PROBE_FIELDS = {f.name: f.default for f in fields(Finding) if f.name in ("count", "in_graph", "kernel", "regions")}
