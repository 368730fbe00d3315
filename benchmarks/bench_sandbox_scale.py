"""Code sessions at RL scale (issue 21): many CodeMath sessions at once, some of them hostile.

Three parts, each against the code before sessions ran concurrently (commit ``582008d``,
where a sandbox worker ran one cell at a time for all its sessions) where it can run the
same load:

1. Latency A/B: a one-shot run, a session cell and eight sessions each sleeping 1 s on the
   default pool (2 workers), old and new code in their own processes, alternating (ABAB).
2. ``agentgym serve``: 60 benign CodeMath-L1 WebSocket clients alone, then with 4 clients
   whose cells only sleep; the benign p99 round trip against the unloaded one, old and new.
3. Scale: ``n`` concurrent CodeMath sessions through the env API (``gym.make``, ``reset``,
   ``step``), every tenth hostile (cells that sleep past their limit, spin, try SysV/POSIX
   IPC, allocate memory or fork up to their limits). Benign errors, benign cell latency
   against the same cells with no hostile neighbours (same run), memory per idle session,
   session-open latency, and what is left afterwards. :func:`scale_run` is also what
   ``tests/sandbox/test_sandbox_scale.py`` runs at reduced scale.
"""

from __future__ import annotations

import contextlib
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agentgym.server.load import percentile
from benchmarks.basecommit import alternate, base_tree

BASE = "582008d"
ENV_ID = "agentgym/CodeMath-L1-v0"

# ---- hostile cells -----------------------------------------------------------------------

HOSTILE: dict[str, str] = {
    "sleep": "import time\ntime.sleep(3600)",
    "spin": "while True:\n    pass",
    "ipc": (
        "import ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "ids = [libc.shmget(0x5EC, 300 << 20, 0o1600), libc.msgget(0x5EC, 0o1600),\n"
        "       libc.semget(0x5EC, 1, 0o1600)]\n"
        "print(ids)"
    ),
    "memory": (
        "chunks = []\n"
        "try:\n"
        "    while True:\n"
        "        chunks.append(bytearray(32 << 20))\n"
        "except MemoryError:\n"
        "    pass\n"
        "print(len(chunks))"
    ),
    "fork": (
        "import os, time\n"
        "n = 0\n"
        "while True:\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError:\n"
        "        break\n"
        "    if pid == 0:\n"
        "        time.sleep(3600)\n"
        "        os._exit(0)\n"
        "    n += 1\n"
        "print(n)"
    ),
}


def _cell(code: str) -> str:
    from agentgym.parsing import render_tool_call

    return render_tool_call("python", {"code": code})


def _benign(k: int, i: int) -> tuple[str, str]:
    """Cell ``k`` of benign session ``i``, and the number it must print."""
    n = 100 + 7 * i + k
    return _cell(f"v{k} = sum(j * j for j in range({n}))\nprint(v{k})"), str(
        sum(j * j for j in range(n))
    )


# ---- part 3: the scale run ----------------------------------------------------------------


def _memory_usage(pool: Any) -> int:
    total = 0
    for w in pool.workers:
        for path in w.cgroup.paths if w.cgroup else []:
            if "/memory/" in path:
                with open(os.path.join(path, "memory.usage_in_bytes")) as fh:
                    total += int(fh.read())
    return total


def _pool_uid_processes(pool: Any) -> int:
    ranges = [(w.uid_base, w.uid_base + w.n_uids) for w in pool.workers]
    found = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                uid = os.stat(f"/proc/{name}").st_uid
            except OSError:
                continue
            found += any(lo <= uid < hi for lo, hi in ranges)
    return found


_IPC_COUNT = (
    "print(sum(len(open(f'/proc/sysvipc/{k}').read().splitlines()) - 1 "
    "for k in ('shm', 'msg', 'sem')))"
)


def leftovers(pool: Any) -> dict[str, int]:
    """What the pool holds once every session is closed (all should be 0)."""
    out = {"sessions": 0, "lineages": 0, "workdirs": 0, "cgroups": 0, "busy_uids": 0}
    ipc = 0
    for w in pool.workers:
        info = w.call({"op": "ping"}, 30.0)
        for key in out:
            out[key] += int(info.get(key, 0))
        r = w.call({"op": "exec", "code": _IPC_COUNT, "timeout": 10.0}, 10.0)
        ipc += int(r["stdout"].strip() or 0)
    out["ipc_objects"] = ipc
    out["uid_processes"] = _pool_uid_processes(pool)
    return out


def scale_run(
    pool: Any,
    *,
    sessions: int,
    hostile_every: int = 10,
    cells: int = 4,
    cell_timeout: float = 10.0,
    hostile: bool = True,
) -> dict[str, Any]:
    """Open ``sessions`` CodeMath envs at once (every ``hostile_every``-th hostile when
    ``hostile``), run ``cells`` cells in each, close them all; return what was measured.

    All sessions are open together (a barrier after every reset) before any cell runs, so
    the figures are for that many live sessions.
    """
    import gymnasium as gym

    import agentgym  # noqa: F401

    kinds = list(HOSTILE)
    roles = [
        kinds[(i // hostile_every) % len(kinds)] if hostile and i % hostile_every == 0 else ""
        for i in range(sessions)
    ]
    opened = threading.Barrier(sessions + 1)
    go = threading.Barrier(sessions + 1)
    resets: list[float] = []
    benign_cells: list[float] = []
    errors: list[str] = []
    hostile_status: dict[str, int] = {}
    lock = threading.Lock()

    def episode(i: int) -> None:
        role = roles[i]
        env = None
        try:
            env = gym.make(ENV_ID, pool=pool, cell_timeout=cell_timeout)
            t0 = time.perf_counter()
            env.reset(seed=i)
            dt = time.perf_counter() - t0
            with lock:
                resets.append(dt)
        except Exception as exc:  # a failure is a finding, never a crash of the harness
            with lock:
                errors.append(
                    f"session {i} ({role or 'benign'}) reset: {type(exc).__name__}: {exc}"
                )
            env = None
        opened.wait()  # every thread arrives, opened or not, so one failure stops no other
        go.wait()
        if env is None:
            return
        try:
            for k in range(cells):
                if role:
                    _, _, _, _, info = env.step(_cell(HOSTILE[role]))
                    ran = (
                        "tool ok" if info["reward_components"].get("tool", 0) > 0 else "tool failed"
                    )
                    with lock:
                        hostile_status[f"{role}: {ran}"] = (
                            hostile_status.get(f"{role}: {ran}", 0) + 1
                        )
                    continue
                action, want = _benign(k, i)
                t0 = time.perf_counter()
                obs, _, _, _, info = env.step(action)
                dt = time.perf_counter() - t0
                ok = want in obs["text"] and info["reward_components"].get("tool", 0) > 0
                with lock:
                    benign_cells.append(dt)
                    if not ok:
                        errors.append(f"session {i} cell {k}: {obs['text'][:200]!r}")
            env.step("<answer>0</answer>")
        except Exception as exc:
            with lock:
                errors.append(f"session {i} ({role or 'benign'}): {type(exc).__name__}: {exc}")
        finally:
            env.close()

    base_memory = _memory_usage(pool)
    with ThreadPoolExecutor(max_workers=sessions) as ex:
        futures = [ex.submit(episode, i) for i in range(sessions)]
        opened.wait()
        idle_memory = _memory_usage(pool)
        start = time.perf_counter()
        go.wait()
        for f in futures:
            f.result()
        wall = time.perf_counter() - start
    # what is left, once the worker has finished releasing the sessions
    deadline = time.monotonic() + 30.0
    left = leftovers(pool)
    while any(left.values()) and time.monotonic() < deadline:
        time.sleep(0.2)
        left = leftovers(pool)
    settle = time.monotonic() + 30.0
    after_memory = _memory_usage(pool)
    while after_memory > base_memory + (16 << 20) and time.monotonic() < settle:
        time.sleep(0.2)
        after_memory = _memory_usage(pool)
    n_benign = sum(1 for r in roles if not r)
    return {
        "sessions": sessions,
        "benign": n_benign,
        "hostile": sessions - n_benign,
        "errors": errors,
        "benign_cells": benign_cells,
        "resets": resets,
        "hostile_status": hostile_status,
        "idle_memory_per_session": (idle_memory - base_memory) / max(1, sessions),
        "memory_left": after_memory - base_memory,
        "leftovers": left,
        "wall_s": wall,
    }


# ---- part 1: latency A/B against the old code --------------------------------------------

_AB_CHILD = """
import json, sys, threading, time, statistics
from agentgym.simulators.sandbox import SandboxPool
n = int(sys.argv[1])
out = {"oneshot": [], "cell": []}
with SandboxPool(workers=2) as pool:
    with pool.session() as s:
        s.run("x = 0")
        for _ in range(5):
            pool.run("x = 1"); s.run("x += 1")
        for i in range(n):
            t = time.perf_counter(); pool.run("x = sum(range(100))")
            out["oneshot"].append((time.perf_counter() - t) * 1000)
            for _ in range(3):
                t = time.perf_counter(); s.run("x += 1")
                out["cell"].append((time.perf_counter() - t) * 1000)
    res = {k: statistics.median(v) for k, v in out.items()}
    sessions = [pool.session() for _ in range(8)]
    for s in sessions:
        s.run("import time")
    gate = threading.Barrier(8)
    ends = []
    def sleep(s):
        gate.wait()
        t = time.perf_counter(); s.run("time.sleep(1)"); ends.append(time.perf_counter())
    t0 = [0.0]
    threads = [threading.Thread(target=sleep, args=(s,)) for s in sessions]
    start = time.perf_counter()
    for t in threads: t.start()
    for t in threads: t.join()
    res["eight_sleepers_s"] = max(ends) - start
    for s in sessions:
        s.close()
print(json.dumps(res))
"""


def _ab(quick: bool) -> dict[str, list[dict[str, float]]]:
    runs = alternate(_AB_CHILD, [str(40 if quick else 150)], 2 if quick else 3, BASE)
    return runs if runs is not None else {"new": [], "old": []}


# ---- part 2: agentgym serve with sleeping neighbours -------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_server(tag: str) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = dict(os.environ)
    if tag == "old":
        env["PYTHONPATH"] = str(base_tree(BASE))
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentgym", "serve", ENV_ID, "--port", str(port),
         "--max-sessions", "100"],
        env=env, cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"the {tag} server did not start")


def _serve_phase(url: str, steps: int, sleepers: int) -> dict[str, Any]:
    import asyncio

    from agentgym.server.load import ClientPlan, run_clients, sleeping_cell

    plans = [ClientPlan(url, steps=steps, seed=i) for i in range(60)]
    plans += [
        ClientPlan(url, steps=max(2, steps // 5), seed=900 + i, slow_action=sleeping_cell(1.0))
        for i in range(sleepers)
    ]
    stats = asyncio.run(run_clients(plans))
    benign = [t for s in stats if s.plan.slow_action is None for t in s.step_s]
    return {"p50": percentile(benign, 50), "p99": percentile(benign, 99),
            "errors": sum(len(s.errors) for s in stats)}  # fmt: skip


def _serve(quick: bool) -> dict[tuple[str, str], list[dict[str, Any]]]:
    steps = 10 if quick else 25
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for _ in range(1 if quick else 2):
        for tag in ("old", "new"):
            if tag == "old" and base_tree(BASE) is None:
                continue
            proc, url = _start_server(tag)
            try:
                _serve_phase(url, 2, 0)  # warm-up: sandbox workers, first sessions
                for workload, sleepers in (("unloaded", 0), ("4 sleepers", 4)):
                    out.setdefault((tag, workload), []).append(_serve_phase(url, steps, sleepers))
            finally:
                proc.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=30)
                if proc.poll() is None:
                    proc.kill()
    return out


# ---- the section ---------------------------------------------------------------------------


def run(quick: bool = False) -> str:
    from agentgym.simulators.sandbox import SandboxPool

    from benchmarks.timing import load

    lines = ["## Code sessions at RL scale: concurrent, isolated sessions (issue 21)", ""]

    ab = _ab(quick)
    lines += [
        f"### Latency against {BASE} (before: one cell at a time per worker)",
        "",
        f"Each side in its own process with a 2-worker pool, alternating new/old "
        f"{len(ab['new'])} times; per round the median of 40-150 one-shot runs and 3x as many "
        "session cells, then 8 sessions each running `time.sleep(1)` released together. "
        "Figures: min / median over rounds.",
        "",
        f"| operation | now | {BASE} | now / before (medians) |",
        "|---|---:|---:|---:|",
    ]
    for key, label, unit in (("oneshot", "one-shot run `x = sum(range(100))`", "ms"),
                             ("cell", "session cell `x += 1`", "ms"),
                             ("eight_sleepers_s", "8 sessions each sleeping 1 s, wall", "s")):  # fmt: skip
        new = [r[key] for r in ab["new"]]
        old = [r[key] for r in ab["old"]] or [float("nan")]
        lines.append(
            f"| {label} ({unit}) | {min(new):.3f} / {statistics.median(new):.3f} | "
            f"{min(old):.3f} / {statistics.median(old):.3f} | "
            f"{statistics.median(new) / statistics.median(old):.2f} |"
        )

    served = _serve(quick)
    lines += [
        "",
        "### `agentgym serve`: 60 benign CodeMath-L1 clients, then with 4 whose cells sleep",
        "",
        "One server process per side (old code through `PYTHONPATH`), clients in this "
        "process over WebSocket on 127.0.0.1; the sleepers' cells each sleep 1 s. Figures: "
        "benign step round trip, ms (median over rounds of the per-round p50 / p99).",
        "",
        "| code | workload | p50 ms | p99 ms | p99 / unloaded p99 | errors |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for tag in ("old", "new"):
        for workload in ("unloaded", "4 sleepers"):
            rs = served.get((tag, workload))
            if not rs:
                continue
            p50 = statistics.median(r["p50"] for r in rs)
            p99 = statistics.median(r["p99"] for r in rs)
            base = statistics.median(r["p99"] for r in served[(tag, "unloaded")])
            lines.append(
                f"| {'current' if tag == 'new' else BASE} | {workload} | {p50 * 1e3:.1f} | "
                f"{p99 * 1e3:.1f} | {p99 / base:.1f}x | {sum(r['errors'] for r in rs)} |"
            )

    n = 256 if quick else 1024
    with SandboxPool(workers=2) as pool:
        alone = scale_run(pool, sessions=n - n // 10, hostile=False)
        mixed = scale_run(pool, sessions=n)
    lines += [
        "",
        f"### {n} concurrent CodeMath sessions through the env API, every tenth hostile",
        "",
        f"A 2-worker pool; {n} `gym.make('{ENV_ID}')` envs in threads, each `reset` (opens "
        "its session), then all wait until every session is open, then each runs 4 cells "
        "and answers. Benign cells compute and print a number the harness checks; hostile "
        f"sessions ({', '.join(HOSTILE)}, in turn) run 4 hostile cells each, up to their "
        "limits (cell timeout 10 s). The same benign sessions first ran alone, in the same "
        "run and pool.",
        "",
        "| run | sessions (benign + hostile) | benign errors | benign cell p50 ms | "
        "p99 ms | open (reset) p50 ms | p99 ms | idle memory / session MB | wall s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in (("benign alone", alone), ("with hostile neighbours", mixed)):
        lines.append(
            f"| {name} | {r['benign']} + {r['hostile']} | {len(r['errors'])} | "
            f"{percentile(r['benign_cells'], 50) * 1e3:.1f} | {percentile(r['benign_cells'], 99) * 1e3:.1f} | "
            f"{percentile(r['resets'], 50) * 1e3:.1f} | {percentile(r['resets'], 99) * 1e3:.1f} | "
            f"{r['idle_memory_per_session'] / 2**20:.2f} | {r['wall_s']:.1f} |"
        )
    lines += [
        "",
        "Afterwards (all should be 0): "
        + "; ".join(
            f"{name}: "
            + ", ".join(f"{k} {v}" for k, v in r["leftovers"].items())
            + f", memory charge left {r['memory_left'] / 2**20:.1f} MB"
            for name, r in (("alone", alone), ("mixed", mixed))
        )
        + ".",
        "",
        "Hostile cells' outcomes: "
        + ", ".join(f"{k} {v}" for k, v in sorted(mixed["hostile_status"].items()))
        + ".",
    ]
    if mixed["errors"] or alone["errors"]:
        lines += ["", "Benign errors, first ones: "
                  + "; ".join((alone["errors"] + mixed["errors"])[:3])]  # fmt: skip
    lines += [
        "",
        f"Machine: 2 shared CPU cores, 24 GB, shared with other engineers' work while measured "
        f"({load()} at the end): compare rows of one run.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run(quick="--quick" in sys.argv))
