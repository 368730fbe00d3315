"""RepoFix at RL scale (issue 34): many repository sessions at once, each running pytest.

``n`` concurrent ``agentgym/RepoFix-v0`` episodes through the env API (``gym.make``,
``reset``, ``step``), all open at once (a barrier after every reset), then each runs
``pytest -q`` on its project ``runs`` times through the ``bash`` tool. Measured in the same
run:

* every pytest call is correct (exit 0, ``N passed`` with N the task's visible tests);
* the pytest call's latency at scale, against the same call in one session alone and
  against the same pytest run on the host without the jail (a subprocess in a temporary
  copy of the project);
* memory per open session (the pool's memory cgroups: processes and work-dir files);
* session open latency (``reset``: a sandbox session, the project's files and its git
  repository);
* what is left once every env is closed (sessions, work dirs, cgroups, uids, processes).

:func:`repo_scale_run` is also what ``tests/repo/test_repo_scale.py`` runs at reduced scale.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from benchmarks.bench_sandbox_scale import _memory_usage, leftovers
from benchmarks.cli import exit_on_help
from benchmarks.serve_clients import percentile

ENV_ID = "agentgym/RepoFix-v0"
PYTEST = "pytest -q 2>&1 | tail -1"
_PASSED = re.compile(r"^(\d+) passed in [\d.]+s", re.MULTILINE)


def _tasks(count: int) -> list[tuple[str, int, str]]:
    """``count`` task ids spread over every project, with the number of visible tests each
    and the split the task belongs to."""
    from agentgym.simulators.repo import load_table
    from agentgym.simulators.repo.issues import split_test_id

    table = load_table()
    by_project: dict[str, list[str]] = {}
    for tid, row in sorted(table.rows.items()):
        by_project.setdefault(row["project"], []).append(tid)
    names = sorted(by_project)
    picked = []
    for i in range(count):
        ids = by_project[names[i % len(names)]]
        picked.append(ids[(i // len(names)) * 7 % len(ids)])
    out = []
    for tid in picked:
        task = table.task(tid)
        removed = {split_test_id(t)[:2] for t in task.fail_to_pass}
        visible = [t for t in task.pass_to_pass if split_test_id(t)[:2] not in removed]
        out.append((tid, len(visible), task.split))
    return out


def _bash(command: str) -> str:
    from agentgym.parsing import render_tool_call

    return render_tool_call("bash", {"command": command, "timeout": 300})


def _pytest_ok(text: str, expected: int) -> bool:
    found = _PASSED.search(text)
    return found is not None and int(found.group(1)) == expected and "[exit code" not in text


def _alone(pool: Any, task: tuple[str, int, str], calls: int) -> tuple[list[float], list[float]]:
    """The same pytest call in one session with nothing else running (and that session's
    open times, over a few resets)."""
    import gymnasium as gym

    env = gym.make(ENV_ID, pool=pool, split=task[2])
    times, opens = [], []
    try:
        for _ in range(3):
            t0 = time.perf_counter()
            env.reset(options={"task_id": task[0]})
            opens.append(time.perf_counter() - t0)
        for _ in range(calls):
            t0 = time.perf_counter()
            obs = env.step(_bash(PYTEST))[0]
            times.append(time.perf_counter() - t0)
            assert _pytest_ok(obs["text"], task[1]), obs["text"]
    finally:
        env.close()
    return times, opens


def _host(task: tuple[str, int, str], calls: int) -> list[float]:
    """The same pytest run on the host, without the jail, in a temporary copy."""
    from agentgym.simulators.repo import load_table

    files = load_table().task(task[0]).starting_files
    root = tempfile.mkdtemp(prefix="repofix-bench-")
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    times = []
    try:
        for path, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as fh:
                fh.write(text)
        for _ in range(calls):
            t0 = time.perf_counter()
            out = subprocess.run(
                ["bash", "-c", f"{sys.executable} -m {PYTEST}"],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            times.append(time.perf_counter() - t0)
            assert _pytest_ok(out.stdout, task[1]), out.stdout
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return times


def repo_scale_run(
    pool: Any, *, sessions: int, runs: int = 3, baseline_calls: int = 10
) -> dict[str, Any]:
    """Open ``sessions`` RepoFix episodes at once, run pytest ``runs`` times in each, close
    them all; return what was measured (see the module docstring)."""
    import gymnasium as gym

    import agentgym  # noqa: F401

    tasks = _tasks(sessions)
    alone, alone_opens = _alone(pool, tasks[0], baseline_calls)
    host = _host(tasks[0], baseline_calls)
    opened = threading.Barrier(sessions + 1)
    go = threading.Barrier(sessions + 1)
    resets: list[float] = []
    calls: list[float] = []
    first_task_calls: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def episode(i: int) -> None:
        tid, expected, split = tasks[i]
        env = None
        try:
            env = gym.make(ENV_ID, pool=pool, split=split)
            t0 = time.perf_counter()
            env.reset(options={"task_id": tid})
            with lock:
                resets.append(time.perf_counter() - t0)
        except Exception as exc:  # a failure is a finding, never a crash of the harness
            with lock:
                errors.append(f"session {i} reset: {type(exc).__name__}: {exc}")
            env = None
        opened.wait()
        go.wait()
        if env is None:
            return
        try:
            for _ in range(runs):
                t0 = time.perf_counter()
                obs = env.step(_bash(PYTEST))[0]
                dt = time.perf_counter() - t0
                with lock:
                    calls.append(dt)
                    if tid == tasks[0][0]:
                        first_task_calls.append(dt)
                    if not _pytest_ok(obs["text"], expected):
                        errors.append(f"session {i} ({tid}): {obs['text'][-300:]!r}")
        except Exception as exc:
            with lock:
                errors.append(f"session {i}: {type(exc).__name__}: {exc}")
        finally:
            env.close()

    base_memory = _memory_usage(pool)
    with ThreadPoolExecutor(max_workers=sessions) as ex:
        futures = [ex.submit(episode, i) for i in range(sessions)]
        opened.wait()
        time.sleep(1.0)  # let the last resets' set-up cells finish settling
        open_memory = _memory_usage(pool)
        start = time.perf_counter()
        go.wait()
        for f in futures:
            f.result()
        wall = time.perf_counter() - start
    deadline = time.monotonic() + 60.0
    left = leftovers(pool)
    while any(left.values()) and time.monotonic() < deadline:
        time.sleep(0.2)
        left = leftovers(pool)
    return {
        "sessions": sessions,
        "runs": runs,
        "calls": calls,
        "first_task_calls": first_task_calls,
        "alone": alone,
        "alone_opens": alone_opens,
        "load_average": os.getloadavg()[0],
        "host": host,
        "resets": resets,
        "errors": errors,
        "memory_per_session": (open_memory - base_memory) / max(1, sessions),
        "leftovers": left,
        "wall_s": wall,
    }


def _ms(values: list[float], q: float) -> str:
    return f"{percentile(values, q) * 1000:.0f}"


def run(quick: bool = False) -> str:
    from agentgym.simulators.sandbox import default_pool

    pool = default_pool()
    sessions = 32 if quick else 256
    r = repo_scale_run(pool, sessions=sessions, runs=3)
    calls, alone, host = r["calls"], r["alone"], r["host"]
    lines = [
        "## RepoFix at scale (issue 34)",
        "",
        f"{r['sessions']} concurrent `agentgym/RepoFix-v0` sessions on {os.cpu_count()} cores, "
        f"each running `{PYTEST}` {r['runs']} times through the `bash` tool "
        f"({len(calls)} calls, {len(r['errors'])} wrong or failed).",
        "",
        "| pytest call | p50 ms | p99 ms | n |",
        "|---|---|---|---|",
        f"| {r['sessions']} sessions at once | {_ms(calls, 50)} | {_ms(calls, 99)} | {len(calls)} |",
        f"| one session alone | {_ms(alone, 50)} | {_ms(alone, 99)} | {len(alone)} |",
        f"| host, no jail (subprocess) | {_ms(host, 50)} | {_ms(host, 99)} | {len(host)} |",
        "",
        f"Throughput at scale: {len(calls) / r['wall_s']:.2f} pytest calls/s over "
        f"{r['wall_s']:.0f} s (one session alone: {1 / statistics.median(alone):.2f}/s); "
        f"alone/host p50 {statistics.median(alone) / statistics.median(host):.2f}x. Session open "
        f"(`reset`: session, files, git) with {r['sessions']} opening at once p50 "
        f"{_ms(r['resets'], 50)} ms, p99 {_ms(r['resets'], 99)} ms; alone p50 "
        f"{_ms(r['alone_opens'], 50)} ms. Memory per open session (its processes and files, "
        f"the pool's memory cgroups) {r['memory_per_session'] / 2**20:.1f} MB. Load average "
        f"at the end: {r['load_average']:.1f} (the machine is shared).",
        "",
        "Left afterwards: " + ", ".join(f"{k} {v}" for k, v in r["leftovers"].items()) + ".",
    ]
    if r["errors"]:
        lines += ["", "Errors (first 5): " + "; ".join(r["errors"][:5])]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    exit_on_help(__doc__, "python -m benchmarks.bench_repo [--quick]")
    sys.stdout.write(run(quick="--quick" in sys.argv))
