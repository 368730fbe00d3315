"""A user's code tasks made gradable: read, checked against their reference solutions, cached.

Every task's test programs are run once against its reference solution in the jail
(:func:`~agentgym.simulators.sandbox.programs.reference_runs`): this records the calls the
tests make, and a task whose reference fails its own hidden tests (or whose tests pass
values that are not plain data) is skipped and counted. Public examples the reference does
not satisfy (HumanEval prompts hold a few) are dropped from the public tests.

The references are kept per process and on disk, in ``<cache dir>/code/<sha256 of the
file>-v<N>.json`` (the cache dir as for search indexes: ``cache_dir=``, else
``$AGENTGYM_CACHE_DIR``, else ``$XDG_CACHE_HOME/agentgym``), so a file is checked once. Runs
that time out or crash are not cached (a loaded machine must not skip a task for good).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from agentgym.envs.code.readers import CodeTask, read_tasks
from agentgym.simulators.sandbox import SandboxPool
from agentgym.simulators.sandbox.programs import (
    Program,
    ProgramError,
    Reference,
    instrument,
    reference_runs,
)

from agentgym.error import InvalidConfigError

#: Bumped when the cached references' meaning changes.
CACHE_VERSION = 1
#: Why a task whose reference run timed out or crashed is left out (not cached: the next
#: load checks it again).
TRANSIENT = "the reference run timed out or crashed (checked again at the next load)"
#: Files with more tasks to check than this show a progress bar (when stderr is a terminal).
PROGRESS_TASKS = 50


@dataclass(frozen=True)
class GradedTask:
    """A task with its test programs and what its reference solution did on them."""

    task: CodeTask
    hidden: Program
    hidden_ref: Reference
    public: Program | None = None
    public_ref: Reference | None = None
    #: Numbers of the public asserts the reference satisfies (the ones shown and counted).
    public_kept: frozenset[int] = frozenset()

    @property
    def hidden_total(self) -> int:
        return len(self.hidden_ref.verdicts)

    def shown_tests(self) -> list[str]:
        if self.public is None:
            return []
        return [self.public.asserts[k] for k in sorted(self.public_kept)]


@dataclass
class TaskSet:
    """The gradable tasks of one file, with where they came from and what was left out."""

    path: str
    format: str
    sha256: str
    tasks: dict[str, GradedTask]
    skipped: dict[str, int] = field(default_factory=dict)

    def source(self) -> dict[str, Any]:
        return {
            "tasks": self.path,
            "tasks_format": self.format,
            "tasks_sha256": self.sha256,
            "tasks_count": len(self.tasks),
            "tasks_skipped": dict(self.skipped),
        }


def cache_root(cache_dir: str | os.PathLike[str] | None) -> str:
    if cache_dir:
        return os.path.abspath(os.fspath(cache_dir))
    root = os.environ.get("AGENTGYM_CACHE_DIR")
    if root:
        return root
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "agentgym")


def _programs(task: CodeTask) -> tuple[Program, Program | None]:
    hidden = instrument(task.hidden_program)
    try:
        public = instrument(task.public_program) if task.public_program.strip() else None
    except ProgramError:
        public = None
    return hidden, public


def _fingerprint(task: CodeTask) -> str:
    """What a cached entry was computed from (the reader's output, not only the file)."""
    parts = (task.entry_point, task.solution, task.hidden_program, task.public_program)
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


def _check(pool: SandboxPool, task: CodeTask, timeout: float) -> tuple[dict[str, Any] | None, bool]:
    """The cache entry of one task (references, or why it is skipped), and whether it may be
    cached (False when the run itself failed: a timeout on a loaded machine)."""
    entry, keep = _check_runs(pool, task, timeout)
    if entry is not None:
        entry["fingerprint"] = _fingerprint(task)
    return entry, keep


def _check_runs(
    pool: SandboxPool, task: CodeTask, timeout: float
) -> tuple[dict[str, Any] | None, bool]:
    try:
        hidden, public = _programs(task)
    except ProgramError as exc:
        return {"skip": f"unusable tests ({exc})"}, True
    programs = [hidden] + ([public] if public is not None else [])
    refs, run = reference_runs(pool, task.solution, task.entry_point, programs, timeout)
    if refs[0] is None:
        if run.status in ("timeout", "crashed", "killed"):
            return None, False
        return {"skip": "the reference solution does not run"}, run.status in ("ok", "error")
    problem = refs[0].problem()
    if problem is None and not all(v.ok for v in refs[0].verdicts):
        problem = "the reference solution fails its own tests"
    if problem is not None:
        return {"skip": problem}, True
    entry: dict[str, Any] = {"hidden": refs[0].to_json()}
    public_ref = refs[1] if len(refs) > 1 else None
    if public_ref is not None and public_ref.error is None:
        entry["public"] = public_ref.to_json()
    return entry, True


def _graded(task: CodeTask, entry: dict[str, Any]) -> GradedTask:
    hidden, public = _programs(task)
    public_ref = Reference.from_json(entry["public"]) if "public" in entry else None
    kept: frozenset[int] = frozenset()
    if public_ref is not None and public_ref.problem() is None:
        bad = {v.k for v in public_ref.verdicts if not v.ok}
        kept = frozenset(v.k for v in public_ref.verdicts) - bad
    if not kept:
        public, public_ref = None, None
    return GradedTask(task, hidden, Reference.from_json(entry["hidden"]), public, public_ref, kept)


_SETS: dict[str, TaskSet] = {}
_SETS_LOCK = threading.Lock()


def load_task_set(
    path: str | os.PathLike[str],
    pool: SandboxPool,
    *,
    timeout: float = 10.0,
    cache_dir: str | os.PathLike[str] | None = None,
) -> TaskSet:
    """Read a HumanEval/MBPP file and check every task against its reference (cached)."""
    parsed = read_tasks(path)
    with _SETS_LOCK:
        found = _SETS.get(parsed.sha256)
    if found is not None and found.path == parsed.path:
        return found
    store = os.path.join(cache_root(cache_dir), "code", f"{parsed.sha256}-v{CACHE_VERSION}.json")
    entries = _read_store(store)
    todo = [
        t
        for t in parsed.tasks
        if not isinstance(entries.get(t.id), dict)
        or entries[t.id].get("fingerprint") != _fingerprint(t)
    ]
    transient: dict[str, dict[str, Any]] = {}
    if todo:
        done = _check_all(pool, todo, timeout)
        fresh = {t.id: e for t, (e, keep) in zip(todo, done) if e is not None and keep}
        entries.update(fresh)
        if fresh:
            _write_store(store, entries)
        transient = {
            t.id: {"skip": TRANSIENT} for t, (e, keep) in zip(todo, done) if e is None or not keep
        }
    out = TaskSet(parsed.path, parsed.format, parsed.sha256, {}, dict(parsed.skipped))
    for task in parsed.tasks:
        entry = transient.get(task.id) or entries[task.id]
        if "skip" in entry:
            out.skipped[str(entry["skip"])] = out.skipped.get(str(entry["skip"]), 0) + 1
        else:
            out.tasks[task.id] = _graded(task, entry)
    if not out.tasks:
        raise InvalidConfigError(
            f"tasks={parsed.path!r}: no task can be graded ({', '.join(sorted(out.skipped))})."
        )
    if not transient:  # a set missing a task by bad luck is not kept for the next env
        with _SETS_LOCK:
            _SETS[parsed.sha256] = out
    return out


def _check_all(
    pool: SandboxPool, todo: list[CodeTask], timeout: float
) -> list[tuple[dict[str, Any] | None, bool]]:
    """:func:`_check` on every task, a few at a time (the pool runs them side by side)."""
    bar = None
    stream = sys.stderr
    if len(todo) > PROGRESS_TASKS and stream is not None and stream.isatty():
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo), desc="checking tasks", unit="task", leave=False)

    def one(task: CodeTask) -> tuple[dict[str, Any] | None, bool]:
        result = _check(pool, task, timeout)
        if bar is not None:
            bar.update(1)
        return result

    try:
        with ThreadPoolExecutor(max_workers=4) as ex:
            return list(ex.map(one, todo))
    finally:
        if bar is not None:
            bar.close()


def _read_store(store: str) -> dict[str, Any]:
    try:
        with open(store, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_store(store: str, entries: dict[str, Any]) -> None:
    tmp = f"{store}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        os.makedirs(os.path.dirname(store), exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(entries, fh, ensure_ascii=False)
        os.replace(tmp, store)
    except OSError:
        pass  # a read-only cache only costs a re-check next time
