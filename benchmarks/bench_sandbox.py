"""Sandbox: one-shot latency and throughput, session cells, session fork, pool scaling.

Baselines measured in the same run:
* a fresh ``python3 -I -S -c`` subprocess per snippet (no isolation at all), and the same
  with ``import numpy`` (the sandbox's zygote has numpy and sympy preloaded);
* plain in-process ``exec`` of a cell (no process boundary), for the session cell latency.
"""

from __future__ import annotations

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


def _rate(submit_all: Callable[[int], object], n: int) -> float:
    t = time.perf_counter()
    submit_all(n)
    return n / (time.perf_counter() - t)


def run(quick: bool = False) -> str:
    n = 60 if quick else 300
    load_before = os.getloadavg()[0]
    rows: list[tuple[str, str, str, str]] = []
    with SandboxPool(workers=1) as pool:
        p50, p99 = _lat(lambda: pool.run("x = sum(range(100))"), n)
        rows.append(
            (
                "one-shot run, sandbox (all layers, 1 worker)",
                f"{p50:.2f}",
                f"{p99:.2f}",
                f"{1000 / p50:.0f}",
            )
        )
        p50n, p99n = _lat(lambda: pool.run("import numpy; x = numpy.arange(100).sum()"), n)
        rows.append(
            ("one-shot run + numpy, sandbox", f"{p50n:.2f}", f"{p99n:.2f}", f"{1000 / p50n:.0f}")
        )
        b50, b99 = _lat(lambda: _fresh("x = sum(range(100))"), n // 3)
        rows.append(
            ("baseline: fresh `python3 -I -S -c`", f"{b50:.2f}", f"{b99:.2f}", f"{1000 / b50:.0f}")
        )
        bn50, bn99 = _lat(
            lambda: _fresh(f"import sys; sys.path.append({_site()!r}); import numpy"),
            n // 6,
        )
        rows.append(
            (
                "baseline: fresh `python3 -I -S -c` + numpy",
                f"{bn50:.2f}",
                f"{bn99:.2f}",
                f"{1000 / bn50:.0f}",
            )
        )

        with pool.session() as s:
            s.run("x = 0")
            c50, c99 = _lat(lambda: s.run("x += 1"), n * 3)
            rows.append(("session cell `x += 1`", f"{c50:.3f}", f"{c99:.3f}", f"{1000 / c50:.0f}"))
            g: dict[str, int] = {"x": 0}
            code = compile("x += 1", "<cell>", "exec")
            e50, e99 = _lat(lambda: exec(code, g), n * 3)
            rows.append(
                ("baseline: in-process `exec` (no isolation)", f"{e50:.4f}", f"{e99:.4f}", "-")
            )
            s.run("import numpy as np\nbig = np.zeros(10_000_000)")  # 80 MB of state

            def fork_close() -> None:
                s.fork().close()

            f50, f99 = _lat(fork_close, n // 5)
            rows.append(
                (
                    "session fork + close (80 MB of state)",
                    f"{f50:.2f}",
                    f"{f99:.2f}",
                    f"{1000 / f50:.0f}",
                )
            )

    scale: list[tuple[str, str, str]] = []
    m = 100 if quick else 400
    for workers in (1, 2, 4):
        with SandboxPool(workers=workers) as pool:
            pool.run_many(["pass"] * (4 * workers))
            rate = _rate(
                lambda k: [f.result() for f in [pool.submit("x = 1") for _ in range(k)]] and None, m
            )
        scale.append(
            (f"sandbox pool, {workers} worker{'s' if workers > 1 else ''}", f"{rate:.0f}", "")
        )
    for threads in (1, 2):
        with ThreadPoolExecutor(threads) as ex:
            rate = _rate(
                lambda k: list(ex.map(lambda _: _fresh("x = 1"), range(k))) and None, m // 4
            )
        scale.append(
            (f"baseline: fresh `python3 -I -S -c`, {threads} at a time", f"{rate:.0f}", "")
        )

    layers = ", ".join(active_layers())
    load = f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    lines = [
        "## Sandbox: jailed Python runs, sessions and forks",
        "",
        "Machine: 2-core CPU VM (Debian 12, root, no Docker), no GPU. **The two cores were shared "
        "with other jobs running at the same time**, so absolute figures are noisy; the baseline "
        f"rows were measured in the same run under the same load (1-minute load average: {load}).",
        f"Active isolation layers: {layers}.",
        "",
        "Baseline: a fresh `python3 -I -S -c` subprocess per snippet, with no isolation at "
        "all (the cheapest way to get a new process), plus in-process `exec` for cells.",
        "",
        "| operation | p50 ms | p99 ms | per second (1/p50) |",
        "|---|---:|---:|---:|",
        *[f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows],
        "",
        f"Throughput ({m} one-shot runs of `x = 1`, submitted at once):",
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
