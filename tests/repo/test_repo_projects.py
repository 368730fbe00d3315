"""The projects written for RepoFix: their size and shape, their own suites, their splits."""

from __future__ import annotations

import ast

import pytest
from agentgym.simulators.repo import (
    SPLIT_PROJECTS,
    RepoTask,
    grade,
    load_project,
    load_table,
    project_names,
)
from agentgym.simulators.repo.projects import read_tree


def test_at_least_eight_projects_and_the_splits_share_none():
    names = set(project_names())
    assert len(names) >= 8
    train, test = set(SPLIT_PROJECTS["train"]), set(SPLIT_PROJECTS["test"])
    assert train and test and not train & test
    assert train | test == names


@pytest.mark.parametrize("name", project_names())
def test_each_project_is_a_real_multi_file_package(name):
    project = load_project(name)
    sources = project.source_files()
    lines = sum(project.files[p].count("\n") for p in sources)
    assert 5 <= len(sources) <= 20, sources
    assert 300 <= lines <= 1500, lines
    for path in sources:
        module = ast.parse(project.files[path])
        assert ast.get_docstring(module), f"{path} has no module docstring"
    tests = sum(
        sum(
            isinstance(n, ast.FunctionDef) and n.name.startswith("test_")
            for n in ast.parse(project.files[p]).body
        )
        for p in project.test_files()
    )
    assert tests >= 30
    assert "pytest.ini" in project.files and "README.md" in project.files


@pytest.mark.sandbox
@pytest.mark.parametrize("name", project_names())
def test_each_project_passes_its_own_tests_in_the_jail(name, pool):
    """Through the grader itself: every test of the shipped project passes."""
    project = load_project(name)
    tests = tuple(load_table().tests_of(name))
    task = RepoTask(
        id=name,
        repo=name,
        split="",
        starting_files=project.files,
        hidden_files={p: t for p, t in project.files.items() if p.startswith("tests/")},
        hidden_dirs=("tests",),
        pytest_ini=project.files["pytest.ini"],
        fail_to_pass=(),
        pass_to_pass=tests,
        problem_statement="",
        patch="",
        test_patch="",
    )
    result = grade(pool, task, {p: t.encode() for p, t in project.files.items()})
    assert result.status == "ok"
    assert len(tests) >= 30 and result.p2p_passed == len(tests)


def test_the_projects_are_data_not_agentgym_modules():
    # no __init__.py above each project: no agentgym.* module is a project's, and the suite's
    # own collection (testpaths = tests) never reaches their tests
    import tomllib

    from agentgym.simulators.repo.projects import PROJECTS_DIR

    assert not (PROJECTS_DIR / "__init__.py").exists()
    with pytest.raises(ModuleNotFoundError):
        __import__("agentgym.simulators.repo.projects.chrono")
    pyproject = tomllib.loads((PROJECTS_DIR.parents[2] / "pyproject.toml").read_text())
    assert pyproject["tool"]["pytest"]["ini_options"]["testpaths"] == ["tests"]
    assert set(read_tree(PROJECTS_DIR / "chrono")) >= {"pytest.ini", "chrono/__init__.py"}
