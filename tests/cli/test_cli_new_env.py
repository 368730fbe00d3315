"""`agentgym new-env NAME`: a package that passes `check`, tests itself and trains (issue 37).

The generated package is used from its folder through the ``MODULE:ID`` path (its package
registers the id when imported), in subprocesses, so the ids it registers never reach this
test session's registry. docs/own-env.md installs one with pip in a venv (its docs test).
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentgym.cli import main as cli_main
from agentgym.error import InvalidConfigError
from agentgym.scaffold import render, scaffold_names, write

ID = "grid_walk:grid_walk/GridWalk-v0"  # MODULE:ID, usable before the package is installed


@pytest.mark.parametrize(
    ("name", "camel", "package", "env_id", "directory"),
    [
        ("GridWalk", "GridWalk", "grid_walk", "grid_walk/GridWalk-v0", "grid-walk"),
        ("grid-walk", "GridWalk", "grid_walk", "grid_walk/GridWalk-v0", "grid-walk"),
        ("grid_walk", "GridWalk", "grid_walk", "grid_walk/GridWalk-v0", "grid-walk"),
        ("HTTPMaze2", "HTTPMaze2", "http_maze2", "http_maze2/HTTPMaze2-v0", "http-maze2"),
        ("maze", "Maze", "maze", "maze/Maze-v0", "maze"),
    ],
)
def test_names_are_derived_from_what_was_typed(name, camel, package, env_id, directory):
    names = scaffold_names(name)
    assert (names.camel, names.package, names.env_id, names.directory) == (
        camel,
        package,
        env_id,
        directory,
    )
    assert scaffold_names(name, namespace="mylab").env_id == f"mylab/{camel}-v0"


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("2fast", "start with a letter"),
        ("grid walk", "start with a letter"),
        ("grid--walk", "start with a letter"),
        ("", "start with a letter"),
        ("class", "keyword"),
        ("json", "already importable"),
        ("agentgym", "already importable"),
    ],
)
def test_a_name_that_cannot_be_a_package_is_a_typed_error(name, why):
    with pytest.raises(InvalidConfigError, match=why):
        scaffold_names(name)


def test_every_placeholder_is_filled_and_every_python_file_compiles():
    files = render(scaffold_names("GridWalk"))
    assert sorted(files) == [
        "README.md",
        "grid_walk/__init__.py",
        "grid_walk/env.py",
        "pyproject.toml",
        "tests/test_env.py",
    ]
    for path, text in files.items():
        assert "${" not in text and "$camel" not in text, path
        if path.endswith(".py"):
            compile(text, path, "exec")
    assert '"agentgym-suite"' in files["pyproject.toml"]
    assert 'grid_walk = "grid_walk:register_all"' in files["pyproject.toml"]
    assert "def admissible_actions" in files["grid_walk/env.py"]


def test_existing_files_are_never_replaced_without_force(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli_main(["new-env", "GridWalk"]) == 0
    env_file = tmp_path / "grid-walk" / "grid_walk" / "env.py"
    env_file.write_text("# my edits\n")
    assert cli_main(["new-env", "GridWalk"]) == 2
    err = capsys.readouterr().err
    assert "would overwrite" in err and "--force" in err
    assert env_file.read_text() == "# my edits\n"  # nothing was written
    assert cli_main(["new-env", "GridWalk", "--force"]) == 0
    assert "class GridWalkEnv" in env_file.read_text()
    assert cli_main(["new-env", "GridWalk", "--dir", "other"]) == 0
    assert (tmp_path / "other" / "tests" / "test_env.py").is_file()


def _generate(tmp_path: Path) -> Path:
    done = subprocess.run(
        [sys.executable, "-m", "agentgym", "new-env", "GridWalk"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return tmp_path / "grid-walk"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # the generated folder is found as the working directory
    return env


def test_the_generated_env_passes_check_without_a_warning_and_its_own_tests(tmp_path):
    project = _generate(tmp_path)
    check = subprocess.run(
        [sys.executable, "-m", "agentgym", "check", ID],
        cwd=project,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "PASS grid_walk/GridWalk-v0: every conformance rule holds" in check.stdout
    assert "WARN" not in check.stdout  # it lists admissible actions
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=project,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=600,
    )
    assert tests.returncode == 0, tests.stdout[-3000:]
    assert "8 passed" in tests.stdout


def test_the_generated_code_is_lint_clean(tmp_path):
    """A newcomer's linter finds nothing to fix in what new-env wrote (its own pyproject sets
    the line length; imports sorted as a project outside agentgym sorts them)."""
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed")
    project = _generate(tmp_path)
    rules = "E,F,W,I,B,UP,SIM"
    for cmd in ([ruff, "check", "--select", rules, "."], [ruff, "format", "--check", "."]):
        done = subprocess.run(cmd, cwd=project, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_the_generated_env_trains_to_a_rising_success_in_a_few_cpu_minutes(tmp_path):
    """`agentgym train` as the package's README says, at reduced scale (8 of its 12
    iterations; about 1 CPU-minute). Seed 0 measured here: success 0.34, 0.25, 0.59, 0.47,
    0.66, 0.75, 0.88, 0.97 (the same in repeated runs)."""
    project = _generate(tmp_path)
    seeds = [str(s) for s in range(8)]
    train = subprocess.run(
        [sys.executable, "-m", "agentgym", "train", "--env", ID, "--iterations", "8",
         "--task-seeds", *seeds, "--out", "run", "--no-progress", "--seed", "0"],
        cwd=project,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=1200,
    )  # fmt: skip
    assert train.returncode == 0, train.stdout[-2000:] + train.stderr[-2000:]
    assert "admissible" not in train.stderr  # no warning: the env lists them
    with (project / "run" / "metrics.csv").open() as f:
        success = [float(row["success"]) for row in csv.DictReader(f)]
    assert len(success) == 8
    first, last = sum(success[:3]) / 3, sum(success[-3:]) / 3
    assert last >= first + 0.25 and last >= 0.7, success


@pytest.mark.parametrize("namespace", ["my lab", "1lab", "lab/x", ""])
def test_a_namespace_that_cannot_start_an_id_is_a_typed_error(namespace):
    with pytest.raises(InvalidConfigError, match="--namespace"):
        scaffold_names("GridWalk", namespace=namespace)


def test_write_refuses_existing_files_unless_forced(tmp_path):
    names = scaffold_names("GridWalk")
    written = write(names, tmp_path)
    assert len(written) == 5 and all(p.is_file() for p in written)
    with pytest.raises(InvalidConfigError, match="would overwrite"):
        write(names, tmp_path)
    assert write(names, tmp_path, force=True) == written
