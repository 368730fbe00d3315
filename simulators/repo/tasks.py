"""RepoFix tasks: what an agent starts from, what grades it, and the shipped task table.

A :class:`RepoTask` is everything one episode needs, whatever its origin (a bug injected
into a project of this repository, or a SWE-bench-format instance read from local files):

* ``starting_files`` — the repository the agent is given (text, by relative path);
* ``hidden_files`` and ``hidden_dirs`` — the test infrastructure that grading writes over a
  copy of the agent's final files (its own test files, conftest files and folders such as
  ``tests/`` are replaced wholesale; these never enter the agent's sandbox);
* ``pytest_ini`` — the pytest configuration grading runs with (the agent's is ignored);
* ``fail_to_pass`` / ``pass_to_pass`` — the test ids that must pass after the fix;
* ``problem_statement``, ``patch`` (the gold fix) and ``test_patch`` (the hidden tests).

The table (``tasks.jsonl``) stores each injected task as its edits, the indices of its failing
tests and what they saw; :meth:`TaskTable.task` rebuilds the rest from the shipped projects.
"""

from __future__ import annotations

import ast
import difflib
import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgym.simulators.repo.issues import compose_issue, split_test_id
from agentgym.simulators.repo.mutate import Edit, apply_edits
from agentgym.simulators.repo.projects import SPLIT_PROJECTS, load_project

from agentgym.error import InvalidConfigError, UnknownTaskError

FORMAT = "agentgym-repofix-tasks"
TABLE_FILE = Path(__file__).resolve().parent / "tasks.jsonl"

_FACT_ORDER = {"value": 0, "raises": 1, "no_raise": 2, "truth": 3}


def fact_rank(fact: Mapping[str, Any]) -> int:
    """Which failures make the clearest issue text (lower first)."""
    return _FACT_ORDER.get(str(fact.get("kind")), 4)


@dataclass(frozen=True)
class RepoTask:
    """One repository task (see the module docstring)."""

    id: str
    repo: str
    split: str
    starting_files: Mapping[str, str]
    hidden_files: Mapping[str, str]
    hidden_dirs: tuple[str, ...]
    pytest_ini: str
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    problem_statement: str
    patch: str
    test_patch: str
    reference_files: Mapping[str, str] = field(default_factory=dict)
    #: The name ``pytest_ini`` is written under (pytest reads a file by its name's format).
    pytest_config: str = "pytest.ini"

    @property
    def graded_tests(self) -> tuple[str, ...]:
        return self.fail_to_pass + self.pass_to_pass


def unified_diff(
    before: Mapping[str, str], after: Mapping[str, str], paths: Sequence[str] | None = None
) -> str:
    """A ``git diff``-style patch from ``before`` to ``after`` (added and deleted files too)."""
    chunks = []
    for path in sorted(paths if paths is not None else set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        a = f"a/{path}" if old is not None else "/dev/null"
        b = f"b/{path}" if new is not None else "/dev/null"
        lines = difflib.unified_diff(
            (old or "").splitlines(keepends=True), (new or "").splitlines(keepends=True), a, b
        )
        text = "".join(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
            for line in lines
        )
        chunks.append(f"diff --git a/{path} b/{path}\n{text}")
    return "".join(chunks)


def remove_tests(source: str, names: set[str]) -> str:
    """``source`` without the top-level test functions (and their decorators) in ``names``."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    drop: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            drop.update(range(first, (node.end_lineno or node.lineno) + 1))
    kept = "".join(line for n, line in enumerate(lines, start=1) if n not in drop)
    return re.sub(r"\n{4,}", "\n\n\n", kept).rstrip("\n") + "\n"


class TaskTable:
    """The shipped table of injected-bug tasks (see :mod:`.build`)."""

    def __init__(self, path: Path | str = TABLE_FILE):
        with open(path, encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh if line.strip()]
        if not rows or rows[0].get("format") != FORMAT:
            raise InvalidConfigError(
                f"{path} is not a RepoFix task table (its first line must be a header with "
                f"format {FORMAT!r})."
            )
        self.header: dict[str, Any] = rows[0]
        self.rows: dict[str, dict[str, Any]] = {row["id"]: row for row in rows[1:]}
        for name, meta in self.header["projects"].items():
            digest = load_project(name).digest()
            if digest != meta["digest"]:
                raise InvalidConfigError(
                    f"project {name!r} changed since {path} was built (digest {digest}, table "
                    f"{meta['digest']}); rebuild it: python -m agentgym.simulators.repo.build"
                )
        self._ids = {
            split: tuple(t for t, row in self.rows.items() if row["project"] in projects)
            for split, projects in SPLIT_PROJECTS.items()
        }

    def ids(self, split: str) -> tuple[str, ...]:
        return self._ids.get(split, ())

    def tests_of(self, project: str) -> list[str]:
        return list(self.header["projects"][project]["tests"])

    def edits(self, task_id: str) -> list[Edit]:
        return [Edit.from_json(e) for e in self._row(task_id)["edits"]]

    def _row(self, task_id: str) -> dict[str, Any]:
        try:
            return self.rows[task_id]
        except KeyError:
            raise UnknownTaskError(f"no RepoFix task {task_id!r}") from None

    @functools.lru_cache(maxsize=512)  # noqa: B019 - the table lives as long as the process
    def task(self, task_id: str) -> RepoTask:
        """The full task ``task_id`` (mutated sources, visible and hidden tests, issue)."""
        row = self._row(task_id)
        name = row["project"]
        project = load_project(name)
        tests = self.tests_of(name)
        f2p = tuple(tests[i] for i in row["f2p"])
        p2p = tuple(t for t in tests if t not in f2p)
        mutated = apply_edits(project.files, self.edits(task_id))
        removed: dict[str, set[str]] = {}
        for test in f2p:
            path, func, _ = split_test_id(test)
            removed.setdefault(path, set()).add(func)
        starting = dict(mutated)
        for path, names in removed.items():
            starting[path] = remove_tests(mutated[path], names)
        hidden = {p: t for p, t in project.files.items() if p.startswith("tests/")}
        sources = [p for p in project.files if not p.startswith("tests/")]
        return RepoTask(
            id=task_id,
            repo=name,
            split=next(s for s, names in SPLIT_PROJECTS.items() if name in names),
            starting_files=starting,
            hidden_files=hidden,
            hidden_dirs=("tests",),
            pytest_ini=project.files["pytest.ini"],
            fail_to_pass=f2p,
            pass_to_pass=p2p,
            problem_statement=compose_issue(project, task_id, tests, row["facts"]),
            patch=unified_diff(starting, project.files, sources),
            test_patch=unified_diff(starting, project.files, sorted(hidden)),
            reference_files=project.files,
        )


@functools.lru_cache(maxsize=4)
def load_table(path: str = str(TABLE_FILE)) -> TaskTable:
    """The task table at ``path`` (the shipped one by default), read once."""
    return TaskTable(path)
