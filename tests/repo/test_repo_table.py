"""The shipped task table: size, splits, determinism, and what each task shows and hides."""

from __future__ import annotations

import ast
import json
import re
from collections import Counter

import numpy as np
import pytest
from agentgym.simulators.repo import (
    SPLIT_PROJECTS,
    Edit,
    apply_edits,
    find_edits,
    load_project,
    load_table,
)
from agentgym.simulators.repo.build import _combos, task_id
from agentgym.simulators.repo.issues import split_test_id
from agentgym.simulators.repo.patches import apply_patch
from agentgym.simulators.repo.tasks import TABLE_FILE

TABLE = load_table()
SAMPLE = sorted(TABLE.rows)[:: max(1, len(TABLE.rows) // 60)]  # a fixed, spread sample


def test_thousands_of_distinct_tasks_in_both_splits():
    train, test = TABLE.ids("train"), TABLE.ids("test")
    assert len(train) + len(test) >= 2000 and len(test) >= 300
    assert len(set(train) | set(test)) == len(TABLE.rows)
    edit_sets = {json.dumps(row["edits"]) for row in TABLE.rows.values()}
    assert len(edit_sets) == len(TABLE.rows)


def test_train_and_test_tasks_come_from_disjoint_projects():
    projects = {s: {TABLE.rows[t]["project"] for t in TABLE.ids(s)} for s in ("train", "test")}
    assert projects["train"] == set(SPLIT_PROJECTS["train"])
    assert projects["test"] == set(SPLIT_PROJECTS["test"])
    assert not projects["train"] & projects["test"]


def test_tasks_mix_operators_and_one_to_three_edits():
    kinds = Counter(e[-1] for row in TABLE.rows.values() for e in row["edits"])
    assert len(kinds) >= 9
    sizes = Counter(len(row["edits"]) for row in TABLE.rows.values())
    assert set(sizes) == {1, 2, 3}


def test_every_task_applies_to_the_shipped_projects():
    for tid, row in TABLE.rows.items():
        edits = TABLE.edits(tid)
        assert task_id(row["project"], edits) == tid
        project = load_project(row["project"])
        mutated = apply_edits(project.files, edits)  # raises when a span changed
        assert all(mutated[e.path] != project.files[e.path] for e in edits)


def test_the_table_is_deterministic_from_its_seed():
    """Single edits are operator sites in source order; the combined ones are exactly those
    the seed draws from the kept singles (re-drawn here without running any test)."""
    header = TABLE.header
    dropped = header.get("dropped_by_verify", [])
    for k, name in enumerate(sorted(header["projects"])):
        rows = [r for r in TABLE.rows.values() if r["project"] == name]
        singles = {TABLE.edits(r["id"])[0] for r in rows if len(r["edits"]) == 1}
        singles |= {
            Edit.from_json(d["edits"][0])
            for d in dropped
            if d["project"] == name and len(d["edits"]) == 1
        }
        project = load_project(name)
        order = [e for p in project.source_files() for e in find_edits(p, project.files[p])]
        kept = [e for e in order if e in singles]
        assert len(kept) == len(singles)  # every single edit is one the injector finds
        rng = np.random.default_rng([header["seed"], k])
        drawn = set(_combos(project, kept, rng, 2, header["pairs"]))
        drawn |= set(_combos(project, kept, rng, 3, header["triples"]))
        combos = {tuple(TABLE.edits(r["id"])) for r in rows if len(r["edits"]) > 1}
        assert combos and combos <= drawn


@pytest.mark.parametrize("tid", SAMPLE[:40])
def test_a_task_shows_the_issue_and_hides_the_failing_tests(tid):
    task = TABLE.task(tid)
    row = TABLE.rows[tid]
    assert set(task.fail_to_pass) | set(task.pass_to_pass) == set(TABLE.tests_of(row["project"]))
    assert task.fail_to_pass and not set(task.fail_to_pass) & set(task.pass_to_pass)
    for test in task.fail_to_pass:
        path, name, _ = split_test_id(test)
        visible = {
            n.name
            for n in ast.parse(task.starting_files[path]).body
            if isinstance(n, ast.FunctionDef)
        }
        assert name not in visible and f"def {name}(" in task.hidden_files[path]
    issue = task.problem_statement
    title = issue.splitlines()[0]
    assert 10 < len(title) < 120 and not title.startswith("#") and "```python\n" in issue
    for edit in TABLE.edits(tid):
        assert edit.path not in issue and edit.path.rsplit("/", 1)[-1] not in issue
    assert not re.search(r"\bline \d+", issue) and not re.search(r"\btest_\w", issue)


@pytest.mark.parametrize("tid", SAMPLE[:20])
def test_the_gold_patch_turns_the_start_into_the_reference(tid):
    task = TABLE.task(tid)
    fixed = apply_patch(task.starting_files, task.patch)
    sources = {p for p in task.reference_files if not p.startswith("tests/")}
    assert {p: fixed[p] for p in sources} == {p: task.reference_files[p] for p in sources}
    with_tests = apply_patch(fixed, task.test_patch)
    assert with_tests == dict(task.reference_files)


def test_the_table_file_is_compact():
    assert TABLE_FILE.stat().st_size < 4_000_000


def test_the_oracles_edits_fix_every_task():
    """The oracle's ``str_replace`` calls, applied with the tool's rule (the old text occurs
    exactly once), turn every task's starting sources into the fixed ones."""
    from types import SimpleNamespace

    from agentgym.envs.repo.repofix import oracle_calls

    for tid, row in TABLE.rows.items():
        project = load_project(row["project"])
        reference = {p: t for p, t in project.files.items() if not p.startswith("tests/")}
        files = {p: t for p, t in apply_edits(project.files, TABLE.edits(tid)).items()
                 if p in reference}  # fmt: skip
        only_sources = SimpleNamespace(hidden_files={}, hidden_dirs=("tests",))
        calls = oracle_calls({p: t.encode() for p, t in files.items()}, reference, only_sources)
        assert calls and all(c.name == "str_replace" for c in calls), tid
        for call in calls:
            path, old, new = (call.arguments[k] for k in ("path", "old_str", "new_str"))
            assert files[path].count(old) == 1, (tid, old)
            files[path] = files[path].replace(old, new)
        assert files == reference, tid
