"""The per-file budget and the target Python version: their spelling in ``[tool.graphlint]`` and on
the command line, and their defaults.

``target-version`` is the Python whose grammar the checked code is written in: ``"3.12"`` (or
ruff's ``"py312"``). Default: the running interpreter, unless the project's ``requires-python``
(in the same pyproject.toml) starts at a newer Python -- a 3.12-only project checked by a 3.11
pre-commit hook is 3.12 code. CPython's own parser judges every file for that version (a file it
rejects is a GL000 with Python's message); when the target is newer than the running Python,
CPython cannot judge files using the new syntax, and libcst reads them alone.

The budget (see :mod:`graphlint.static.budget` and :mod:`graphlint.workers`; 0 turns a limit off):

* ``max-file-size`` (``"2MB"``): bigger files are not analysed;
* ``max-depth`` (1500): files nesting deeper are not analysed;
* ``file-timeout`` (60 seconds): the analysis of one file is stopped after that many CPU seconds (Linux);
* ``file-memory`` (``"4GB"``): ... or once its process holds that much memory (Linux).

Each over-budget file is one GL005 finding at line 1 naming the limit; the run goes on.
"""

from __future__ import annotations

import re
import sys
from typing import Any


class ConfigError(ValueError):
    """A value that cannot work (graphlint.config_file raises its own ConfigError with this text)."""

DEFAULT_FILE_TIMEOUT = 60.0  # torch's largest file (1.4 MB) takes about 20 s on a loaded 2-core machine
DEFAULT_FILE_MEMORY = 4 << 30  # the same file needs about 800 MB
OLDEST, NEWEST = (3, 0), (3, 14)  # what libcst's grammar covers

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20, "MIB": 1 << 20,
          "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30}


def parse_budget(values: dict[str, Any], where: str) -> dict[str, Any]:
    """The scalar keys of a config table (``where``: the table) or of the command line (``where``
    empty: each is named by its flag), checked and converted."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        label = f"{where} {key}" if where else f"--{key}"
        if key == "target-version":
            out[key] = parse_version(value, label)
        elif key == "max-depth":
            out[key] = _count(value, label)
        elif key in ("max-file-size", "file-memory"):
            out[key] = parse_size(value, label)
        elif key == "file-timeout":
            out[key] = _seconds(value, label)
    return out


def parse_version(value: Any, where: str) -> tuple[int, int]:
    text = value if isinstance(value, str) else ""
    match = re.fullmatch(r"\s*(?:py(\d)(\d+)|(\d+)\.(\d+))\s*", text)
    if match is None:
        raise ConfigError(f'{where}: expected a Python version such as "3.12" or "py312", got {_show(value)}')
    major, minor = (int(g) for g in (match[1] or match[3], match[2] or match[4]))
    if not OLDEST <= (major, minor) <= NEWEST:
        raise ConfigError(f"{where}: Python {major}.{minor} is outside what graphlint parses "
                          f"({OLDEST[0]}.{OLDEST[1]} to {NEWEST[0]}.{NEWEST[1]})")
    return major, minor


def parse_size(value: Any, where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", value) if isinstance(value, str) else None
    if match is None or match[2].upper() not in _UNITS:
        raise ConfigError(f'{where}: expected a size such as "4MB", "512KB" or a number of bytes, got {_show(value)}')
    return int(float(match[1]) * _UNITS[match[2].upper()])


def _count(value: Any, where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise ConfigError(f"{where}: expected a whole number (0: no limit), got {_show(value)}")


def _seconds(value: Any, where: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 and value == value:
        return float(value)
    raise ConfigError(f"{where}: expected a number of seconds (0: no limit), got {_show(value)}")


def _show(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:80]


def default_target(requires_python: str) -> tuple[int, int]:
    """The running Python, or the lowest Python ``requires-python`` allows when that is newer."""
    running = sys.version_info[:2]
    floor = requires_floor(requires_python)
    return floor if floor is not None and running < floor <= NEWEST else running


def requires_floor(spec: str) -> tuple[int, int] | None:
    """The lowest ``3.x`` a PEP 440 specifier such as ``">=3.10,<4"`` admits (None: no lower bound)."""
    floors = [(int(m[2]), int(m[3])) for m in re.finditer(r"(>=|~=|==|>)\s*(\d+)\.(\d+)", spec or "")]
    return max(floors) if floors else None
