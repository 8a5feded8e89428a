"""The one finding type both halves produce and every report consumes.

A static finding says "this line will break capture if it runs in the decode step"; a
dynamic finding says "a probe saw this happen". Both point at a user source line, so the
inventory can cross-reference them by ``(path, line, category)``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

#: The five fixed categories. Every rule and every finding carries exactly one.
CATEGORIES: tuple[str, ...] = (
    "host-sync",
    "allocation",
    "data-dependent",
    "cross-device",
    "capture-hygiene",
)

#: Family digit of a rule code (GL<digit>xx) -> category. GL0xx is the meta family
#: (parse errors, unused suppressions) and maps to no hazard category.
FAMILY_CATEGORY: dict[str, str] = {
    "1": "host-sync",
    "2": "allocation",
    "3": "data-dependent",
    "4": "cross-device",
    "5": "capture-hygiene",
}

SEVERITIES: tuple[str, ...] = ("error", "warning", "info")


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
    extra: tuple[tuple[str, Any], ...] = field(default=(), compare=False)

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.col, self.rule, self.message)

    def with_(self, **changes: Any) -> "Finding":
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["chain"] = list(self.chain)
        data["evidence"] = list(self.evidence)
        data["extra"] = {k: v for k, v in self.extra}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Finding":
        data = dict(data)
        data["chain"] = tuple(data.get("chain", ()))
        data["evidence"] = tuple(data.get("evidence", ()))
        data["extra"] = tuple(sorted((data.get("extra") or {}).items()))
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})
