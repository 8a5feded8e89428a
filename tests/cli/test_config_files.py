"""graphlint.toml and .graphlint.toml, found like ruff's ruff.toml and .ruff.toml: in each directory
``.graphlint.toml`` before ``graphlint.toml`` before ``pyproject.toml``'s ``[tool.graphlint]``, and the
nearest directory that has one wins."""

from __future__ import annotations

from pathlib import Path

from graphlint.config_file import load_config


def test_graphlint_toml_settings_sit_at_the_top_level(project):
    code = project.item_code()
    project.write("src/model.py", project.hot_item)
    assert project.codes("src") == [code]
    project.write("graphlint.toml", f'ignore = ["{code}"]\n')
    assert project.codes("src") == []
    assert load_config(paths=["src"]).path == project.root / "graphlint.toml"


def test_in_one_directory_dot_graphlint_then_graphlint_then_pyproject(project):
    code = project.item_code()
    project.write("src/model.py", project.hot_item + "y = 1  # graphlint: ignore[GL105]\n")
    project.config('ignore = ["GL001"]\n')  # pyproject.toml: hides the unused suppression
    assert project.codes("src") == [code]
    project.write("graphlint.toml", f'ignore = ["{code}"]\n')  # wins: the unused suppression is back
    assert project.codes("src") == ["GL001"]
    project.write(".graphlint.toml", "select = ['meta']\nignore = ['GL001']\n")
    assert project.codes("src") == []
    assert load_config().path == project.root / ".graphlint.toml"


def test_the_nearest_directory_wins_and_an_empty_file_counts(project):
    code = project.item_code()
    project.config(f'ignore = ["{code}"]\n')
    project.write("sub/src/model.py", project.hot_item)
    assert project.codes("sub/src") == []
    project.write("sub/graphlint.toml", "")  # an empty graphlint.toml is a config: the defaults
    assert project.codes("sub/src") == [code]
    assert load_config(paths=["sub/src"]).root == project.root / "sub"


def test_a_tool_graphlint_table_also_works_but_not_both_forms(project):
    code = project.item_code()
    project.write("src/model.py", project.hot_item)
    project.write("graphlint.toml", f'[tool.graphlint]\nignore = ["{code}"]\n')  # as dsv4/faults/graphlint.toml
    assert project.codes("src") == []
    project.write("graphlint.toml", f'select = ["ALL"]\n[tool.graphlint]\nignore = ["{code}"]\n')
    both = project.run("src")
    assert both.rc == 2 and "both at the top level (select) and in [tool.graphlint]" in both.err


def test_mistakes_in_graphlint_toml_name_the_file(project):
    project.write("src/model.py", "x = 1\n")
    project.write("graphlint.toml", 'selct = ["ALL"]\n')
    result = project.run("src")
    assert result.rc == 2
    assert "graphlint.toml: unknown key 'selct'; did you mean 'select'?" in result.err
    assert "[tool.graphlint]" not in result.err  # there is no such table in this file
    project.write("graphlint.toml", "[tool.black]\nline-length = 100\n")  # another tool's file: not ours
    assert load_config(cwd=Path(project.root)).path is None  # the fixture's pyproject.toml has no table either
