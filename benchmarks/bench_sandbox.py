"""Sandbox: one-shot latency and throughput, session cells, session fork, pool scaling.

Baselines measured in the same run:
* a fresh ``python3 -I -S -c`` subprocess per snippet (no isolation at all), and the same
  with ``import numpy`` (the sandbox's zygote has numpy and sympy preloaded);
* plain in-process ``exec`` of a cell (no process boundary), for the session cell latency.
"""

from __future__ import annotations

import functools
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from agentgym.simulators.sandbox import SandboxPool, active_layers

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


def run(quick: bool = False) -> str:
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
        "session fork is the session process forking itself, copy-on-write.",
    ]
    return "\n".join(lines) + "\n"


def _site() -> str:
    import numpy

    return os.path.dirname(os.path.dirname(numpy.__file__))


if __name__ == "__main__":
    print(run(quick=True))
