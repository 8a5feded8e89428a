"""Phase 1: one file's bytes -> a picklable :class:`FileSummary`. Never raises (but lets a
:class:`BaseException` such as the worker's per-file timeout through).

Before libcst parses a file, :mod:`graphlint.static.budget` checks its size, asks CPython's parser
(for the target Python version) whether it is Python at all, and how deeply it nests; the same
``ast`` tree then places the findings. Only when the target is newer than the running Python and
``ast`` cannot read the file does libcst decide alone, and place findings from its own tree."""

from __future__ import annotations

import hashlib
import re
import io
from abc import ABCMeta
import tokenize

import libcst as cst
from libcst import CSTNode

from graphlint.rules import Rule
from graphlint.static.budget import NOT_ANALYSED, OverBudget, SourceRejected, check_brackets, check_depth, check_size, python_tree
from graphlint.static.chunkparse import parse_in_pieces
from graphlint.static.datatables import blank_tables
from graphlint.static.compilemodes import scan as scan_modes
from graphlint.static.defaultdevice import FACT as DEFAULT_DEVICE, sets_default_device
from graphlint.static.facts import Candidate, FileSummary
from graphlint.static.keptrees import keep, kept
from graphlint.static.matchers import build_matchers
from graphlint.static.options import StaticOptions
from graphlint.static.regions import device_modules
from graphlint.static.positions import Locator, Ranker, cst_position
from graphlint.static.sharing import share_equal_values
from graphlint.static.stepflow import forget_pending, read_names
from graphlint.static.stopchecks import exits_at_end, exits_loop, stop_check, stops_loop
from graphlint.static.stmtpaths import encode_path
from graphlint.static.suppressions import parse_suppressions
from graphlint.static.walker import RawCandidate, Walker

REBINDS = re.compile(r"^[ \t]*(?:global|nonlocal)[ \t]", re.M)  # a statement binding a name elsewhere


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
    except MemoryError:
        summary.errors.append((1, 0, f"{NOT_ANALYSED}ran out of memory while analysing it"))
        summary.data = None
    except RecursionError:  # deeper than this thread's stack allows (workers give it a large one)
        summary.errors.append((1, 0, f"{NOT_ANALYSED}code nested too deeply to analyse (RecursionError); "
                                     "lower max-depth or exclude the file"))
        summary.data = None
    except Exception as exc:  # the contract: never raise, report instead
        summary.errors.append((1, 0, f"internal error while analysing this file: {exc!r}"))
        summary.data = None
    finally:
        forget_pending()  # a walk abandoned mid-function leaves its step-flow facts behind
    return summary


def _summarize(summary: FileSummary, source: bytes, rules: dict[str, Rule], options: StaticOptions,
               imported_tensor_functions: frozenset[str]) -> None:
    try:
        check_size(source, options.max_file_size)
        text = decode(source)
    except OverBudget as exc:
        summary.errors.append((1, 0, exc.message))
        return
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
    reuse = kept(summary.path, summary.sha256)  # (:mod:`.keptrees`): this process parsed it once already
    try:
        tree = python_tree(text, options.target_version)
        if tree is None:
            check_brackets(text)  # more than CPython allows crashes libcst's parser
        elif reuse is None:  # a kept tree's text passed it
            check_depth(tree, text, options.max_depth)
    except SourceRejected as exc:
        summary.errors.append((exc.line, exc.col, exc.message))
        return
    except OverBudget as exc:
        summary.errors.append((exc.line, 0, exc.message))
        return
    if reuse is not None:
        text, module = reuse  # the text blanked as below and its tree
    else:
        if tree is not None:
            text = blank_tables(text, tree)  # (:mod:`.datatables`): the same lines and columns, a fraction of the parse
        try:
            module = parse_cst(text, checked=tree is not None, tree=tree)
        except cst.ParserSyntaxError as exc:
            summary.errors.append(_parse_error(exc, tree))
            return
        except RecursionError:
            summary.errors.append((1, 0, "syntax error: expression nested too deeply to parse"))
            return
    walker = Walker(summary.path, build_matchers(rules), options)
    walker.info.default_device = sets_default_device(text, module)  # :mod:`.defaultdevice`: the file's, the project's
    walker.oracle.default_device = int(walker.info.default_device or DEFAULT_DEVICE in imported_tensor_functions)
    walker.device_modules = device_modules(text, module)  # :mod:`.regions`: their ``.graph(g)``
    walker.steady.read_source(text)  # what no walk needs to look for
    walker.values.hands_back_scan = ":=" in text or REBINDS.search(text) is not None  # (:mod:`.handback`)
    info = walker.run(module, imported_tensor_functions)
    if tree is not None:
        locator = Locator(tree)
        info.candidates = _place(walker.raw, text, locator)
        for path, message in walker.errors:
            summary.errors.append((locator.locate(path, "", 0)[0], 0, message))
    else:
        info.candidates = _place_by_cst(walker.raw, text, module)
        summary.errors.extend((1, 0, message) for _, message in walker.errors)
    info.graph_modes, info.graph_mode_args = scan_modes(text, tree)
    summary.data = info
    share_equal_values(info, walker.flows.ir.shared)  # the linking process holds every summary at once
    walker.__dict__.clear()  # its closures refer to it: without this the tree waits for the collector
    if tree is not None:
        keep(summary.path, summary.sha256, text, module)


_POST_INIT = getattr(CSTNode, "__post_init__", None)


def _unvalidated(self) -> None:
    pass


def parse_cst(text: str, checked: bool, tree=None) -> cst.Module:
    """``libcst.parse_module``, without libcst's validation of each node as it is built when
    CPython's parser already accepted the text (``checked``). The validation re-checks invariants
    the parser guarantees for accepted source (libcst's own ``CSTNode.__post_init__`` says it
    could be skipped when parsing); it is about 15% of a parse, and the parse two thirds of a
    worker's time (measured on torch's files). Switched off only around this one call, on the
    worker's one analysing thread; source only libcst can read (``checked`` False) keeps it.
    With CPython's ``tree`` of the text, a large module is parsed in pieces
    (:mod:`.chunkparse`): the same tree, faster."""
    if not checked or _POST_INIT is None:
        return cst.parse_module(text)
    CSTNode.__post_init__ = _unvalidated
    try:
        module = parse_in_pieces(text, tree, cst.parse_module) if tree is not None else None
        return module if module is not None else cst.parse_module(text)
    finally:
        CSTNode.__post_init__ = _POST_INIT


def plain_node_inits() -> None:
    """Give libcst's node classes a plainer ``__init__``, in a worker process only
    (:func:`graphlint.check._init_worker`). libcst's native parser builds every node through its
    class's dataclass ``__init__``, which stores each field with ``object.__setattr__`` (the nodes
    are frozen); the plain one stores it through the slot's descriptor, with the same parameters,
    defaults and factories, and calls ``__post_init__`` (validation) as before: the same nodes,
    about a tenth of a parse less (measured on torch's files). Only classes whose ``__init__`` is
    the generated one and whose fields are all ordinary slots; any other keeps its own."""
    stack, seen = [CSTNode], set()
    while stack:
        cls = stack.pop()
        if cls in seen:
            continue
        seen.add(cls)
        stack.extend(cls.__subclasses__())
        plain = _plain_init(cls)
        if plain is not None:
            type.__setattr__(cls, "__init__", plain)


def _plain_init(cls: type):
    import dataclasses

    own = cls.__dict__.get("__init__")
    if (own is None or getattr(getattr(own, "__code__", None), "co_filename", "") != "<string>"
            or "__slots__" not in cls.__dict__ or "__dataclass_fields__" not in cls.__dict__
            or not hasattr(cls, "__post_init__")):
        return None
    missing, names, params, body = dataclasses.MISSING, {"_unset": object()}, [], []
    for i, f in enumerate(dataclasses.fields(cls)):
        slot = getattr(cls, f.name, None)
        if not f.init or f.kw_only or f._field_type is not dataclasses._FIELD or not f.name.isidentifier() \
                or type(slot).__name__ != "member_descriptor":
            return None
        names[f"_set{i}"] = slot.__set__
        if f.default_factory is not missing:
            names[f"_make{i}"] = f.default_factory
            params.append(f"{f.name}=_unset")
            body.append(f"_set{i}(self, _make{i}() if {f.name} is _unset else {f.name})")
        else:
            if f.default is not missing:
                names[f"_default{i}"] = f.default
            params.append(f.name if f.default is missing else f"{f.name}=_default{i}")
            body.append(f"_set{i}(self, {f.name})")
    body.append("self.__post_init__()")
    exec(f"def __init__(self, {', '.join(params)}):\n    " + "\n    ".join(body) + "\n", names)
    return names["__init__"]


class _PlainChecks(ABCMeta):
    """libcst's node classes with the ``isinstance``/``issubclass`` of plain classes."""

    __instancecheck__ = type.__instancecheck__
    __subclasscheck__ = type.__subclasscheck__


def plain_node_checks() -> None:
    """Give libcst's node classes (all ``ABC``s, through ``CSTNode``) plain classes' type checks,
    in a worker process only (:func:`graphlint.check._init_worker`). The walk asks ``isinstance``
    of a node against a libcst class millions of times; when the node is not of exactly that
    class, ``ABCMeta.__instancecheck__`` runs in Python, for the virtual subclasses
    ``ABC.register`` can add, which libcst never registers: the same answers, about 5% of a
    worker's time on torch's files (measured). A class whose metaclass is not ``ABCMeta`` itself
    (another libcst) is left as it is."""
    stack: list[type] = [CSTNode]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if type(cls) is ABCMeta:
            cls.__class__ = _PlainChecks


def _parse_error(exc: cst.ParserSyntaxError, tree) -> tuple[int, int, str]:
    """libcst rejects what CPython accepted (``tree``): said to be exactly that; without a tree
    (syntax newer than the running Python), libcst's own words."""
    if tree is not None:
        return exc.raw_line, 0, f"valid Python that libcst cannot parse: {exc.message}"
    return exc.raw_line, exc.raw_column + 1, f"syntax error: {exc.message}"


def _place(raw: list[RawCandidate], text: str, locator: Locator) -> list[Candidate]:
    """Turn walker reports into positioned candidates (``ast`` byte columns -> characters)."""
    lines = _lines(text)
    ranker = Ranker()
    placed: dict[tuple, Candidate] = {}
    for r in raw:
        cls, rank = ranker.rank(r.stmt, r.anchor)
        line, byte_col = locator.locate(r.path, cls, rank)
        source_line = lines[line - 1] if 0 < line <= len(lines) else ""
        col = len(source_line.encode()[:byte_col].decode(errors="ignore")) + 1
        _add(placed, r, line, col, source_line)
    return sorted(placed.values(), key=lambda c: (c.line, c.col, c.code))


def _place_by_cst(raw: list[RawCandidate], text: str, module: cst.Module) -> list[Candidate]:
    """The same from libcst's positions: only for files the running Python cannot parse (a
    generic metadata provider costs several parses, so never on the common path)."""
    from libcst.metadata import MetadataWrapper, PositionProvider

    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider) if raw else {}
    lines = _lines(text)
    placed: dict[tuple, Candidate] = {}
    for r in raw:
        line, col = cst_position(positions, r.stmt, r.anchor)
        _add(placed, r, line, col, lines[line - 1] if 0 < line <= len(lines) else "")
    return sorted(placed.values(), key=lambda c: (c.line, c.col, c.code))


def _lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")  # not splitlines(): \f is no line end


def _add(placed: dict[tuple, Candidate], r: RawCandidate, line: int, col: int, source_line: str) -> None:
    key = (r.rule.code, line, col)
    if key not in placed:
        params = r.rule.params
        reads = read_names(r.anchor) if params.get("result_readback") or params.get("eager_result") else ()
        flags = r.flags
        if reads and params.get("eager_result") is False:
            # a read all the same, never the by-design one, whose output stays on the device (:mod:`.stepresult`)
            flags = flags | {"not-the-result", "on-device"}
        elif reads and stop_check(r.anchor):  # the by-design one only as a host loop's exit (:mod:`.hostreads`)
            flags = flags | ({"not-the-result", "stop-check"} if exits_loop(r.stmt) else {"not-the-result"})
            if exits_at_end(r.stmt):  # ``if done.all(): <log>; break``: in the step loop itself only
                flags = flags | {"stop-check-end"}
        if reads and params.get("eager_result") and exits_loop(r.stmt):
            flags = flags | {"loop-exit"}  # a truth test a host step loop may stop on (:mod:`.contexts`)
        if reads and stops_loop(r.stmt):
            flags = flags | {"stop-test"}  # an eager loop's own stop check: never its one read (:mod:`.stepresult`)
        placed[key] = Candidate(
            code=r.rule.code, line=line, col=col, function=r.function,
            line_text=source_line.strip(), name=r.name, in_capture=r.in_capture,
            order=r.order, loops=r.loops, flags=flags, cond=r.cond, reads=reads,
            branch=encode_path(r.path) if reads else (),
        )
