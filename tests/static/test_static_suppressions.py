"""Suppression comments are parsed into line ranges; the runner applies them."""

from __future__ import annotations

from graphlint.static.suppressions import parse_suppressions


def parse(src: str):
    return parse_suppressions(src)


def test_end_of_line_codes_names_and_reason():
    sups, skip = parse("x = 1\ny = t.item()  # graphlint: ignore[GL101, host-sync-tolist] -- read once per request\n")
    assert not skip
    (s,) = sups
    assert (s.comment_line, s.first_line, s.last_line) == (2, 2, 2)
    assert s.codes == ("GL101", "host-sync-tolist")
    assert s.reason == "read once per request"


def test_end_of_line_covers_the_whole_multiline_statement():
    src = "y = foo(\n    a,\n    t.item(),\n)  # graphlint: ignore\nz = 2\n"
    (s,) = parse(src)[0]
    assert (s.first_line, s.last_line, s.codes) == (1, 4, ())


def test_comment_inside_a_multiline_statement_covers_it():
    src = "y = foo(\n    t.item(),  # graphlint: ignore[GL101]\n)\n"
    (s,) = parse(src)[0]
    assert (s.first_line, s.last_line) == (1, 3)


def test_own_line_covers_the_next_statement():
    src = "a = 1\n# graphlint: ignore[GL105] -- host flag really\n\nif t:\n    pass\n"
    (s,) = parse(src)[0]
    assert (s.comment_line, s.first_line, s.last_line) == (2, 4, 4)
    assert s.reason == "host flag really"


def test_skip_file_and_noqa_is_not_honoured():
    assert parse("# graphlint: skip-file\nx = t.item()\n")[1] is True
    assert parse("x = t.item()  # noqa\n") == ([], False)
    assert parse("x = t.item()  # noqa: GL101\n") == ([], False)


def test_broken_source_does_not_raise():
    sups, skip = parse("x = (  # graphlint: ignore\n")
    assert len(sups) == 1 and not skip


def test_empty_brackets_are_not_a_blanket_suppression():
    (empty,), _ = parse("y = t.item()  # graphlint: ignore[] -- meant to list codes\n")
    (blanket,), _ = parse("y = t.item()  # graphlint: ignore -- everything\n")
    assert empty.codes == ("[]",) and blanket.codes == ()


def test_the_comment_column_is_where_graphlint_directive_starts():
    """GL001/GL003 point at the directive itself, also behind another tool's comment."""
    (s,) = parse("y = t.item()  # graphlint: ignore[GL101]\n")[0]
    assert s.comment_col == len("y = t.item()  ") + 1
    (s,) = parse("    z = 1  # noqa: E501  # graphlint: ignore[GL999]\n")[0]
    assert s.comment_col == len("    z = 1  # noqa: E501  ") + 1
    (s,) = parse("# graphlint: ignore\nx = 1\n")[0]
    assert s.comment_col == 1


def test_own_line_before_a_decorator_covers_the_decorated_header():
    src = "# graphlint: ignore[GL101]\n@torch.no_grad()\n@other\ndef step(\n    x,\n):\n    return x.item()\n"
    (s,) = parse(src)[0]
    assert (s.first_line, s.last_line) == (2, 6)  # decorators and the header, not the body
    (s,) = parse("@torch.no_grad()  # graphlint: ignore\ndef f():\n    pass\n")[0]
    assert (s.first_line, s.last_line) == (1, 2)
