"""Sandbox: one-shot latency and throughput, session cells, session fork, pool scaling,
an A/B of today's code against the pre-isolation commit 11f859c, and a hostile soak.

Baselines measured in the same run:
* a fresh ``python3 -I -S -c`` subprocess per snippet (no isolation at all), and the same
  with ``import numpy`` (the sandbox's zygote has numpy and sympy preloaded);
* plain in-process ``exec`` of a cell (no process boundary), for the session cell latency.
"""

from __future__ import annotations

import functools
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from agentgym.simulators.sandbox import Limits, SandboxPool, active_layers
from agentgym.simulators.sandbox.cgroups import live_cgroups

from benchmarks.basecommit import BASE_COMMIT, alternate
from benchmarks.cli import exit_on_help

_PY = os.path.join(
    sys.base_prefix, "bin", f"python{sys.version_info.major}.{sys.version_info.minor}"
)


def _lat(fn: Callable[[], object], n: int) -> tuple[float, float]:
    """p50 and p99 of ``fn`` in milliseconds over ``n`` calls (after 3 warm-up calls)."""
    for _ in range(3):
        fn()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    out.sort()
    return statistics.median(out), out[min(len(out) - 1, int(len(out) * 0.99))]


def _fresh(code: str) -> None:
    subprocess.run([_PY, "-I", "-S", "-c", code], check=True, capture_output=True)


def _pool_batch(pool: SandboxPool, k: int) -> None:
    for f in [pool.submit("x = 1") for _ in range(k)]:
        f.result()


def _fresh_batch(ex: ThreadPoolExecutor, k: int) -> None:
    list(ex.map(lambda _: _fresh("x = 1"), range(k)))


def _rate(submit_all: Callable[[int], object], n: int) -> float:
    t = time.perf_counter()
    submit_all(n)
    return n / (time.perf_counter() - t)


def _interleaved(
    a: Callable[[], object], b: Callable[[], object], n: int, every: int
) -> tuple[tuple[float, float], tuple[float, float]]:
    """p50/p99 (ms) of ``a`` over ``n`` calls and of ``b`` over every ``every``-th of them.

    The two are interleaved so that both see the same background load.
    """
    for f in (a, b, a):
        f()
    ta: list[float] = []
    tb: list[float] = []
    for i in range(n):
        t = time.perf_counter()
        a()
        ta.append((time.perf_counter() - t) * 1000)
        if i % every == 0:
            t = time.perf_counter()
            b()
            tb.append((time.perf_counter() - t) * 1000)

    def stats(xs: list[float]) -> tuple[float, float]:
        xs.sort()
        return statistics.median(xs), xs[min(len(xs) - 1, int(len(xs) * 0.99))]

    return stats(ta), stats(tb)


def _row(name: str, p: tuple[float, float], digits: int = 2) -> tuple[str, str, str, str]:
    return (name, f"{p[0]:.{digits}f}", f"{p[1]:.{digits}f}", f"{1000 / p[0]:.0f}")


def run(quick: bool = False, *, soak_run: bool = True) -> str:
    """All sections; ``soak_run=False`` leaves out the hostile soak (several minutes)."""
    n = 60 if quick else 300
    load_before = os.getloadavg()[0]
    rows: list[tuple[str, str, str, str]] = []
    site = _site()
    with SandboxPool(workers=1) as pool:
        sb, base = _interleaved(
            lambda: pool.run("x = sum(range(100))"), lambda: _fresh("x = sum(range(100))"), n, 3
        )
        rows.append(_row("one-shot run, sandbox (all layers, 1 worker)", sb))
        rows.append(_row("baseline: fresh `python3 -I -S -c`", base))
        sbn, basen = _interleaved(
            lambda: pool.run("import numpy; x = numpy.arange(100).sum()"),
            lambda: _fresh(f"import sys; sys.path.append({site!r}); import numpy"),
            n,
            10,
        )
        rows.append(_row("one-shot run + numpy, sandbox", sbn))
        rows.append(_row("baseline: fresh `python3 -I -S -c` + numpy", basen))

        with pool.session() as s:
            s.run("x = 0")
            g: dict[str, int] = {"x": 0}
            code = compile("x += 1", "<cell>", "exec")
            cell, inproc = _interleaved(lambda: s.run("x += 1"), lambda: exec(code, g), n * 3, 1)
            rows.append(_row("session cell `x += 1`", cell, 3))
            rows.append(("baseline: in-process `exec` (no isolation)", f"{inproc[0]:.4f}",
                         f"{inproc[1]:.4f}", "-"))  # fmt: skip
            s.run("import numpy as np\nbig = np.zeros(10_000_000)")  # 80 MB of state

            def fork_close() -> None:
                s.fork().close()

            f50, f99 = _lat(fork_close, n // 5)
            rows.append(_row("session fork + close (80 MB of state)", (f50, f99)))

    scale: list[tuple[str, str, str]] = []
    m = 100 if quick else 400
    pools = {w: SandboxPool(workers=w) for w in (1, 2, 4)}
    try:
        for p in pools.values():
            p.run_many(["pass"] * 8)
        best: dict[str, float] = {}
        for _ in range(2):  # two rounds, setups alternating, best of the two kept
            for w, p in pools.items():
                rate = _rate(functools.partial(_pool_batch, p), m)
                key = f"sandbox pool, {w} worker{'s' if w > 1 else ''}"
                best[key] = max(best.get(key, 0.0), rate)
                if w <= 2:
                    with ThreadPoolExecutor(w) as ex:
                        rate = _rate(functools.partial(_fresh_batch, ex), m // 4)
                    key = f"baseline: fresh `python3 -I -S -c`, {w} at a time"
                    best[key] = max(best.get(key, 0.0), rate)
    finally:
        for p in pools.values():
            p.close()
    scale = [(k, f"{v:.0f}", "") for k, v in best.items()]

    layers = ", ".join(active_layers())
    load = f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    lines = [
        "## Sandbox: jailed Python runs, sessions and forks",
        "",
        "Machine: 2-core CPU VM (Debian 12, root, no Docker), no GPU. **The two cores were shared "
        "with other jobs running at the same time**, so absolute figures are noisy; the baseline "
        "rows were measured in the same run, interleaved call by call with the sandbox rows so "
        f"that both see the same load (1-minute load average: {load}).",
        f"Active isolation layers: {layers}.",
        "",
        "Baseline: a fresh `python3 -I -S -c` subprocess per snippet, with no isolation at "
        "all (the cheapest way to get a new process), plus in-process `exec` for cells.",
        "",
        "| operation | p50 ms | p99 ms | per second (1/p50) |",
        "|---|---:|---:|---:|",
        *[f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows],
        "",
        f"Throughput ({m} one-shot runs of `x = 1` submitted at once, {m // 4} for the "
        "baseline; setups alternate over two rounds and the better round is kept):",
        "",
        "| setup | runs/s |",
        "|---|---:|",
        *[f"| {a} | {b} |" for a, b, _ in scale],
        "",
        "A one-shot run forks the warm zygote (numpy and sympy already imported), confines the "
        "child (own uid, rlimits, Landlock, inherited seccomp; inside bubblewrap namespaces and "
        "the worker's cgroups), runs the code, and cleans up its uid and work directory. A "
        "session fork is the session process forking itself, copy-on-write, and then copying "
        "the work dir into the copy's own directory.",
        "",
        *_ab_section(quick),
        "",
        *(_soak_section(quick) if soak_run else []),
    ]
    return "\n".join(lines) + "\n"


# ---- hostile soak -----------------------------------------------------------------------

#: Hostile cells mixed into the soak, with what each tries.
HOSTILE: dict[str, str] = {
    "background_process": "import subprocess, sys\n"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])",
    "busy_child": "import os\nif os.fork() == 0:\n    while True:\n        pass",
    "thread": "import threading, time\nthreading.Thread(target=time.sleep, args=(60,)).start()",
    "control_junk": "import os\nos.write(3, b'\\x00\\x00\\x10\\x00x')",
    "forged_fork": "import __main__\n__main__._session_fork = lambda ctl, *a: ctl",
    "disk": "open('big', 'wb').write(b'x' * (24 << 20))",
    "memory": "b = bytearray(2 << 30)",
    "timeout": "while True:\n    pass",
    "exit": "import os\nos._exit(3)",
    "kill_parent": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)",
    "kill_all": "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass",
}


def _read_others(paths: list[str]) -> str:
    return (
        "import glob\nfound = []\n"
        f"for p in {paths!r} + glob.glob('/tmp/*/*/*/secret.txt') + glob.glob('/tmp/*/*/secret.txt'):\n"
        "    try:\n        found.append(open(p).read())\n    except OSError:\n        pass\n"
        "print(found)"
    )


def _pool_uids(pool: SandboxPool) -> list[int]:
    ranges = [(w.uid_base, w.uid_base + w.n_uids) for w in pool.workers]
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                uid = os.stat(f"/proc/{name}").st_uid
            except OSError:
                continue
            if any(lo <= uid < hi for lo, hi in ranges):
                out.append(int(name))
    return out


def _settled_pings(pool: SandboxPool, children_before: int, timeout_s: float = 60.0) -> list:
    """The workers' pings once nothing is still being released: processes that were killed
    go once the kernel schedules them, which on a busy host can take seconds. A process
    that outlives ``timeout_s`` is reported as left behind."""
    deadline = time.monotonic() + timeout_s
    while True:
        pings = [w.call({"op": "ping"}, 10.0) for w in pool.workers]
        settled = not any(p.get("reaping") for p in pings)
        if settled and sum(p["children"] for p in pings) <= children_before:
            return pings
        if time.monotonic() > deadline:
            return pings
        time.sleep(0.1)


def soak(
    pool: SandboxPool, *, sessions: int, execs: int, seed: int = 0, threads: int = 16
) -> dict[str, Any]:
    """``execs`` calls over ``sessions`` concurrent sessions (cells, one-shot runs, forks and
    hostile cells) from ``threads`` threads; returns counts and what was left behind.

    Every session keeps a secret in a variable and a file; any output holding another
    session's secret counts as a cross-session read.
    """
    rng = random.Random(seed)
    kinds = ["cell"] * 60 + ["oneshot"] * 15 + ["fork"] * 5 + ["read_others"] * 10
    kinds += ["hostile"] * 10
    secrets = [f"SECRET-{seed}-{i}-{rng.getrandbits(48):x}" for i in range(sessions)]
    for w in pool.workers:
        w.call({"op": "ping"}, 10.0)
    generations = sum(w.generation for w in pool.workers)
    before = {"cgroups": live_cgroups(os.getpid()), "ping": [w.call({"op": "ping"}, 10.0)
              for w in pool.workers]}  # fmt: skip
    limits = Limits(timeout=1.0, memory=256 << 20, disk=64 << 20)
    opened = [pool.session(limits=limits) for _ in range(sessions)]
    paths: list[str] = []
    setup = "import os\nsecret = {!r}\nopen('secret.txt', 'w').write(secret)\nos.path.abspath('secret.txt')"
    for i, s in enumerate(opened):
        paths.append(s.run(setup.format(secrets[i])).stdout.strip().strip("'"))
    counts: dict[str, int] = {}
    leaks: list[str] = []
    plan = [(rng.randrange(sessions), rng.choice(kinds), rng.choice(sorted(HOSTILE)))
            for _ in range(execs)]  # fmt: skip

    def check(i: int, text: str, what: str) -> None:
        for j, sec in enumerate(secrets):
            if j != i and sec in text:
                leaks.append(f"session {i} read session {j}'s secret via {what}")

    def drive(part: int) -> None:
        for i, kind, hostile in plan:
            if i % threads != part:  # a session is driven by one thread only
                continue
            s = opened[i]
            if kind == "cell":
                r = s.run("secret[:7]")
            elif kind == "oneshot":
                r = pool.run(_read_others(paths[:8]))
            elif kind == "fork":
                f = s.fork()
                r = f.run("secret")
                f.close()
            elif kind == "read_others":
                r = s.run(_read_others(paths))
            else:
                kind = "hostile:" + hostile
                r = s.run(HOSTILE[hostile])
            check(i, r.stdout + r.stderr, kind)
            key = f"{kind}:{r.status}"
            counts[key] = counts.get(key, 0) + 1

    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as ex:
        list(ex.map(drive, range(threads)))
    elapsed = time.perf_counter() - start
    for s in opened:
        s.close()
    after_ping = _settled_pings(pool, sum(p["children"] for p in before["ping"]))
    left = {
        "processes": len(_pool_uids(pool)),
        "work_dirs": sum(p["workdirs"] for p in after_ping),
        "sessions": sum(p["sessions"] for p in after_ping),
        "session_cgroups": sum(p["cgroups"] for p in after_ping)
        - sum(p["cgroups"] for p in before["ping"]),
        "host_cgroups": len(set(live_cgroups(os.getpid())) ^ set(before["cgroups"])),
        "jail_processes": sum(p["children"] for p in after_ping)
        - sum(p["children"] for p in before["ping"]),
    }
    return {"execs": sum(counts.values()), "elapsed": elapsed, "counts": counts,
            "leaks": leaks, "left": left,
            "restarts": sum(w.generation for w in pool.workers) - generations}  # fmt: skip


def _soak_section(quick: bool) -> list[str]:
    sessions, execs = (32, 1000) if quick else (128, 10_000)
    load = os.getloadavg()[0]
    with SandboxPool(workers=2) as pool:
        res = soak(pool, sessions=sessions, execs=execs)
    hostile = sum(v for k, v in res["counts"].items() if k.startswith("hostile"))
    left = res["left"]
    return [
        "### Hostile soak",
        "",
        f"{res['execs']} calls over {sessions} concurrent sessions on a 2-worker pool from 16 "
        f"threads: cells, one-shot runs, forks, reads of every other session's secret file and "
        f"{hostile} hostile cells ({', '.join(sorted(HOSTILE))}); {res['elapsed']:.0f} s "
        f"(1-minute load {load:.1f} before, {os.getloadavg()[0]:.1f} after; it competed for "
        "the 2 cores with other engineers' work).",
        "",
        "| left behind after closing every session | count |",
        "|---|---:|",
        f"| processes of the pool's uids | {left['processes']} |",
        f"| processes in the jails (vs before) | {left['jail_processes']} |",
        f"| work dirs | {left['work_dirs']} |",
        f"| sessions | {left['sessions']} |",
        f"| per-session cgroups (vs before) | {left['session_cgroups']} |",
        f"| host cgroups (vs before) | {left['host_cgroups']} |",
        f"| reads of another session's secret | {len(res['leaks'])} |",
        f"| worker restarts | {res['restarts']} |",
        "",
        "Outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(res["counts"].items())) + ".",
        "",
        "How to read the outcomes: `dead` marks a call on a session that an earlier hostile cell"
        " ended (exit, thread, quota); `error` cells are mostly reads of state that a rebuild lost"
        " (`NameError` after a replay that could not fit the soak's 1 s limit) or cells refused"
        " for their quota; `timeout` is a cell stopped at its limit. None of them leaves anything"
        " behind (table above).",
    ]


# ---- A/B against the code before the isolation work (commit 11f859c) ---------------------

_AB_CHILD = """
import json, subprocess, sys, time, statistics
from agentgym.simulators.sandbox import SandboxPool
py, n = sys.argv[1], int(sys.argv[2])
out = {"oneshot": [], "cell": [], "fresh": []}
with SandboxPool(workers=1) as pool:
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
            if i % 3 == 0:
                t = time.perf_counter()
                subprocess.run([py, "-I", "-S", "-c", "x = sum(range(100))"], check=True)
                out["fresh"].append((time.perf_counter() - t) * 1000)
print(json.dumps({k: statistics.median(v) for k, v in out.items()}))
"""


def _ab_rows(runs: dict[str, list[dict]], base: str) -> list[str]:
    """The table of :data:`_AB_CHILD`'s figures, today's against ``base``'s."""
    rows = [f"| operation | now | {base} | now / before (medians) |", "|---|---:|---:|---:|"]
    for key, label in (("oneshot", "one-shot run `x = sum(range(100))`"),
                       ("cell", "session cell `x += 1`"),
                       ("fresh", "baseline: fresh `python3 -I -S -c`")):  # fmt: skip
        new = [r[key] for r in runs["new"]]
        old = [r[key] for r in runs["old"]]
        ratio = statistics.median(new) / statistics.median(old)
        rows.append(f"| {label} | {min(new):.3f} / {statistics.median(new):.3f} | "
                    f"{min(old):.3f} / {statistics.median(old):.3f} | {ratio:.2f} |")  # fmt: skip
    return rows


def _ab_method(runs: dict[str, list[dict]], base: str, n: int) -> str:
    return (
        f"Today's code against commit {base}, each in its own process with a 1-worker pool, "
        f"alternating new/old {len(runs['new'])} times (ABAB); each round takes the median of "
        f"{n} one-shot runs, {3 * n} session cells and {n // 3 + 1} fresh interpreters, "
        "interleaved call by call. Cells: min / median over rounds of the per-round median, ms."
    )


def _ab_section(quick: bool) -> list[str]:
    n = 40 if quick else 150
    runs = alternate(_AB_CHILD, [_PY, str(n)], 2 if quick else 3)
    if runs is None:
        return [
            f"### Before/after ({BASE_COMMIT})",
            "",
            f"Skipped: git could not give {BASE_COMMIT}'s tree.",
        ]
    return [
        "### Before/after the isolation work (issue 13)",
        "",
        _ab_method(runs, BASE_COMMIT, n),
        "",
        *_ab_rows(runs, BASE_COMMIT),
    ]


def against_section(base: str, rounds: int = 6, n: int = 150) -> str:
    """One-shot run and session cell latency, today's code against ``base``'s (``python -m
    benchmarks.bench_sandbox --against COMMIT``): what a change to the run path costs."""
    from benchmarks.timing import load

    started, before = time.perf_counter(), load()
    runs = alternate(_AB_CHILD, [_PY, str(n)], rounds, commit=base)
    if runs is None:
        return f"Skipped: git could not give {base}'s tree."
    return "\n".join([
        f"### One-shot runs and session cells against {base}",
        "",
        _ab_method(runs, base, n),
        "",
        *_ab_rows(runs, base),
        "",
        f"_Measured {time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs; took "
        f"{time.perf_counter() - started:.0f}"
        f" s; {before} at the start, {load()} at the end._",
    ])  # fmt: skip


def _site() -> str:
    import numpy

    return os.path.dirname(os.path.dirname(numpy.__file__))


if __name__ == "__main__":
    exit_on_help(__doc__, "python -m benchmarks.bench_sandbox [--against COMMIT]")
    if sys.argv[1:2] == ["--against"] and len(sys.argv) == 3:
        print(against_section(sys.argv[2]))
    else:
        print(run(quick=True))
