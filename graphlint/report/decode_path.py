"""What the check took for the decode path, in words: the lines every text report opens with.

A hook that cannot see the model it guards must say so, so before the findings come:

* when no evidence was found (nothing captured or replayed, no per-token loop, no ``--entry``), one
  line saying the decode path was guessed from function names, that its findings are therefore at
  most warnings, and how to give the path instead;
* one or two lines of what the decode path is: captured regions (file:line), host steps and
  per-token loops (by function), other entries, the number of functions on it and of the
  unresolved calls among them (calls the call graph could not follow: where graphlint stops
  seeing the engine), by kind: into libraries, user callbacks, optional kernels, and the ones
  graphlint did not follow (its own gap: only those say graphlint cannot see code it was given);
* one note per reported file whose functions are named like decode code and hold a hazard but are
  never reached, instead of a silent "No findings".

Input is the plain record of :func:`graphlint.static.decode_record.decode_path_record`.
"""

from __future__ import annotations

SHOWN = 3  # locations listed per kind before "and N more"
NOTES = 3  # files with unreached functions noted one by one in a report; more get one summary line


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else plural or word + 's'}"


def _count(n: int, word: str, plural: str | None = None) -> str:
    return f"no {word}" if n == 0 else _plural(n, word, plural)


def _at(rows: list[dict]) -> str:
    places = [f"{r['path']}:{r['line']}" if r.get("line") else r["path"] for r in rows]
    return _listed(places)


def _named(rows: list[dict]) -> str:
    return _listed([r["function"] for r in rows])


def _listed(places: list[str]) -> str:
    if not places:
        return ""
    more = f" and {len(places) - SHOWN} more" if len(places) > SHOWN else ""
    return f" ({', '.join(places[:SHOWN])}{more})"


def guidance() -> str:
    """How to give the decode path instead of letting graphlint guess it."""
    return ("Give the decode path with --entry FILE:QUALNAME, `entry = [...]` in [tool.graphlint], "
            "or a path recorded by `graphlint record` (--decode-path).")


def headline(record: dict, listed_below: bool = False) -> list[str]:
    """The opening lines (plain text): the guess warning if any, then what the decode path is."""
    out = []
    captured, host, loops = record["captured_regions"], record["host_steps"], record["token_loops"]
    eager, guessed = record["eager_entries"], record["guessed_entries"]
    if not (captured or host or loops or eager or guessed):
        out.append("No decode path found: nothing is captured or replayed, no per-token loop, no entry is given "
                   "and no function matches hot-names, so no hazard was checked. " + guidance())
        return out
    if record["guessed"]:
        out.append("Decode path guessed from function names (hot-names): no capture, replay, per-token loop or "
                   "given entry was found, so its findings are at most warnings. " + guidance())
        first = f"Decode path: {_plural(len(guessed), 'entry', 'entries')} chosen by name"
    else:
        parts = [_count(len(captured), "captured region") + _at(captured),
                 _count(len(host), "host step") + _named(host),
                 _count(len(loops), "per-token loop") + _named(loops)]
        if eager:
            parts.append(_plural(len(eager), "other entry", "other entries"))
        if guessed:
            parts.append(_plural(len(guessed), "entry", "entries") + " chosen by name")
        first = "Decode path: " + ", ".join(parts)
    out.append(first + ".")
    functions = _plural(record["functions"], "function")
    if record["guessed_functions"] and not record["guessed"]:
        functions += (f" ({record['guessed_functions']} reached only through entries chosen by name: "
                      "at most warnings there)")
    n = record["unresolved_calls"]
    where = "listed below" if listed_below else "`graphlint entries` lists them"
    calls = "no unresolved call" if n == 0 else f"{_plural(n, 'unresolved call')}{kinds_said(record)} ({where})"
    out.append(f"  {functions} on it, {calls}.")
    return out


#: how each kind of unresolved call (graphlint.static.unresolvedkinds) is counted in a sentence:
#: (one, several); and what it means, with what to do, in the group ``graphlint entries`` lists it in
KIND_WORDS = {
    "library": ("into a library", "into libraries"),
    "callback": ("user callback", "user callbacks"),
    "optional": ("optional kernel", "optional kernels"),
    "not-followed": ("not followed", "not followed"),
}
KIND_HEADINGS = {
    "library": "code outside the checked paths (add the package's path, or give the call's "
               "target with --entry)",
    "callback": "a parameter no caller in the checked paths binds (the user passes it; give "
                "what it runs with --entry)",
    "optional": "an import guarded by `except ImportError`, a torch.ops custom op or a "
                "compiled extension",
    "not-followed": "the value comes from code graphlint analyses, and the call graph did not "
                    "follow it (graphlint's own gap)",
}


def kinds_said(record: dict) -> str:
    """``: 7 into libraries, 3 user callbacks, 2 not followed`` -- each kind with a count, in the
    order of :data:`KIND_WORDS`; empty when the record has no kinds (an older record)."""
    counts = record.get("unresolved_kinds") or {}
    said = [f"{n} {KIND_WORDS.get(k, (k, k))[n != 1]}" for k, n in counts.items() if n]
    return ": " + ", ".join(said) if said else ""


def unreached_notes(record: dict, limit: int | None = NOTES) -> list[str]:
    """One line per file: its functions named like decode code that hold a hazard and that no decode
    path reaches, each with why, and how to check them anyway. Over ``limit`` files (a whole engine
    checked, not a commit's few files), one line says how many and where to see them."""
    by_file: dict[str, list[dict]] = {}
    for row in record["unreached"]:
        by_file.setdefault(row["path"], []).append(row)
    if limit is not None and len(by_file) > limit:
        rows = record["unreached"]
        hazards = sum(len(r["hazards"]) for r in rows)
        shown = ", ".join(f"{r['path']}:{r['function']}" for r in rows[:2])
        return [f"note: {len(rows)} functions named like decode code in {len(by_file)} files are not on the decode "
                f"path, so {_plural(hazards, 'hazard')} in them {'is' if hazards == 1 else 'are'} not checked "
                f"({shown}, ...): `graphlint entries` lists them with why."]
    out = []
    for path, rows in by_file.items():
        hazards = sum(len(r["hazards"]) for r in rows)
        one = len(rows) == 1
        whys = {r["why"] for r in rows}
        if len(whys) == 1:
            listed = f"{', '.join(r['function'] for r in rows)} ({whys.pop()})"
        else:
            listed = "; ".join(f"{r['function']} ({r['why']})" for r in rows)
        it = "it" if one else "them"
        out.append(f"note: {path}: named like decode code but not on the decode path: {listed}; "
                   f"{_plural(hazards, 'hazard')} in {it} {'is' if hazards == 1 else 'are'} not checked. "
                   f"If {'it runs' if one else 'they run'} every token, give {it} with --entry "
                   f"{path}:{rows[0]['function']}.")
    return out


def by_class_listing(record: dict) -> list[str]:
    """The calls on a receiver only an unbound parameter gives, resolved to the package's classes
    that define the method (:mod:`graphlint.static.openreceivers`)."""
    rows = record.get("by_class") or []
    if not rows:
        return []
    out = [f"Resolved by class ({len(rows)}): a receiver only a parameter no caller binds gives (the user passes it);"
           " followed into the checked paths' classes that define the method with a signature the call binds"]
    for r in rows:
        where = f"{r['path']}:{r['line']}" if r["line"] else r["path"]
        out.append(f"    {where}  {r['call']}(...)  in {r['function']}  ->  {', '.join(r['targets'])}")
    return out


def unreached_count(record: dict | None) -> int:
    return len(record["unreached"]) if record else 0


def unresolved_listing(record: dict) -> list[str]:
    """``graphlint entries``: every unresolved call at its line, and the calls resolved by class."""
    out = by_class_listing(record)
    rows = record["unresolved"]
    if not rows:
        return out
    out += [f"Unresolved calls on the decode path ({len(rows)}): the call graph stops there"]
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r.get("kind", "not-followed"), []).append(r)
    order = [k for k in KIND_WORDS if k in groups] + [k for k in groups if k not in KIND_WORDS]
    for kind in order:
        n = len(groups[kind])
        out.append(f"  {n} {KIND_WORDS.get(kind, (kind, kind))[n != 1]}: {KIND_HEADINGS.get(kind, '')}")
        for r in groups[kind]:
            where = f"{r['path']}:{r['line']}" if r["line"] else r["path"]
            out.append(f"    {where}  {r['call']}(...)  in {r['function']}")
    return out
