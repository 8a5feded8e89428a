"""Both halves spell a file the same way, also through symlinks (the inventory matches by path)."""

from __future__ import annotations

import os

from graphlint.paths import display_path


def test_relative_under_the_working_directory_absolute_elsewhere(tmp_path, monkeypatch):
    (tmp_path / "proj" / "pkg").mkdir(parents=True)
    (tmp_path / "proj" / "pkg" / "m.py").write_text("")
    monkeypatch.chdir(tmp_path / "proj")
    assert display_path("pkg/m.py") == "pkg/m.py"
    assert display_path("./pkg/../pkg/m.py") == "pkg/m.py"
    assert display_path(tmp_path / "proj" / "pkg" / "m.py") == "pkg/m.py"
    assert display_path(tmp_path / "elsewhere.py") == (tmp_path / "elsewhere.py").as_posix()


def test_a_linked_file_inside_the_project_keeps_its_project_path(tmp_path, monkeypatch):
    """Python's co_filename for an imported link is the link's path; the static half gets the
    path the user typed. Resolving the link (the dynamic half's old rule) gave an absolute path
    outside the project and lost the cross-reference."""
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "real.py").write_text("")
    (tmp_path / "proj").mkdir()
    os.symlink(tmp_path / "shared" / "real.py", tmp_path / "proj" / "linked.py")
    monkeypatch.chdir(tmp_path / "proj")
    assert display_path("linked.py") == display_path(tmp_path / "proj" / "linked.py") == "linked.py"


def test_a_project_reached_through_a_link_reads_relative(tmp_path, monkeypatch):
    (tmp_path / "real" / "pkg").mkdir(parents=True)
    (tmp_path / "real" / "pkg" / "m.py").write_text("")
    os.symlink(tmp_path / "real", tmp_path / "link")
    monkeypatch.chdir(tmp_path / "real")
    assert display_path(tmp_path / "link" / "pkg" / "m.py") == "pkg/m.py"  # co_filename via the link
    assert display_path("pkg/m.py") == "pkg/m.py"


def test_a_file_linked_into_the_project_from_outside_resolves_to_its_project_path(tmp_path, monkeypatch):
    """Resolving goes by each file's directory (resolved once) unless the file itself is a link:
    a link elsewhere pointing at a file of the project still reads relative, as a whole-path
    resolve said; a plain file outside stays absolute."""
    (tmp_path / "proj" / "pkg").mkdir(parents=True)
    (tmp_path / "proj" / "pkg" / "m.py").write_text("")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "plain.py").write_text("")
    os.symlink(tmp_path / "proj" / "pkg" / "m.py", tmp_path / "out" / "to_m.py")
    os.symlink(tmp_path / "proj" / "pkg", tmp_path / "out" / "pkgdir")
    monkeypatch.chdir(tmp_path / "proj")
    assert display_path(tmp_path / "out" / "to_m.py") == "pkg/m.py"
    assert display_path(tmp_path / "out" / "pkgdir" / "m.py") == "pkg/m.py"
    assert display_path(tmp_path / "out" / "plain.py") == (tmp_path / "out" / "plain.py").as_posix()
