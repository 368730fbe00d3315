"""The agent's tools in a sandboxed repository: bash, view, str_replace, create; the digest."""

from __future__ import annotations

import pytest
from agentgym.simulators.repo import Workspace, load_project
from agentgym.simulators.repo.workspace import OUTPUT_CAP

pytestmark = pytest.mark.sandbox

FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
    "tests/test_core.py": "from pkg.core import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    "pytest.ini": "[pytest]\npythonpath = .\n",
    "notes.txt": "alpha\nbeta\nalpha\n",
}


@pytest.fixture
def ws(pool):
    workspace = Workspace.open(pool, FILES)
    yield workspace
    workspace.close()


def test_bash_keeps_the_working_directory_between_calls(ws):
    assert ws.bash("cd pkg && pwd").text == "~/pkg\n"
    assert ws.bash("pwd; ls").text == "~/pkg\n__init__.py\ncore.py\n"
    assert ws.cwd == "pkg"
    assert ws.bash("cd ..").ok and ws.bash("pwd").text == "~\n"


def test_bash_reports_exit_codes_and_runs_pytest_and_git(ws):
    failed = ws.bash("echo out; echo err >&2; exit 3")
    assert not failed.ok and failed.exit_code == 3
    assert failed.text == "out\nerr\n\n[exit code 3]"
    tests = ws.bash("python -m pytest -q 2>&1 | tail -1")
    assert tests.ok and "1 passed" in tests.text
    log = ws.bash("git log --format=%s && git status --short")
    assert log.ok and log.text == "Initial commit\n"


def test_bash_output_is_capped_with_a_note(ws):
    result = ws.bash("python -c \"print('x' * 100000)\"")
    assert result.ok and len(result.text) < OUTPUT_CAP + 200
    assert f"[... {100001 - OUTPUT_CAP} bytes of output cut ...]" in result.text


def test_bash_timeout_stops_the_command_and_the_session_goes_on(ws):
    result = ws.bash("echo started; sleep 60", timeout=3)
    assert result.timed_out and not result.ok
    assert result.text.startswith("started\n")
    assert "[the command ran past its 3 s limit and was stopped]" in result.text
    assert ws.bash("echo still here").text == "still here\n"


def test_bash_does_not_wait_for_background_processes(ws):
    result = ws.bash("sleep 30 & echo launched", timeout=20)
    assert result.ok and result.text == "launched\n"


def test_view_file_range_and_directory(ws):
    assert ws.view("pkg/core.py", 4, 5).text == "     4\t\n     5\tdef sub(a, b):"
    assert ws.view("~/pkg/core.py").text.startswith("     1\tdef add(a, b):")
    listing = ws.view(".").text
    assert listing.splitlines()[1:] == [
        "notes.txt",
        "pkg/",
        "pytest.ini",
        "tests/",
        "pkg/__init__.py",
        "pkg/core.py",
        "tests/test_core.py",
    ]
    assert ".git" not in listing


@pytest.mark.parametrize(
    ("path", "window", "message"),
    [
        ("missing.py", None, "Error: cannot read ~/missing.py"),
        ("pkg/core.py", (9, 12), "Error: view_range [9, 12] is outside the file's 6 lines"),
        ("pkg/core.py", (3, 2), "Error: view_range [3, 2] is outside"),
    ],
)
def test_view_errors(ws, path, window, message):
    result = ws.view(path, *(window or (None, None)))
    assert not result.ok and result.text.startswith(message)


def test_outputs_and_errors_show_the_work_dir_as_home(ws):
    """The sandbox slot's real path never shows: observations match across episodes."""
    results = [
        ws.str_replace("nope/x.py", "a", "b"),
        ws.view("nope/x.py"),
        ws.create("pkg/core.py", "x"),
        ws.bash("cat $PWD/nope/x.py; python -c 'import os; print(os.getcwd())'"),
    ]
    for result in results:
        assert "/tmp" not in result.text and "~/" in result.text, result.text
    assert results[0].text == "Error: cannot read ~/nope/x.py: No such file or directory"


def test_str_replace_edits_one_unique_occurrence(ws):
    result = ws.str_replace("pkg/core.py", "return a - b", "return b - a")
    assert result.ok and "     6\t    return b - a" in result.text
    assert ws.bash("cat pkg/core.py").text.endswith("    return b - a\n")


@pytest.mark.parametrize(
    ("old", "message"),
    [
        ("alpha", "old_str occurs 2 times in ~/notes.txt (lines 1, 3)"),
        ("gamma", "old_str was not found in ~/notes.txt"),
        ("", "old_str is empty"),
    ],
)
def test_str_replace_refuses_missing_or_repeated_text(ws, old, message):
    result = ws.str_replace("notes.txt", old, "x")
    assert not result.ok and message in result.text and "no edit was made" in result.text
    assert ws.bash("cat notes.txt").text == "alpha\nbeta\nalpha\n"


def test_create_makes_new_files_only_inside_the_repository(ws):
    assert ws.create("pkg/new/mod.py", "X = 1\n").ok
    assert ws.bash("cat pkg/new/mod.py").text == "X = 1\n"
    again = ws.create("pkg/new/mod.py", "X = 2\n")
    assert not again.ok and "already exists" in again.text
    outside = ws.create("/usr/lib/evil.py", "x")
    assert not outside.ok and "outside the repository" in outside.text
    escape = ws.create("../sibling.py", "x")
    assert not escape.ok and "outside the repository" in escape.text


def test_any_model_text_is_safe_to_pass(ws):
    weird = "caf\u00e9 \udcff \x00 \U0001f600 $(rm -rf ~) `x` ' \" \\"
    assert ws.create("weird.txt", weird).ok
    shown = ws.bash("cat weird.txt").text
    assert shown.startswith("caf\u00e9 ? ") and "$(rm -rf ~)" in shown
    assert ws.bash(weird).exit_code != 0  # ran as a (failing) command, nothing raised
    assert ws.bash("ls pkg").text == "__init__.py\ncore.py\n"


def test_digest_follows_files_and_directory_not_caches(ws, pool):
    start = ws.digest
    ws.bash("python -c 'import pkg.core'; mkdir -p pkg/__pycache__ && touch pkg/__pycache__/x.pyc")
    assert ws.digest == start  # caches do not count
    ws.bash("cd tests")
    assert ws.digest != start
    ws.bash("cd ..")
    assert ws.digest == start  # history-free: back where it was, same key
    ws.str_replace("notes.txt", "beta", "BETA")
    changed = ws.digest
    assert changed != start
    ws.str_replace("notes.txt", "BETA", "beta")
    assert ws.digest == start
    other = Workspace.open(pool, FILES)
    try:
        assert other.digest == start  # equal states, equal keys, in any session
    finally:
        other.close()


def test_fork_copies_files_and_directory_and_branches_apart(ws):
    ws.bash("cd pkg")
    branch = ws.fork()
    try:
        assert branch.cwd == "pkg" and branch.digest == ws.digest
        branch.bash("echo changed > ../notes.txt")
        assert ws.bash("cat ../notes.txt").text == "alpha\nbeta\nalpha\n"
        assert branch.bash("cat ../notes.txt").text == "changed\n"
        assert branch.digest != ws.digest
    finally:
        branch.close()


def test_dump_returns_the_project_without_caches(ws):
    ws.bash("touch .tmp/scratch && mkdir -p .pytest_cache && touch .pytest_cache/x")
    dump = ws.dump()
    assert set(dump.files) == set(FILES)
    assert dump.files["pkg/core.py"] == FILES["pkg/core.py"].encode()


def test_a_real_project_starts_clean(pool):
    project = load_project("graphs")
    workspace = Workspace.open(pool, project.files)
    try:
        assert workspace.git
        assert workspace.bash("git status --short").text == ""  # committed, nothing else
        result = workspace.bash("pytest -q 2>&1 | tail -1")
        assert result.ok and result.text.startswith("41 passed in ")
    finally:
        workspace.close()
