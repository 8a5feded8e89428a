"""Phase 1: one file's bytes -> a picklable :class:`FileSummary`. Never raises."""

from __future__ import annotations

import ast
import hashlib
import io
import tokenize

import libcst as cst

from graphlint.rules import Rule
from graphlint.static.facts import FileSummary
from graphlint.static.facts import Candidate
from graphlint.static.matchers import build_matchers
from graphlint.static.options import StaticOptions
from graphlint.static.positions import anchor_rank, locate
from graphlint.static.suppressions import parse_suppressions
from graphlint.static.walker import RawCandidate, Walker


def decode(source: bytes) -> str:
    """PEP 263: a BOM or a coding cookie wins, else UTF-8. Raises ValueError with a clear reason."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
    except SyntaxError as exc:
        raise ValueError(f"cannot decode: {exc.msg}") from exc
    try:
        return source.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise ValueError(f"cannot decode as {encoding}: {exc}") from exc


def summarize_file(path: str, source: bytes, rules: dict[str, Rule], options: StaticOptions,
                   imported_tensor_functions: frozenset[str] = frozenset()) -> FileSummary:
    summary = FileSummary(path=path, sha256=hashlib.sha256(source).hexdigest())
    try:
        _summarize(summary, source, rules, options, imported_tensor_functions)
    except Exception as exc:  # the contract: never raise, report instead
        summary.errors.append((1, 0, f"internal error while analysing this file: {exc!r}"))
        summary.data = None
    return summary


def _summarize(summary: FileSummary, source: bytes, rules: dict[str, Rule], options: StaticOptions,
               imported_tensor_functions: frozenset[str]) -> None:
    try:
        text = decode(source)
    except ValueError as exc:
        summary.errors.append((1, 0, str(exc)))
        return
    summary.lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    summary.suppressions, summary.skip_file = parse_suppressions(text)
    if summary.skip_file:
        return
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        summary.errors.append((line, 0, "syntax error: source contains a null byte"))
        return
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        summary.errors.append(_parse_error(text, exc))
        return
    except RecursionError:
        summary.errors.append((1, 0, "syntax error: expression nested too deeply to parse"))
        return
    walker = Walker(summary.path, build_matchers(rules), options)
    try:
        info = walker.run(module, imported_tensor_functions)
    except RecursionError:
        summary.errors.append((1, 0, "internal error: code nested too deeply to analyse"))
        return
    tree = _ast_tree(text) if walker.raw or walker.errors else None  # positions only when needed
    info.candidates = _place(walker.raw, text, tree)
    for path, message in walker.errors:
        summary.errors.append((locate(tree, path, "", 0)[0] if tree is not None else 1, 0, message))
    summary.data = info


def _parse_error(text: str, exc: cst.ParserSyntaxError) -> tuple[int, int, str]:
    """Python's own message and position (libcst's "error at 5:0" often points past the mistake);
    code Python accepts but libcst cannot parse is said to be exactly that."""
    try:
        ast.parse(text)
    except SyntaxError as err:
        return err.lineno or 1, err.offset or 0, f"syntax error: {err.msg}"
    except (ValueError, RecursionError, MemoryError):
        pass
    else:
        return exc.raw_line, 0, f"valid Python that libcst cannot parse: {exc.message}"
    return exc.raw_line, exc.raw_column + 1, f"syntax error: {exc.message}"


def _ast_tree(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # newer syntax than this Python's ast: positions fall back to line 1


def _place(raw: list[RawCandidate], text: str, tree: ast.Module | None) -> list[Candidate]:
    """Turn walker reports into positioned candidates."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")  # not splitlines(): \f is no line end
    placed: dict[tuple, Candidate] = {}
    for r in raw:
        line, byte_col = 1, 0
        if tree is not None:
            cls, rank = anchor_rank(r.stmt, r.anchor)
            line, byte_col = locate(tree, r.path, cls, rank)
        source_line = lines[line - 1] if 0 < line <= len(lines) else ""
        col = len(source_line.encode()[:byte_col].decode(errors="ignore")) + 1
        key = (r.rule.code, line, col)
        if key not in placed:
            placed[key] = Candidate(
                code=r.rule.code, line=line, col=col, function=r.function,
                line_text=source_line.strip(), name=r.name, in_capture=r.in_capture,
                order=r.order, loops=r.loops, flags=r.flags,
            )
    return sorted(placed.values(), key=lambda c: (c.line, c.col, c.code))
