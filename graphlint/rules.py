"""Rule packs: YAML data that says what each rule is, why it matters and how to fix it.

A pack is a YAML file with a top-level ``rules:`` list. Matching logic never lives in YAML
beyond naming a matcher kind and its parameters (``matcher: method-call`` with
``params: {methods: [item]}``); the matchers themselves live in ``graphlint/static/``.
User packs (``[tool.graphlint] rule-packs``) use the same schema, so a team can declare that
its own kernel wrapper syncs without writing Python.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

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


def _builtin_pack_dir() -> Path:
    """The repository's ``rules/`` in a checkout or editable install; in a wheel the same files
    ship as the ``graphlint.packs`` package (see pyproject's package-dir mapping)."""
    checkout = Path(__file__).resolve().parent.parent / "rules"
    if checkout.is_dir():
        return checkout
    return Path(__file__).resolve().parent / "packs"


BUILTIN_PACK_DIR = _builtin_pack_dir()

CODE_RE = re.compile(r"^GL\d{3}$")
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
REQUIRED = ("code", "name", "category", "severity", "message", "why", "fix")
OPTIONAL = ("matcher", "params", "bad", "good", "seed", "dynamic", "probes", "observes", "previous_names")


class RuleError(Exception):
    """A rule pack or a rule selector is invalid; the CLI turns this into exit code 2."""


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    category: str  # one of CATEGORIES, or "meta" for GL0xx
    severity: str
    message: str
    why: str
    fix: str
    matcher: str = ""  # static matcher kind; empty for runtime-only and meta rules
    params: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    bad: tuple[str, ...] = ()  # each marks where its finding is reported: ``marked_positions``
    good: tuple[str, ...] = ()
    seed: str = ""  # which category of the seed inventory this generalises
    dynamic: bool = False  # reported by the dynamic probes rather than the static analyzer
    probes: tuple[str, ...] = ()  # dynamic: which probes can report it
    observes: tuple[str, ...] = ()  # dynamic: what a probe observes that this rule reports (``observation_codes``)
    pack: str = ""  # file the rule came from
    #: names the rule had before a rename: a selector, suppression or ``explain`` that gives one still
    #: means this rule (ruff's redirects), so renaming a rule breaks no user's config
    previous_names: tuple[str, ...] = ()

    def answers_to(self, name: str) -> bool:
        return name == self.name or name in self.previous_names


def _as_examples(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise RuleError(f"{where}: bad/good must be a string or a list of strings")


#: A position marker: a comment line holding only carets (and an optional note after them).
MARKER_RE = re.compile(r"^[ \t]*#[ \t]*(\^+)(?:[ \t].*)?$")

MARKER_HOWTO = """\
Add a comment line right under the line the finding is reported on, with a caret under its
column (counted in the example as written; the `#` may stand at the start of the line):

      return logits.argmax(-1).item()
  #          ^ GL101

Several findings get one marker line each. `python -m graphlint.docs --markers` prints every
static bad example with its markers where the findings are (`--pack FILE` for your own pack).
See docs/rule-packs.md, "Position markers"."""


def marked_positions(example: str) -> tuple[tuple[int, int], ...]:
    """The (line, col) each ``# ^`` marker line points at, both 1-based, as Fixit's
    ``Invalid(line=, column=)`` cases do: the nearest line above that is not a marker, and the
    column of the first caret. Markers are comments, so the example runs unchanged with them.

    Raises ValueError for a marker with no code line above it."""
    positions, target = [], 0
    for number, line in enumerate(example.splitlines(), 1):
        match = MARKER_RE.match(line)
        if not match:
            target = number
        elif target == 0:
            raise ValueError(f"the marker on line {number} has no code line above it")
        else:
            positions.append((target, match.start(1) + 1))
    return tuple(positions)


def mark_example(example: str, positions: Iterable[tuple[int, int]], label: str) -> str:
    """``example`` with its markers replaced by ones at ``positions`` (line numbers of
    ``example`` as given): what a failing example test prints, so the fix is a copy. Column 0
    (unknown: runtime findings) gets the caret in column 3, which pins the line only."""
    wanted: dict[int, list[int]] = {}
    for line, col in sorted(set(positions)):
        wanted.setdefault(line, []).append(col)
    out = []
    for number, line in enumerate(example.rstrip("\n").splitlines(), 1):
        if MARKER_RE.match(line):
            continue
        out.append(line)
        out += ["#" + " " * ((col if col >= 2 else 3) - 2) + f"^ {label}" for col in wanted.get(number, ())]
    return "\n".join(out) + "\n"


def _as_names(value: Any, where: str) -> tuple[str, ...]:
    names = (value,) if isinstance(value, str) else tuple(value or ())
    if not all(isinstance(n, str) and NAME_RE.match(n) for n in names):
        raise RuleError(f"{where} must be kebab-case names")
    return names


def observation_codes(rules: Iterable[Rule]) -> dict[str, str]:
    """What a probe observed -> the code of the rule that reports it; each observation belongs
    to one rule. A probe looks its observations up here, so rule codes live in the packs only."""
    codes: dict[str, str] = {}
    for rule in rules:
        for name in rule.observes:
            if codes.setdefault(name, rule.code) != rule.code:
                raise RuleError(f"{rule.pack}: rule {rule.code} observes {name!r}, which {codes[name]} reports already")
    return codes


def _check_markers(bad: tuple[str, ...], good: tuple[str, ...], where: str, required: bool) -> None:
    """Bad examples pin where their finding is reported (required for static and meta rules,
    whose findings always have a line and column); good examples report nothing to pin."""
    for index, example in enumerate(bad, 1):
        try:
            positions = marked_positions(example)
        except ValueError as exc:
            raise RuleError(f"{where}: bad example {index}: {exc}.\n{MARKER_HOWTO}") from None
        if required and not positions:
            raise RuleError(f"{where}: bad example {index} has no position marker.\n{MARKER_HOWTO}")
    for index, example in enumerate(good, 1):
        if any(MARKER_RE.match(line) for line in example.splitlines()):
            raise RuleError(f"{where}: good example {index} has a position marker, but a good example reports "
                            "nothing: delete the `# ^` line")


def parse_rule(raw: Any, pack: str, require_markers: bool = True) -> Rule:
    if not isinstance(raw, dict):
        raise RuleError(f"{pack}: every entry under 'rules' must be a mapping")
    where = f"{pack}: rule {raw.get('code', '?')}"
    unknown = set(raw) - set(REQUIRED) - set(OPTIONAL)
    if unknown:
        raise RuleError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    missing = [k for k in REQUIRED if not raw.get(k)]
    if missing:
        raise RuleError(f"{where}: missing {', '.join(missing)}")
    code, name, category = str(raw["code"]), str(raw["name"]), str(raw["category"])
    if not CODE_RE.match(code):
        raise RuleError(f"{where}: code must look like GL123")
    if not NAME_RE.match(name):
        raise RuleError(f"{where}: name must be kebab-case, got {name!r}")
    if name in CATEGORIES or name in ("meta", "all"):
        raise RuleError(f"{where}: name {name!r} is a selector already (a category or ALL)")
    family = code[2]
    if family not in FAMILY_CATEGORY and family != "0":
        raise RuleError(f"{where}: there is no family GL{family}xx (GL0xx meta, GL1xx-GL5xx the five categories)")
    expected = FAMILY_CATEGORY.get(family, "meta")
    if category != expected:
        raise RuleError(f"{where}: family GL{family}xx is category {expected!r}, not {category!r}")
    if raw["severity"] not in SEVERITIES:
        raise RuleError(f"{where}: severity must be one of {', '.join(SEVERITIES)}")
    params = raw.get("params") or {}
    if not isinstance(params, dict):
        raise RuleError(f"{where}: params must be a mapping")
    bad, good = _as_examples(raw.get("bad"), where), _as_examples(raw.get("good"), where)
    dynamic = bool(raw.get("dynamic", False))
    _check_markers(bad, good, where, required=require_markers and not dynamic)
    observes = _as_names(raw.get("observes"), f"{where}: observes")
    if observes and not dynamic:
        raise RuleError(f"{where}: `observes` needs `dynamic: true` (only a probe observes something at run time)")
    return Rule(
        code=code,
        name=name,
        category=category,
        severity=str(raw["severity"]),
        message=str(raw["message"]).strip(),
        why=str(raw["why"]).strip(),
        fix=str(raw["fix"]).strip(),
        matcher=str(raw.get("matcher") or ""),
        params=params,
        bad=bad,
        good=good,
        seed=str(raw.get("seed") or ""),
        dynamic=dynamic,
        probes=tuple(raw.get("probes") or ()),
        observes=observes,
        pack=pack,
        previous_names=_as_names(raw.get("previous_names"), f"{where}: previous_names"),
    )


#: Parsed packs of this process, by (path, size, mtime, require_markers): the dynamic half and the
#: tests load the same packs again and again, and a :class:`Rule` is immutable.
_PACKS: dict[tuple[str, int, int, bool], list[Rule]] = {}


def load_pack(path: Path, require_markers: bool = True) -> list[Rule]:
    """One YAML rule pack, parsed with libyaml's loader where PyYAML has it (12x faster than the
    pure-Python one: 5 ms for the built-in packs instead of 57, on every ``graphlint check``)."""
    import yaml  # local: keeps `graphlint rules --help` fast

    try:
        stat = path.stat()
        key = (str(path), stat.st_size, stat.st_mtime_ns, require_markers)
        if key in _PACKS:
            return list(_PACKS[key])
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except OSError as exc:
        raise RuleError(f"cannot read rule pack {path}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise RuleError(f"rule pack {path} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        raise RuleError(f"rule pack {path} must have a top-level 'rules:' list")
    rules = [parse_rule(raw, path.name, require_markers) for raw in data["rules"]]
    _PACKS[key] = rules
    return list(rules)


def load_rules(extra_packs: Iterable[Path] = (), require_markers: bool = True) -> dict[str, Rule]:
    """Built-in packs first, then user packs; a user rule may not reuse a built-in code.

    ``require_markers=False`` only for ``python -m graphlint.docs --markers``, which shows where
    the markers of unmarked examples go."""
    if not BUILTIN_PACK_DIR.is_dir():
        raise RuleError(
            f"built-in rule packs not found at {BUILTIN_PACK_DIR}; reinstall graphlint"
        )
    rules: dict[str, Rule] = {}
    names: dict[str, str] = {}
    for path in [*sorted(BUILTIN_PACK_DIR.glob("*.yaml")), *map(Path, extra_packs)]:
        for rule in load_pack(path, require_markers):
            if rule.code in rules:
                raise RuleError(f"{path.name}: rule code {rule.code} is already defined in {rules[rule.code].pack}")
            for name in (rule.name, *rule.previous_names):
                if name in names:
                    raise RuleError(f"{path.name}: rule name {name} is already used by {names[name]}")
                names[name] = rule.code
            rules[rule.code] = rule
    observation_codes(rules.values())
    return dict(sorted(rules.items()))


def runtime_rules() -> dict[str, Rule]:
    """The rules the probes report: the runtime pack alone, so that the dynamic half does not
    depend on the static packs (``graphlint check`` validates all packs together)."""
    return {rule.code: rule for rule in load_pack(BUILTIN_PACK_DIR / "runtime.yaml")}


def expand_selector(rules: dict[str, Rule], selector: str) -> set[str]:
    """A selector is ``ALL``, a code, a code prefix (``GL1``), a rule name or a category."""
    sel = selector.strip()
    if sel.upper() == "ALL":
        return set(rules)
    if sel.upper().startswith("GL") and sel[2:].isdigit():
        hits = {code for code in rules if code.startswith(sel.upper())}
    elif sel in CATEGORIES or sel == "meta":
        hits = {code for code, rule in rules.items() if rule.category == sel}
    else:
        hits = {code for code, rule in rules.items() if rule.answers_to(sel)}
    if not hits:
        raise RuleError(f"unknown rule selector {selector!r}{_did_you_mean(rules, sel)}")
    return hits


def _did_you_mean(rules: dict[str, Rule], selector: str) -> str:
    """``; did you mean host-sync-item?`` for a misspelt name, code or category, else what a
    selector may be (as ruff answers ``--select E5O1``)."""
    import difflib

    if selector.upper().startswith("GL"):
        code = "GL" + selector[2:].upper().replace("O", "0")  # GL1O1: a letter O for a zero
        if code[2:].isdigit() and len(code) < 5:
            return f" (no rule code starts with {code}: the families are GL0xx-GL5xx; `graphlint rules` lists them)"
        guess = difflib.get_close_matches(code, list(rules), n=1, cutoff=0.75)
        if not guess and code[2:].isdigit():
            return " (no such rule; `graphlint rules` lists them)"
    else:
        words = [*(r.name for r in rules.values()), *CATEGORIES, "meta", "ALL"]
        guess = difflib.get_close_matches(selector.lower(), words, n=1, cutoff=0.75)
    if guess:
        return f"; did you mean {guess[0]}?"
    return " (expected ALL, a code like GL101, a prefix like GL1, a rule name or a category)"


def select_rules(rules: dict[str, Rule], select: Iterable[str] = ("ALL",), ignore: Iterable[str] = ()) -> set[str]:
    """Codes enabled by ``select`` minus ``ignore``; meta rules (GL0xx) stay on unless ignored."""
    chosen: set[str] = set()
    for sel in select:
        chosen |= expand_selector(rules, sel)
    chosen |= {code for code, rule in rules.items() if rule.category == "meta"}
    for sel in ignore:
        chosen -= expand_selector(rules, sel)
    return chosen
