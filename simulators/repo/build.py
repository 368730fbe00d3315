"""Build ``tasks.jsonl``, the task table of ``agentgym/RepoFix-v0`` (offline, deterministic).

Run ``python -m agentgym.simulators.repo.build`` (``--help`` for the knobs). For every project:

1. run its suite once with line tracing: every test must pass, and we learn which lines each
   test executes;
2. try every single edit :func:`~.mutate.find_edits` finds: run only the tests that execute
   the edited function (all tests when the edit is at module level or in code that runs at
   import); keep the edit when at least one test fails and at most half do;
3. combine kept edits into pairs and triples drawn with the seed (mostly within one module,
   as bugs cluster) and keep those that pass the same check;
4. with ``--verify``, re-run every kept task's *whole* suite in fresh processes (another
   hash seed), and drop any whose failing set differs.

A task is stored as its edits (a few dozen bytes each), the indices of its failing tests
(FAIL_TO_PASS; PASS_TO_PASS is every other test of the project) and what the failing lines
saw, from which :mod:`.issues` writes the issue text. Mutated sources are never stored.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from agentgym.simulators.repo.mutate import Edit, apply_edits, enclosing_function, find_edits
from agentgym.simulators.repo.projects import Project, load_project, project_names, split_of
from agentgym.simulators.repo.tasks import FORMAT, TABLE_FILE, fact_rank

#: Largest share of a project's tests one task may break (beyond it, the project is broken).
MAX_FAILING_SHARE = 0.5


class _Context:
    """One project in one worker: its runner, its tests and which tests reach which lines."""

    def __init__(self, name: str):
        from agentgym.simulators.repo.hostrun import ForkRunner

        self.project = load_project(name)
        self.runner = ForkRunner(self.project)
        base = self.runner.run(coverage=True, timeout=300)
        if base.status != "ok" or set(base.outcomes.values()) != {"passed"}:
            raise RuntimeError(f"{name}: the project's own tests do not all pass: {base}")
        self.tests = base.collected
        self.import_lines = set(base.coverage.get("<import>", ()))
        self.lines_of: dict[str, set[str]] = {
            t: set(lines) for t, lines in base.coverage.items() if t != "<import>"
        }
        self.trees = {p: ast.parse(self.project.files[p]) for p in self.project.source_files()}

    def affected(self, edits: Sequence[Edit]) -> list[str]:
        """The tests that can see ``edits``, in collection order."""
        reach: set[str] = set()
        for edit in edits:
            span = enclosing_function(self.trees[edit.path], edit.line)
            if span is None:
                return list(self.tests)
            lines = {f"{edit.path}:{n}" for n in range(span[0], span[1] + 1)}
            if lines & self.import_lines:
                return list(self.tests)
            reach |= {t for t, seen in self.lines_of.items() if seen & lines}
        return [t for t in self.tests if t in reach]

    def judge(self, edits: Sequence[Edit], tests: Sequence[str] | None) -> dict[str, Any] | None:
        """The failing tests and their facts when ``edits`` make a task, else None."""
        if tests is not None and not tests:
            return None
        mutated = apply_edits(self.project.files, edits)
        changed = {e.path: mutated[e.path] for e in edits}
        run = self.runner.run(changed, tests, facts=True, timeout=120)
        if run.status != "ok":
            return None
        expected = list(tests) if tests is not None else self.tests
        missing = [t for t in expected if t not in run.outcomes]
        if missing:
            return None  # a test never ran (collection broke): not a clean task
        failing = [t for t in expected if run.outcomes[t] != "passed"]
        if not failing or len(failing) > MAX_FAILING_SHARE * len(self.tests):
            return None
        if any(run.outcomes[t] == "skipped" for t in expected):
            return None
        if any("TestTimeout" in str(run.facts.get(t, {}).get("actual", "")) for t in failing):
            return None  # a hang is a poor bug report
        facts = sorted(
            (
                {"test": self.tests.index(t), **run.facts.get(t, {"kind": "unknown"})}
                for t in failing
            ),
            key=lambda f: (fact_rank(f), f["test"]),
        )[:2]
        return {"f2p": sorted(self.tests.index(t) for t in failing), "facts": facts}


_CONTEXTS: dict[str, _Context] = {}


def _context(name: str) -> _Context:
    if name not in _CONTEXTS:
        _CONTEXTS[name] = _Context(name)
    return _CONTEXTS[name]


def _check(job: tuple[str, int, list, bool]) -> tuple[str, int, dict[str, Any] | None]:
    """A worker's job: judge one candidate (with selected tests, or the whole suite)."""
    name, index, raw_edits, whole = job
    ctx = _context(name)
    edits = [Edit.from_json(e) for e in raw_edits]
    tests = None if whole else ctx.affected(edits)
    return name, index, ctx.judge(edits, tests)


def _run_jobs(jobs: list, workers: int, method: str, label: str) -> list:
    start = time.monotonic()
    results = []
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(workers) as pool:
        for i, result in enumerate(pool.imap_unordered(_check, jobs, chunksize=8)):
            results.append(result)
            if (i + 1) % 500 == 0:
                rate = (i + 1) / (time.monotonic() - start)
                print(f"{label}: {i + 1}/{len(jobs)} ({rate:.1f}/s)", file=sys.stderr)
    return results


def _combos(
    project: Project, singles: list[Edit], rng: np.random.Generator, size: int, count: int
) -> list[tuple[Edit, ...]]:
    """``count`` distinct sets of ``size`` non-overlapping kept edits, on distinct lines;
    three in four within one module."""
    by_path: dict[str, list[Edit]] = {}
    for edit in singles:
        by_path.setdefault(edit.path, []).append(edit)
    paths = sorted(p for p, group in by_path.items() if len(group) >= size)
    out: set[tuple[Edit, ...]] = set()
    for _ in range(count * 20):
        if len(out) >= count or not singles:
            break
        if paths and rng.random() < 0.75:
            pool = by_path[paths[int(rng.integers(len(paths)))]]
        else:
            pool = singles
        if len(pool) < size:
            continue
        picked = [pool[int(i)] for i in rng.choice(len(pool), size=size, replace=False)]
        lines = {(e.path, e.line) for e in picked}
        if len(lines) < size or any(a.overlaps(b) for a in picked for b in picked if a is not b):
            continue
        out.add(tuple(sorted(picked)))
    return sorted(out)


def task_id(project: str, edits: Iterable[Edit]) -> str:
    """A task's id: its project and a digest of its edits (stable across rebuilds)."""
    blob = json.dumps([e.to_json() for e in sorted(edits)]).encode()
    return f"{project}-{hashlib.sha1(blob).hexdigest()[:10]}"


def build(
    seed: int, projects: Sequence[str], pairs: int, triples: int, workers: int, verify: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the tasks of a table (see the module docstring)."""
    header: dict[str, Any] = {
        "format": FORMAT,
        "version": 1,
        "seed": seed,
        "pairs": pairs,
        "triples": triples,
        "projects": {},
    }
    singles: dict[str, list[Edit]] = {}
    jobs = []
    for name in projects:
        project = load_project(name)
        found = [
            e for path in project.source_files() for e in find_edits(path, project.files[path])
        ]
        singles[name] = found
        jobs += [(name, i, [e.to_json()], False) for i, e in enumerate(found)]
        tests = _context(name).tests  # fails early when a project's own tests fail
        header["projects"][name] = {
            "split": split_of(name),
            "digest": project.digest(),
            "tests": tests,
        }
    for ctx in _CONTEXTS.values():
        ctx.runner.close()
    _CONTEXTS.clear()
    kept: dict[str, list[tuple[tuple[Edit, ...], dict[str, Any]]]] = {n: [] for n in projects}
    results = sorted(_run_jobs(jobs, workers, "fork", "singles"), key=lambda r: (r[0], r[1]))
    for name, index, verdict in results:
        if verdict is not None:
            kept[name].append(((singles[name][index],), verdict))
    combo_jobs, combos = [], {}
    for k, name in enumerate(projects):
        rng = np.random.default_rng([seed, k])
        valid = [edits[0] for edits, _ in kept[name]]
        sets = _combos(load_project(name), valid, rng, 2, pairs)
        sets += _combos(load_project(name), valid, rng, 3, triples)
        combos[name] = sets
        combo_jobs += [(name, i, [e.to_json() for e in s], False) for i, s in enumerate(sets)]
    results = sorted(_run_jobs(combo_jobs, workers, "fork", "combos"), key=lambda r: (r[0], r[1]))
    for name, index, verdict in results:
        if verdict is not None:
            kept[name].append((combos[name][index], verdict))
    tasks = []
    for name in projects:
        for edits, verdict in kept[name]:
            tasks.append(
                {
                    "id": task_id(name, edits),
                    "project": name,
                    "edits": [e.to_json() for e in edits],
                    **verdict,
                }
            )
    if verify:
        tasks, dropped = _verify(tasks, workers, verify, seed)
        header["verified"] = verify
        # kept so the combined edits can be re-drawn from every single the seed drew from
        header["dropped_by_verify"] = dropped
    return header, tasks


def _verify(
    tasks: list[dict[str, Any]], workers: int, count: int, seed: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Re-judge ``count`` tasks (all when negative; drawn with the seed) on their whole suite
    in fresh processes (another hash seed); drop those that disagree."""
    picked: Sequence[int] = range(len(tasks))
    if 0 <= count < len(tasks):
        picked = sorted(np.random.default_rng([seed, 99]).choice(len(tasks), count, replace=False))
    jobs = [(tasks[i]["project"], int(i), tasks[i]["edits"], True) for i in picked]
    bad = set()
    for _, index, verdict in _run_jobs(jobs, workers, "spawn", "verify"):
        if verdict is None or verdict["f2p"] != tasks[index]["f2p"]:
            bad.add(index)
    print(
        f"verify: {len(jobs) - len(bad)}/{len(jobs)} checked tasks agree on the whole suite",
        file=sys.stderr,
    )
    kept = [t for i, t in enumerate(tasks) if i not in bad]
    dropped = [{"project": tasks[i]["project"], "edits": tasks[i]["edits"]} for i in sorted(bad)]
    return kept, dropped


def write_table(path: str, header: dict[str, Any], tasks: list[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(header, separators=(",", ":")) + "\n")
        for task in tasks:
            fh.write(json.dumps(task, separators=(",", ":"), ensure_ascii=False) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0, help="draws the combined edits")
    parser.add_argument("--pairs", type=int, default=300, help="pairs of edits per project")
    parser.add_argument("--triples", type=int, default=150, help="triples per project")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--project", action="append", help="only these projects")
    parser.add_argument(
        "--verify",
        type=int,
        default=0,
        metavar="N",
        help="re-run the whole suite of N tasks in fresh processes (-1: all)",
    )
    parser.add_argument("--out", default=str(TABLE_FILE))
    args = parser.parse_args(argv)
    projects = sorted(args.project or project_names())
    scratch = tempfile.mkdtemp(prefix="repofix-build-")
    os.environ["AGENTGYM_REPOFIX_TMP"] = scratch  # the workers' project copies live here
    try:
        header, tasks = build(
            args.seed, projects, args.pairs, args.triples, args.workers, args.verify
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    write_table(args.out, header, tasks)
    print(f"wrote {len(tasks)} tasks to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
