"""Ways to break a Python file, for the fuzzer (bench/fuzz.py) and the fuzz tests.

Each mutation takes the source bytes and a ``random.Random`` and returns new bytes. They are what
an unlucky user or an attacker feeds a pre-commit hook: cut files, stray tokens, tabs, BOMs, CRLF,
bytes that are not UTF-8, nesting at and past every limit (brackets, chains of attributes,
subscripts, calls, operators, ``not``, ``and``, ``elif``, conditional expressions, lambdas), huge
lines and literals, syntax newer than the running Python, and broken suppression comments.
``DEPTHS`` brackets graphlint's limits: CPython's 200 nested brackets and ~3,000 tree levels,
graphlint's ``max-depth`` (1,500), libcst's crash points (1,400 brackets, 20,000 attributes).
"""

from __future__ import annotations

import random
from typing import Callable

DEPTHS = (50, 199, 201, 500, 999, 1200, 1499, 1501, 3000, 5000, 20_000)
TOKENS = [b"(", b")", b"[", b"]", b"{", b"}", b":", b",", b"=", b"\\", b"'", b'"', b'"""', b"#", b"@", b"->",
          b"lambda", b"def ", b"class ", b"if ", b"else", b"elif ", b"return", b"yield", b"await ", b"async ",
          b"with ", b"for ", b"in ", b"not ", b"and ", b"or ", b"is ", b"import ", b"from ", b".", b"*", b"**",
          b"\t", b"\n", b"\r", b"    ", b";", b"match ", b"case ", b"type ", b"global ", b"nonlocal ", b"del ",
          b"f'{", b"}'", b"x.item()", b"torch.cuda.synchronize()", b"\x0c", b"\x0b", b"\x00", b"\xff",
          "é".encode(), "\u2028".encode(), b"\xef\xbb\xbf", b"0x", b"1e", b"_", b"...", b"!", b"$", b"?"]
SUPPRESSIONS = [b"# graphlint: ignore", b"# graphlint: ignore[GL101]", b"# graphlint: ignore(GL102)",
                b"# graphlint: ignore GL102", b"# graphlint: ignore: GL102", b"# graphlint: ignore[GL102",
                b"# graphlint: ignore[]", b"# graphlint: ignroe[GL101]", b"# graphlint: skip-file",
                b"# graphlint: ignore[GL000] -- hide it", b"# graphlint:", b"# graphlint: ignore[GL101] -- why # noqa",
                b"# graphlint: ignore[" + b"GL101," * 500 + b"]"]
NEWER_SYNTAX = [b"type Alias = int\n", b"def generic[T](x: T) -> T:\n    return x\n",
                b"class Box[T]:\n    pass\n", b"try:\n    pass\nexcept* ValueError:\n    pass\n",
                b"match x:\n    case [a, *rest]:\n        pass\n", b"x = f'{'nested'}'\n"]


def chain(kind: str, n: int) -> bytes:
    """One statement nesting ``n`` levels of one kind, with a host sync at the bottom."""
    leaf = "x.item()"
    text = {
        "paren": lambda: "(" * n + leaf + ")" * n,
        "list": lambda: "[" * n + leaf + "]" * n,
        "attr": lambda: "x" + ".t" * n + ".item()",
        "sub": lambda: "x" + "[0]" * n + ".item()",
        "call": lambda: "x.f" + "()" * n + ".item()",
        "sum": lambda: " + ".join([leaf] * n),
        "unary": lambda: "-" * n + leaf,
        "not": lambda: "not " * n + leaf,
        "and": lambda: " and ".join([leaf] * n),
        "ifexp": lambda: f"{leaf} if x else " * n + leaf,
        "lambda": lambda: "lambda: " * n + leaf,
        "str": lambda: " ".join(["'s'"] * n),
        "cmp": lambda: " < ".join([leaf] * n),
    }[kind]()
    return f"y = {text}\n".encode()


def elif_chain(n: int) -> bytes:
    return ("if x.item():\n    pass\n" + "elif x.item():\n    pass\n" * n).encode()


def indent_chain(n: int) -> bytes:
    return "".join(" " * i + "if x:\n" for i in range(n)).encode() + b" " * n + b"pass\n"


def _offset(data: bytes, rng: random.Random) -> int:
    return rng.randint(0, len(data)) if data else 0


def _line_start(data: bytes, rng: random.Random) -> int:
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == 10]
    return rng.choice(starts)


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: _offset(data, rng)]


def insert_token(data: bytes, rng: random.Random) -> bytes:
    at = _offset(data, rng)
    return data[:at] + rng.choice(TOKENS) + data[at:]


def delete_span(data: bytes, rng: random.Random) -> bytes:
    at = _offset(data, rng)
    return data[:at] + data[at + rng.randint(1, 200):]


def flip_bytes(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if out:
            out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def duplicate_lines(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    return b"\n".join(lines[:i] + lines[i:i + rng.randint(1, 30)] * rng.randint(2, 5) + lines[i:])


def tabs(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    for _ in range(rng.randint(1, 20)):
        i = rng.randrange(len(lines))
        lines[i] = lines[i].replace(b"    ", b"\t", rng.randint(1, 3))
    return b"\n".join(lines)


def dedent_line(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    lines[i] = lines[i].lstrip()
    return b"\n".join(lines)


def bom(data: bytes, rng: random.Random) -> bytes:
    if rng.random() < 0.5:
        return b"\xef\xbb\xbf" + data
    at = _line_start(data, rng)
    return data[:at] + b"\xef\xbb\xbf" + data[at:]  # a second BOM, or one mid-file


def newlines(data: bytes, rng: random.Random) -> bytes:
    return data.replace(b"\n", rng.choice([b"\r\n", b"\r", b"\n\r", b"\x0c\n", b"\n\n"]))


def not_utf8(data: bytes, rng: random.Random) -> bytes:
    at = _offset(data, rng)
    junk = bytes(rng.randrange(0x80, 0x100) for _ in range(rng.randint(1, 6)))
    if rng.random() < 0.3:
        cookie = rng.choice([b"# -*- coding: latin-1 -*-\n", b"# coding: no-such-codec\n", b"# coding: utf-16\n"])
        return cookie + data[:at] + junk + data[at:]
    return data[:at] + junk + data[at:]


def deep(data: bytes, rng: random.Random) -> bytes:
    kind = rng.choice(["paren", "list", "attr", "sub", "call", "sum", "unary", "not", "and", "ifexp", "lambda",
                       "str", "cmp", "elif", "indent"])
    n = rng.choice(DEPTHS)
    if kind == "elif":
        stmt = elif_chain(n)
    elif kind == "indent":
        stmt = indent_chain(min(n, 2000))
    else:
        stmt = chain(kind, n)
    at = _line_start(data, rng)
    return data[:at] + stmt + data[at:]


def long_line(data: bytes, rng: random.Random) -> bytes:
    """A one-line literal of 5 KB to 200 KB (the fuzzer adds files past max-file-size itself)."""
    n = rng.choice([500, 2_000, 20_000])
    item = rng.choice([b"1, ", b"x.item(), ", b"'s', ", b"(1, 2), "])
    return data + b"\nTABLE = [" + item * n + b"]\n"


def suppression(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    comment = rng.choice(SUPPRESSIONS)
    lines[i] = lines[i] + b"  " + comment if rng.random() < 0.7 else comment + b"\n" + lines[i]
    return b"\n".join(lines)


def newer_syntax(data: bytes, rng: random.Random) -> bytes:
    at = _line_start(data, rng)
    return data[:at] + rng.choice(NEWER_SYNTAX) + data[at:]


MUTATIONS: dict[str, Callable[[bytes, random.Random], bytes]] = {
    f.__name__: f for f in (truncate, insert_token, delete_span, flip_bytes, duplicate_lines, tabs, dedent_line,
                            bom, newlines, not_utf8, deep, long_line, suppression, newer_syntax)
}
#: How often each is drawn: the cheap, common breakages most, the expensive ones less.
WEIGHTS = {"truncate": 8, "insert_token": 12, "delete_span": 8, "flip_bytes": 6, "duplicate_lines": 4, "tabs": 5,
           "dedent_line": 5, "bom": 4, "newlines": 4, "not_utf8": 5, "deep": 8, "long_line": 1, "suppression": 6,
           "newer_syntax": 4}


def mutate(data: bytes, rng: random.Random, count: int = 0) -> tuple[bytes, list[str]]:
    """``count`` (1-3 when 0) mutations drawn by weight; returns the bytes and their names."""
    names = rng.choices(list(WEIGHTS), weights=list(WEIGHTS.values()), k=count or rng.randint(1, 3))
    for name in names:
        data = MUTATIONS[name](data, rng)
    return data, names
