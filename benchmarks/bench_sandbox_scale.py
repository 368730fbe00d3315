"""Code sessions at RL scale (issue 21): many CodeMath sessions at once, some of them hostile.

Four parts (the fourth, issue 38's, alone: ``python -m benchmarks.bench_sandbox_scale
--round4 256``), the first three against the code before sessions ran concurrently (commit ``582008d``,
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
4. Issue 38: what the isolation fixes cost (open, cell, fork, close, one-shot, many opens,
   idle memory) against the commit before them, and the hostile soak at 256 sessions with
   the new hostile kinds (a spy, a lock sender, fork games, file floods, one-shot hogs): bytes
   crossing, benign p99 against the same cells alone, what is left.
5. Issue 34, density (alone: ``python -m benchmarks.bench_sandbox_scale --density 1024
   [--base COMMIT] [--quick] [--only zygote,base]``; opening alone: ``--opens 500``): the scale run of part 3 in fresh processes, today's code
   with its zygote, today's with ``SandboxConfig(zygote=False)`` and ``DENSITY_BASE``'s,
   alternating; in each, after an unmeasured warm-up, alone and mixed in the order alone,
   mixed, mixed, alone: session open p50/p99 with all open at once, idle memory per session,
   benign p99 with a tenth hostile against alone, load before and after each run.
6. Issue 34, which hostile kinds slow benign cells (alone: ``--kinds [n]``, not part of the
   whole run): one warm pool, the benign cells alone and next to one hostile kind at a time
   (every tenth session of that kind), alternating.
"""

from __future__ import annotations

import contextlib
import json
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

from benchmarks.basecommit import alternate, base_tree
from benchmarks.serve_clients import percentile

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
    # issue 38: the channels between sessions, fork games, file floods, one-shot hogs
    "spy": "SPY",  # replaced by _SPY (every route to another session's data; reports hits)
    "locks": "LOCKS",  # replaced by _LOCKS (holds locks on the shared tree: a byte to send)
    "daemon": (
        "import os, signal, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(3600)\n"
        "    os._exit(0)\n"
        "for pid in range(2, 4096):\n"
        "    try:\n"
        "        os.kill(pid, signal.SIGCONT)\n"
        "    except OSError:\n"
        "        pass\n"
        "print('sent')"
    ),
    "files": (
        "import os\n"
        "n = len(os.listdir('.'))\n"
        "for i in range(n, n + 20000):\n"
        "    open(f'f{i}', 'w').close()\n"
        "print(n + 20000)"
    ),
    "oneshot": "ONESHOT",  # the cell is a one-shot run (pool.run), as CodeTests' run_tests
}

#: Files of the shared read-only tree the lock channel uses (the same paths in the jail).
_SHARED = [
    os.path.join(os.path.dirname(os.__file__), name)
    for name in ("os.py", "abc.py", "ast.py", "enum.py", "io.py", "types.py", "re/__init__.py",
                 "json/__init__.py")
]  # fmt: skip
_SECRET_BYTE = 0xB5

_LOCKS = (
    "import fcntl\n"
    "held = globals().setdefault('held', [])\n"
    f"for i, name in enumerate({_SHARED!r}):\n"
    f"    if {_SECRET_BYTE} >> i & 1:\n"
    "        f = open(name, 'rb')\n"
    "        fcntl.flock(f, fcntl.LOCK_EX)\n"
    "        fcntl.lockf(f, fcntl.LOCK_SH)\n"
    "        held.append(f)\n"
    "print(len(held))"
)

_SPY = (
    "import fcntl, json, os, re, struct\n"
    "hits, me = [], os.getpid()\n"
    "def look(text):\n"
    "    hits.extend(re.findall(r'SECRET\\d{4}', text))\n"
    "for pid in range(2, 8192):\n"
    "    if pid == me:\n"
    "        continue\n"
    "    try:\n"
    "        os.kill(pid, 0)\n"
    "    except ProcessLookupError:\n"
    "        continue\n"
    "    except PermissionError:\n"
    "        pass\n"
    "    for name in ('comm', 'cmdline', 'environ', 'status'):\n"
    "        try:\n"
    "            look(open(f'/proc/{pid}/{name}', 'rb').read(512).decode('latin-1'))\n"
    "        except OSError:\n"
    "            pass\n"
    "    for call in (os.getpriority, os.getpgid):\n"
    "        try:\n"
    "            call(*((os.PRIO_PROCESS, pid) if call is os.getpriority else (pid,)))\n"
    "            hits.append(f'attribute of {pid}')\n"
    "        except OSError:\n"
    "            pass\n"
    "for path in ('/proc/locks',):\n"
    "    try:\n"
    "        look(open(path).read())\n"
    "    except OSError:\n"
    "        pass\n"
    "try:\n"
    "    look(' '.join(os.listdir('/tmp/sbx')))\n"
    "except OSError:\n"
    "    pass\n"
    "byte = 0\n"
    f"for i, name in enumerate({_SHARED!r}):\n"
    "    f = open(name, 'rb')\n"
    "    try:\n"
    "        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
    "        fcntl.flock(f, fcntl.LOCK_UN)\n"
    "    except BlockingIOError:\n"
    "        byte |= 1 << i\n"
    "    probe = struct.pack('hhqqi', fcntl.F_WRLCK, 0, 0, 0, 0)\n"
    "    if struct.unpack('hhqqi', fcntl.fcntl(f, fcntl.F_GETLK, probe))[0] != fcntl.F_UNLCK:\n"
    "        byte |= 1 << i\n"
    "    f.close()\n"
    "print('SPY', json.dumps({'hits': sorted(set(hits)), 'byte': byte}))"
)

_ONESHOT_HOG = (
    "import subprocess, sys, time\n"
    "kids = [subprocess.Popen([sys.executable, '-c', 'while True: pass']) for _ in range(30)]\n"
    "n = 0\n"
    "try:\n"
    "    while True:\n"
    "        with open(f'f{n}', 'wb') as fh:\n"
    "            fh.write(b'x' * (1 << 20))\n"
    "        n += 1\n"
    "except OSError:\n"
    "    pass\n"
    "print(n, flush=True)\n"
    "time.sleep(60)"
)


def _hostile_code(role: str) -> str:
    return {"spy": _SPY, "locks": _LOCKS}.get(role, HOSTILE[role])


def _cell(code: str) -> str:
    from agentgym.parsing import render_tool_call

    return render_tool_call("python", {"code": code})


def _benign(k: int, i: int) -> tuple[str, str]:
    """Cell ``k`` of benign session ``i``, and the number it must print.

    It also leaves its secret (``SECRET<i>``) where a spy would look: as its process name
    and in a file of its work dir."""
    n = 100 + 7 * i + k
    secret = f"SECRET{i:04d}"
    code = (
        f"__import__('ctypes').CDLL(None).prctl(15, b'{secret}', 0, 0, 0)\n"
        f"open('secret.txt', 'w').write('{secret}')\n"
        f"v{k} = sum(j * j for j in range({n}))\nprint(v{k})"
    )
    return _cell(code), str(sum(j * j for j in range(n)))


def _spied(text: str) -> tuple[int, int]:
    """(bytes of other sessions' secrets, spy reports) in a spy cell's observation."""
    import json

    crossed = reports = 0
    for line in text.splitlines():
        if line.startswith("SPY "):
            report = json.loads(line[4:])
            reports += 1
            crossed += sum(len(h) for h in report["hits"]) + (1 if report["byte"] else 0)
    return crossed, reports


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
    out = {"sessions": 0, "lineages": 0, "workdirs": 0, "cgroups": 0, "busy_uids": 0,
           "trash": 0, "removing": 0}  # fmt: skip
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


def _steady(pool: Any, timeout: float = 30.0) -> None:
    """Bring every worker to its steady state before a memory baseline. A fresh pool holds
    no spare run processes yet (a worker forks them after its first release), and the first
    forks copy pages of the worker's heap: a baseline taken then would count the spares and
    those copies as left behind by the sessions. So: one one-shot run per worker, wait for
    its spares, and again, until the workers' memory stops changing (at most ``timeout``)."""
    try:
        from agentgym.simulators.sandbox._jail import SPARES
    except ImportError:  # a tree before spares
        SPARES = 0
    deadline = time.monotonic() + timeout
    last = -1
    while time.monotonic() < deadline:
        for w in pool.workers:
            w.call({"op": "exec", "code": "pass", "timeout": 10.0}, 30.0)
        while time.monotonic() < deadline and any(
            int(w.call({"op": "ping"}, 30.0).get("spares", SPARES)) < SPARES for w in pool.workers
        ):
            time.sleep(0.05)
        now = _memory_usage(pool)
        if abs(now - last) < 1 << 20:
            return
        last = now


def scale_run(
    pool: Any,
    *,
    sessions: int,
    hostile_every: int = 10,
    cells: int = 4,
    cell_timeout: float = 10.0,
    hostile: bool = True,
    kinds: list[str] | None = None,
) -> dict[str, Any]:
    """Open ``sessions`` CodeMath envs at once (every ``hostile_every``-th hostile when
    ``hostile``, taking the ``kinds`` of :data:`HOSTILE` in turn, all by default), run
    ``cells`` cells in each, close them all; return what was measured.

    All sessions are open together (a barrier after every reset) before any cell runs, so
    the figures are for that many live sessions.
    """
    import gymnasium as gym

    import agentgym  # noqa: F401

    kinds = kinds or list(HOSTILE)
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
    spied = {"crossing_bytes": 0, "spy_reports": 0}
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
                if role == "oneshot":  # a hog through pool.run, next to the episode
                    ran = pool.run(_ONESHOT_HOG, timeout=min(5.0, cell_timeout)).status
                    with lock:
                        key = f"oneshot: {ran}"
                        hostile_status[key] = hostile_status.get(key, 0) + 1
                    continue
                if role:
                    obs, _, _, _, info = env.step(_cell(_hostile_code(role)))
                    ran = (
                        "tool ok" if info["reward_components"].get("tool", 0) > 0 else "tool failed"
                    )
                    crossed, reports = _spied(obs["text"]) if role == "spy" else (0, 0)
                    with lock:
                        hostile_status[f"{role}: {ran}"] = (
                            hostile_status.get(f"{role}: {ran}", 0) + 1
                        )
                        spied["crossing_bytes"] += crossed
                        spied["spy_reports"] += reports
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

    _steady(pool)
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
        **spied,
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

    from benchmarks.serve_clients import ClientPlan, run_clients, sleeping_cell

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


# ---- part 4: issue 38 (round four): costs of the fixes, and the hostile soak ---------------

ROUND4_BASE = "da162fd"
"""The commit before the issue 38 fixes (hidepid, syscall guard, freezer, one-shot cgroups,
the remover process)."""

_R4_CHILD = """
import json, os, statistics, sys, time
from concurrent.futures import ThreadPoolExecutor
from agentgym.simulators.sandbox import SandboxPool
n, many = int(sys.argv[1]), int(sys.argv[2])
out = {"open": [], "cell": [], "oneshot": [], "fork": [], "close": []}
def lap(key, fn):
    t = time.perf_counter(); r = fn(); out[key].append((time.perf_counter() - t) * 1e3); return r
with SandboxPool(workers=2) as pool:
    for _ in range(5):
        with pool.session() as s:
            s.run("x = 1")
        pool.run("x = 1")
    for i in range(n):
        s = lap("open", pool.session)
        s.run("x = 0")
        for _ in range(3):
            lap("cell", lambda: s.run("x += 1"))
        f = lap("fork", s.fork)
        f.close()
        lap("close", s.close)
        lap("oneshot", lambda: pool.run("x = sum(range(100))"))
    res = {k: statistics.median(v) for k, v in out.items()}
    with pool.session() as s:  # lock calls: sqlite, 200 inserts each in its own transaction
        s.run("import sqlite3, time\\ndb = sqlite3.connect('t.db', isolation_level=None)\\n"
              "db.execute('create table t (x)')")
        took = []
        for _ in range(5):
            r = s.run("t = time.perf_counter()\\nfor i in range(200):\\n"
                      "    db.execute('insert into t values (?)', (i,))\\n"
                      "print((time.perf_counter() - t) * 1e3)")
            took.append(float(r.stdout))
        res["sqlite_ms"] = statistics.median(took)
    def usage():
        total = 0
        for w in pool.workers:
            for p in w.cgroup.paths:
                if "/memory/" in p:
                    with open(os.path.join(p, "memory.usage_in_bytes")) as fh:
                        total += int(fh.read())
        return total
    base = usage()
    t = time.perf_counter()
    with ThreadPoolExecutor(64) as ex:
        sessions = list(ex.map(lambda _: pool.session(), range(many)))
        list(ex.map(lambda s: s.run("x = 1"), sessions))
    res["open_many_s"] = time.perf_counter() - t
    res["idle_mb"] = (usage() - base) / many / 2**20
    for s in sessions:
        s.close()
print(json.dumps(res))
"""


def round4_ab(quick: bool = False) -> dict[str, list[dict[str, float]]]:
    """Today's code against ROUND4_BASE, alternating in fresh processes (2-worker pools)."""
    args = ["20" if quick else "60", "128" if quick else "256"]
    runs = alternate(_R4_CHILD, args, 2 if quick else 3, ROUND4_BASE)
    return runs if runs is not None else {"new": [], "old": []}


def round4_section(sessions: int = 256, quick: bool = False) -> str:
    """The issue 38 section: the A/B of the fixes' costs and the hostile soak."""
    from agentgym.simulators.sandbox import SandboxPool

    from benchmarks.timing import load

    ab = round4_ab(quick)
    lines = [
        "## Code sessions, issue 38: what the isolation fixes cost, and a hostile soak",
        "",
        f"### Latency against {ROUND4_BASE} (before the fixes)",
        "",
        f"Each side in its own process with a 2-worker pool, alternating new/old "
        f"{len(ab['new'])} times; per round the median over 20-60 repetitions. Figures: "
        "min / median over rounds.",
        "",
        f"| operation | now | {ROUND4_BASE} | now / before (medians) |",
        "|---|---:|---:|---:|",
    ]
    for key, label in (("open", "open a session, ms"), ("cell", "session cell `x += 1`, ms"),
                       ("fork", "fork a session, ms"), ("close", "close a session, ms"),
                       ("oneshot", "one-shot run, ms"),
                       ("sqlite_ms", "200 sqlite inserts (autocommit) in a cell, ms"),
                       ("open_many_s", "open sessions from 64 threads + first cell, s"),
                       ("idle_mb", "memory per idle session, MB")):  # fmt: skip
        new = [r[key] for r in ab["new"]] or [float("nan")]
        old = [r[key] for r in ab["old"]] or [float("nan")]
        lines.append(
            f"| {label} | {min(new):.2f} / {statistics.median(new):.2f} | "
            f"{min(old):.2f} / {statistics.median(old):.2f} | "
            f"{statistics.median(new) / statistics.median(old):.2f} |"
        )
    with SandboxPool(workers=2) as pool:
        alone = scale_run(pool, sessions=sessions - sessions // 10, hostile=False)
        mixed = scale_run(pool, sessions=sessions)
    p99 = [percentile(r["benign_cells"], 99) for r in (alone, mixed)]
    lines += [
        "",
        f"### {sessions} concurrent CodeMath sessions, every tenth hostile",
        "",
        f"As in the scale run above; the hostile kinds ({', '.join(HOSTILE)}) now include a "
        "spy (every route to another session's data: /proc by pid, process attributes, "
        "/proc/locks, the work dirs, the lock channel on the shared tree), a lock sender, "
        "fork-and-SIGCONT games with a daemon, a file flood (80,000 files, removed at close) "
        "and one-shot hogs (30 spinning children and files to their quota, through "
        "`pool.run`). Benign cells leave a secret as their process name and in a file.",
        "",
        "| run | sessions (benign + hostile) | benign errors | benign cell p50 ms | "
        "p99 ms | bytes crossing (spy reports) | wall s |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, r in (("benign alone", alone), ("with hostile neighbours", mixed)):
        lines.append(
            f"| {name} | {r['benign']} + {r['hostile']} | {len(r['errors'])} | "
            f"{percentile(r['benign_cells'], 50) * 1e3:.1f} | "
            f"{percentile(r['benign_cells'], 99) * 1e3:.1f} | "
            f"{r['crossing_bytes']} ({r['spy_reports']}) | {r['wall_s']:.1f} |"
        )
    lines += [
        "",
        f"Benign p99 with hostile neighbours / alone: {p99[1] / p99[0]:.2f}x. Afterwards (all "
        "should be 0): "
        + ", ".join(f"{k} {v}" for k, v in mixed["leftovers"].items())
        + f", memory charge left {mixed['memory_left'] / 2**20:.1f} MB. Hostile outcomes: "
        + ", ".join(f"{k} {v}" for k, v in sorted(mixed["hostile_status"].items()))
        + ".",
        "",
        f"Machine: 2 shared CPU cores, 24 GB, shared with other work ({load()} at the end).",
    ]
    if mixed["errors"] or alone["errors"]:
        lines += [
            "",
            "Benign errors, first ones: " + "; ".join((alone["errors"] + mixed["errors"])[:3]),
        ]
    return "\n".join(lines)


# ---- part 5: density (issue 34): sessions forked from a quiet zygote -------------------------

DENSITY_BASE = "da162fd"
"""The commit the density part compares with (``--base`` picks another): the last commit
before sessions were forked from a zygote."""

_DENSITY_CHILD = """
import json, os, sys, time
from agentgym.simulators.sandbox import SandboxConfig, SandboxPool
from benchmarks.serve_clients import percentile
from benchmarks.bench_sandbox_scale import scale_run
from benchmarks.timing import process_cpu
n, zygote = int(sys.argv[1]), sys.argv[2] == "1"
try:
    config = SandboxConfig(zygote=zygote)
except TypeError:  # a tree before the zygote
    config = SandboxConfig()
def load():
    return " / ".join(open("/proc/loadavg").read().split()[:3])
def own_cpu(pool):  # the workers' own processes (loop, zygote, remover, syscall guard)
    groups = [p for w in pool.workers for p in w.cgroup.paths if "/unified/" in p]
    pids = [pid for g in groups for pid in open(os.path.join(g, "cgroup.procs")).read().split()]
    return sum(got[1] for got in map(process_cpu, pids) if got is not None)
out = {"each": []}
sides = {"alone": {"sessions": n - n // 10, "hostile": False}, "mixed": {"sessions": n}}
with SandboxPool(workers=2, config=config) as pool:
    scale_run(pool, **sides["alone"])  # the warm-up: a fresh pool's first burst is slower
    for name in ORDER:
        before, cpu0 = load(), own_cpu(pool)
        r = scale_run(pool, **sides[name])
        out["each"].append([name, {"benign": r["benign"], "hostile": r["hostile"],
                     "errors": len(r["errors"]),
                     "first_errors": r["errors"][:3],
                     "cell_p50": percentile(r["benign_cells"], 50),
                     "cell_p99": percentile(r["benign_cells"], 99),
                     "open_p50": percentile(r["resets"], 50),
                     "open_p99": percentile(r["resets"], 99),
                     "idle_mb": r["idle_memory_per_session"] / 2**20, "wall_s": r["wall_s"],
                     "left": r["leftovers"], "memory_left_mb": r["memory_left"] / 2**20,
                     "crossing": r["crossing_bytes"], "load": f"{before} -> {load()}",
                     "worker_cpu": own_cpu(pool) - cpu0}])
for name in sides:  # the first run of each side, for readers of the old output
    out[name] = next(r for got, r in out["each"] if got == name)
print(json.dumps(out))
""".replace("ORDER", repr(("alone", "mixed", "mixed", "alone")))
"""The density child: a warm-up burst (not counted), then the same cells alone and with a
tenth hostile in the order alone, mixed, mixed, alone, so that neither side always runs
first or last in a pool's life (a drift over the pool's life cancels out of the ratio)."""


def density_runs(
    n: int, rounds: int, base: str, only: tuple[str, ...] = ()
) -> list[tuple[str, dict[str, Any]]]:
    """The scale run (:func:`scale_run`, alone then with a tenth hostile) in fresh processes:
    today's code with its zygote, today's without it, and ``base``'s, alternating in that
    order ``rounds`` times (``only``: the sides to run, by label, "base" for ``base``'s).
    Each side's results with its label, in the order they ran."""
    from benchmarks.basecommit import ROOT

    shadow = base_tree(base)
    sides = [("zygote", "1", None), ("no zygote", "0", None)]
    if shadow is not None:
        sides.append((base, "1", shadow))
    if only:
        sides = [s for s in sides if s[0] in only or (s[0] == base and "base" in only)]
    out = []
    for _ in range(rounds):
        for label, zygote, path in sides:
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(p for p in (path, str(ROOT)) if p)
            done = subprocess.run([sys.executable, "-c", _DENSITY_CHILD, str(n), zygote],
                                  env=env, capture_output=True, text=True, check=True, cwd="/")  # fmt: skip
            out.append((label, json.loads(done.stdout.strip().splitlines()[-1])))
    return out


def _each_run(res: dict[str, Any]) -> list[list[Any]]:
    """A density child's runs in order, ``[side, figures]`` each (older output: one a side)."""
    return res.get("each") or [[name, res[name]] for name in ("alone", "mixed")]


def _alone_p99(each: list[list[Any]]) -> float:
    """The median benign p99 of a child's alone runs: what its rows' ratios are against."""
    return statistics.median(r["cell_p99"] for name, r in each if name == "alone")


def _density_ratios(runs: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Per code: median mixed p99 over median alone p99 (every run of every round), with
    the spread of the single pairs' ratios (each run against its own pool's alone median)."""
    out = []
    for label in dict.fromkeys(label for label, _ in runs):
        sides: dict[str, list[float]] = {"alone": [], "mixed": []}
        pairs = []
        for got, res in runs:
            if got != label:
                continue
            each = _each_run(res)
            for name, r in each:
                sides[name].append(r["cell_p99"])
            alone = _alone_p99(each)
            pairs += [r["cell_p99"] / alone for name, r in each if name == "mixed"]
        ratio = statistics.median(sides["mixed"]) / statistics.median(sides["alone"])
        out.append(
            f"{label} {ratio:.2f}x ({len(sides['mixed'])} mixed runs against "
            f"{len(sides['alone'])} alone; single runs {min(pairs):.2f}x-{max(pairs):.2f}x)"
        )
    return out


def density_section(
    n: int = 1024,
    rounds: int = 2,
    base: str = DENSITY_BASE,
    runs: list[tuple[str, dict[str, Any]]] | None = None,
    only: tuple[str, ...] = (),
) -> str:
    """Issue 34's density figures: opening ``n`` CodeMath sessions at once, idle memory per
    session, benign cell p99 with a tenth hostile against alone; old and new alternating
    (``runs``: results of :func:`density_runs` already measured)."""
    from benchmarks.timing import load

    runs = runs if runs is not None else density_runs(n, rounds, base, only)
    lines = [
        f"## Code sessions, issue 34: density ({n} CodeMath sessions, sessions forked from a "
        "quiet zygote)",
        "",
        "`python -m benchmarks.bench_sandbox_scale --density "
        f"{n}`. Each code's rows come from one fresh process with a 2-worker pool running "
        f"the scale run above, first once unmeasured (a fresh pool's first burst is slower), "
        f"then {n - n // 10} benign sessions alone (`alone`) and {n} with every tenth hostile "
        f"(`mixed`; {', '.join(HOSTILE)}) in the order alone, mixed, mixed, alone; a row's "
        "p99 / alone is against the median alone p99 of its own process. "
        f"`zygote`: today's code; `no zygote`: today's with "
        f"`SandboxConfig(zygote=False)` (sessions forked by the busy worker, as before); "
        f"`{base}`: the commit before, through `PYTHONPATH`. The sides alternate, "
        f"{rounds} rounds, in the order shown. Open = `env.reset()` (opens the session) while "
        f"all {n} open at once; idle memory = the workers' memory cgroups (processes, page "
        "tables, kernel memory, work dirs) once all are open, over the sessions; workers' own "
        "CPU = user + system time of the workers' own processes (event loop, zygote, remover, "
        "syscall guard) over the run, not their sessions'.",
        "",
        "| code | run | sessions (benign + hostile) | benign errors | open p50 s | open p99 s "
        "| idle MB / session | benign cell p50 ms | p99 ms | p99 / alone p99 | workers' own CPU s "
        "| load (1/5/15) before -> after |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for label, res in runs:
        each = _each_run(res)
        alone = _alone_p99(each)
        for name, r in each:
            lines.append(
                f"| {label} | {name} | {r['benign']} + {r['hostile']} | {r['errors']} | "
                f"{r['open_p50']:.2f} | {r['open_p99']:.2f} | {r['idle_mb']:.2f} | "
                f"{r['cell_p50'] * 1e3:.0f} | {r['cell_p99'] * 1e3:.0f} | "
                f"{r['cell_p99'] / alone:.2f} | {r.get('worker_cpu', float('nan')):.1f} | "
                f"{r['load']} |"
            )
    lines += [
        "",
        "Benign cell p99 with a tenth hostile / alone, ratio of the medians over "
        "every run of a side: " + "; ".join(_density_ratios(runs)) + ".",
    ]
    left = []
    for label, res in runs:
        r = res["mixed"]
        held = ", ".join(f"{k} {v}" for k, v in r["left"].items() if v) or "nothing"
        left.append(f"{label}: {held}, memory charge left {r['memory_left_mb']:.1f} MB")
    lines += ["", "Left after each mixed run (all should be 0): " + "; ".join(left) + "."]
    errors = [
        e for _, res in runs for name in ("alone", "mixed") for e in res[name]["first_errors"]
    ]
    if errors:
        lines += ["", "Benign errors, first ones: " + "; ".join(errors[:3])]
    lines += [
        "",
        f"Machine: 2 shared CPU cores, 24 GB, shared with other work ({load()} at the end).",
    ]
    return "\n".join(lines)


_OPENS_CHILD = """
import sys, threading, time
from concurrent.futures import ThreadPoolExecutor
from agentgym.simulators.sandbox import SandboxPool
n = int(sys.argv[1])
with SandboxPool(workers=1) as pool:
    gate = threading.Barrier(n)
    def go(i):
        gate.wait()
        t = time.monotonic()
        s = pool.session(timeout=30.0)
        return time.monotonic() - t, s
    with ThreadPoolExecutor(n) as ex:
        got = list(ex.map(go, range(n)))
    ts = sorted(t for t, _ in got)
    print(ts[n // 2], ts[int(n * 0.99)])
    for _, s in got:
        s.close()
"""


KIND_EVERY = {"oneshot": 50}
"""One session in this many plays a kind (default 10); a one-shot hog forks 30 spinning
interpreters, so a tenth of 1,024 sessions of it would ask for more memory than the host has."""


def kinds_section(n: int = 1024, kinds: list[str] | None = None) -> str:
    """Which hostile kinds slow benign cells: in one warm pool, the benign cells alone, then
    with every tenth session playing one kind only (ten times its share in the mixed run),
    alternating. Each kind's benign p99 against the median of all the alone runs."""
    import platform

    from agentgym.simulators.sandbox import SandboxConfig, SandboxPool
    from tqdm import tqdm

    from benchmarks.timing import load

    kinds = kinds or list(HOSTILE)
    started, load_before = time.perf_counter(), load()
    rows: list[tuple[str, dict[str, Any]]] = []
    with SandboxPool(workers=2, config=SandboxConfig(zygote=True)) as pool:
        scale_run(pool, sessions=n - n // 10, hostile=False)  # warm-up, not counted
        for kind in tqdm([None, *[side for k in kinds for side in (k, None)]], desc="bursts"):
            if kind is None:
                r = scale_run(pool, sessions=n - n // 10, hostile=False)
            else:
                r = scale_run(
                    pool, sessions=n, hostile_every=KIND_EVERY.get(kind, 10), kinds=[kind]
                )
            rows.append((kind or "alone", r))
    p99 = [percentile(r["benign_cells"], 99) for _, r in rows]
    alone_p99 = [p for (kind, _), p in zip(rows, p99, strict=True) if kind == "alone"]
    alone = statistics.median(alone_p99)
    lines = [
        f"### Benign cells next to one hostile kind at a time ({n} sessions)",
        "",
        "One warm pool (two workers, the zygote), a warm-up burst, then the benign cells alone "
        "and with one hostile kind, alternating (`alone`, kind, `alone`, kind, ...). In a kind's "
        f"run every tenth session plays that kind only (one-shot hogs: every {KIND_EVERY['oneshot']}th), "
        "ten times its share in the mixed runs above. p99 against the median of the "
        f"{len(alone_p99)} alone runs ({alone:.2f} s; they ranged {min(alone_p99):.2f}-"
        f"{max(alone_p99):.2f} s).",
        "",
        "| hostile kind | sessions (benign + hostile) | benign errors | benign cell p50 s | "
        "benign cell p99 s | p99 / alone median | run wall s |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for (kind, r), p in zip(rows, p99, strict=True):
        if kind != "alone":
            lines.append(
                f"| {kind} | {r['benign']} + {r['hostile']} | {len(r['errors'])} | "
                f"{percentile(r['benign_cells'], 50):.2f} | {p:.2f} | {p / alone:.2f}x | "
                f"{r['wall_s']:.0f} |"
            )
    lines += [
        "",
        f"_Measured {time.strftime('%Y-%m-%d')} on {platform.machine()}, "
        f"{os.cpu_count()} CPUs; took {time.perf_counter() - started:.0f} s; {load_before} at "
        f"the start, {load()} at the end._",
    ]
    return "\n".join(lines)


def open_burst(n: int = 500, rounds: int = 2, base: str = DENSITY_BASE) -> list[str]:
    """Opening alone (``--opens 500``): ``n`` sessions opened at once from ``n`` threads on
    a one-worker pool, in a fresh process per side, ``base``'s and today's alternating;
    one line per run: label, p50 and p99 seconds, load."""
    from benchmarks.basecommit import ROOT
    from benchmarks.timing import load

    shadow = base_tree(base)
    sides = [(base, shadow)] if shadow is not None else []
    out = []
    for _ in range(rounds):
        for label, path in [*sides, ("today", None)]:
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(p for p in (path, str(ROOT)) if p)
            done = subprocess.run([sys.executable, "-c", _OPENS_CHILD, str(n)], env=env,
                                  capture_output=True, text=True, check=True, cwd="/")  # fmt: skip
            p50, p99 = map(float, done.stdout.split()[-2:])
            out.append(f"{label}: open p50 {p50:.2f} s, p99 {p99:.2f} s ({load()})")
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
        "",
        round4_section(64 if quick else 256, quick),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """The command line: the whole benchmark, or one of its parts (see the module docstring)."""
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_sandbox_scale",
        description="Code sessions at RL scale; with no part named, all four parts.",
    )
    part = ap.add_mutually_exclusive_group()
    part.add_argument("--density", action="store_true", help="issue 34's density part alone")
    part.add_argument("--opens", action="store_true", help="opening many sessions at once")
    part.add_argument("--round4", action="store_true", help="issue 38's part alone")
    part.add_argument(
        "--kinds", action="store_true", help="benign cells next to one hostile kind at a time"
    )
    ap.add_argument("n", nargs="?", type=int, help="sessions (default 1024, 500, 256)")
    ap.add_argument("--base", default=DENSITY_BASE, help="commit to compare with")
    ap.add_argument("--quick", action="store_true", help="one round, smaller loads")
    ap.add_argument(
        "--only", default="", help="density sides, comma-separated: zygote, no zygote, base"
    )
    args = ap.parse_args(argv)
    if args.density:
        only = tuple(x for x in args.only.split(",") if x)
        print(density_section(args.n or 1024, 1 if args.quick else 2, args.base, only=only))
    elif args.opens:
        print("\n".join(open_burst(args.n or 500, base=args.base)))
    elif args.kinds:
        print(kinds_section(args.n or 1024))
    elif args.round4:
        print(round4_section(args.n or 256, quick=args.quick))
    else:
        print(run(quick=args.quick))


if __name__ == "__main__":
    main()
