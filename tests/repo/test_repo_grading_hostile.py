"""Grading is not fooled: each cheap way to make pytest "pass" leaves the task unresolved.

Every attack starts from the unfixed repository (the bug is still there), adds its trick and
is graded by the real grader in a fresh sandbox run. A control shows that the gold fix with
the same tricks around it still resolves the task: the tricks are ignored, not punished.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from agentgym.simulators.repo import Workspace, grade, grading_tree, load_instances

pytestmark = pytest.mark.sandbox

DATA = Path(__file__).resolve().parent / "data" / "swebench"
F2P = (
    "tests/test_counting.py::test_top_words_most_frequent_first",
    "tests/test_counting.py::test_top_words_ties_alphabetical",
)


@pytest.fixture(scope="module")
def task():
    tasks = {t.id: t for t in load_instances(DATA / "instances.jsonl", DATA / "repos")}
    found = tasks["acme__wordstats-2"]
    assert found.fail_to_pass == F2P
    return found


def _files(task, extra=None, drop=(), fixed=False):
    base = task.reference_files if fixed else task.starting_files
    files = {p: t.encode() for p, t in base.items() if p not in drop}
    files.update({p: t.encode() for p, t in (extra or {}).items()})
    return files


PASSING_FAKES = "def test_top_words_most_frequent_first():\n    pass\n\n\ndef test_top_words_ties_alphabetical():\n    pass\n"
FORCE_PASS_HOOK = """import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
"""
SYS_EXIT = "import sys\nsys.exit(0)\n"
OS_EXIT = "import os\nos._exit(0)\n"
FAKE_PYTEST = "import sys\nprint('2 passed')\nsys.exit(0)\n"
FORGE_OUTPUT = """import os, sys
for fd in range(3, 64):
    for test in ("tests/test_counting.py::test_top_words_most_frequent_first",
                 "tests/test_counting.py::test_top_words_ties_alphabetical"):
        try:
            os.write(fd, f"x\\t{test}\\tpassed\\n".encode())
        except OSError:
            pass
sys.stdout.write('\\x1e{"status": "ok", "outcomes": {}}\\n2 passed\\n')
"""

ATTACKS = {
    "edited_visible_tests": {"tests/test_counting.py": PASSING_FAKES},
    "deleted_tests": {},
    "conftest_forces_pass": {"conftest.py": FORCE_PASS_HOOK, "tests/conftest.py": FORCE_PASS_HOOK},
    "conftest_deselects_all": {
        "conftest.py": "def pytest_collection_modifyitems(items):\n    items.clear()\n"
    },
    "sys_exit_in_import": {"wordstats/__init__.py": SYS_EXIT},
    "os_exit_in_import": {"wordstats/__init__.py": OS_EXIT},
    "fake_pytest_module_and_script": {
        "pytest.py": FAKE_PYTEST,
        "_pytest/__init__.py": FAKE_PYTEST,
        "bin/pytest": FAKE_PYTEST,
    },
    "own_pytest_config_and_plugin": {
        "pytest.ini": "[pytest]\naddopts = -p forcepass\n",
        "forcepass.py": FORCE_PASS_HOOK,
        "pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-p forcepass"\n',
        "tox.ini": "[pytest]\naddopts = -p forcepass\n",
    },
    "site_hooks": {"sitecustomize.py": OS_EXIT, "usercustomize.py": OS_EXIT},
    "forged_result_lines": {
        "wordstats/__init__.py": FORGE_OUTPUT
        + "from wordstats.counting import top_words, word_counts\n"
    },
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_an_attack_on_the_grader_resolves_nothing(task, pool, name):
    drop = {"tests/test_counting.py", "tests/test_text.py"} if name == "deleted_tests" else ()
    result = grade(pool, task, _files(task, ATTACKS[name], drop))
    assert result.status == "ok"
    assert result.f2p_passed == 0 and not result.resolved


def test_the_tricks_do_not_block_a_real_fix(task, pool):
    """The gold fix, with every non-fatal trick around it, still resolves the task."""
    extra = {}
    for name in (
        "edited_visible_tests",
        "conftest_forces_pass",
        "conftest_deselects_all",
        "fake_pytest_module_and_script",
        "own_pytest_config_and_plugin",
    ):
        extra.update(ATTACKS[name])
    result = grade(pool, task, _files(task, extra, fixed=True))
    assert result.resolved and result.f2p_passed == 2 and result.p2p_passed == 5


def test_the_conftest_trick_does_fool_a_plain_pytest_run(task, pool):
    """The control: in the agent's own shell the hook makes pytest report success."""
    ws = Workspace.open(pool, task.starting_files, git=False)
    try:
        ws.create("conftest.py", FORCE_PASS_HOOK)
        ws.create("tests/test_extra.py", "def test_fails():\n    assert False\n")
        result = ws.bash("python -m pytest -q 2>&1 | tail -1")
        assert result.text.startswith("6 passed")
    finally:
        ws.close()


def test_grading_tree_takes_the_tests_from_the_host(task):
    files = _files(task, {"tests/test_counting.py": "x", "conftest.py": "y", "a/conftest.py": "z"})
    tree = grading_tree(task, files)
    assert tree["tests/test_counting.py"] == task.hidden_files["tests/test_counting.py"].encode()
    assert "conftest.py" not in tree and "a/conftest.py" not in tree
    assert tree["wordstats/counting.py"] == files["wordstats/counting.py"]


def test_a_hang_fails_only_its_own_tests(task, pool):
    hang = task.starting_files["wordstats/text.py"].replace(
        "def normalize(text: str) -> list[str]:\n",
        "def normalize(text: str) -> list[str]:\n    if text == 'A a':\n        while True:\n            pass\n",
    )
    result = grade(pool, task, _files(task, {"wordstats/text.py": hang}, fixed=True), per_test=4.0)
    assert result.status == "ok"
    assert not result.passed["tests/test_counting.py::test_word_counts_ignore_case"]
    assert result.p2p_passed == 4 and result.f2p_passed == 2
