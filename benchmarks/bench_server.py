"""``agentgym serve`` under load: do a few slow clients hold up everyone else?

Issue 15 (V6): two clients whose CodeMath cells only sleep took benign CodeMath steps from
p99 295 ms to 27-60 s. Here 64 WebSocket clients play 4 envs at once (Sokoban-Tiny,
CodeMath-L1, WebShopText, UserTwentyQuestions; one server per env, all four in one server
process on 127.0.0.1, the clients in this process). Two workloads:

* ``unloaded``: the 60 benign clients alone;
* ``loaded``: the same 60 plus 4 deliberately slow clients: two CodeMath clients whose cells
  only sleep, two Sokoban clients whose steps block inside the env (a wrapper sleeps on the
  action ``SLEEP <s>``, like an env waiting on I/O);
* ``sokoban8``: the 60 plus 8 slow Sokoban clients (20 steps each), more slow calls on one
  server than the old server's thread pool (asyncio's default, ``min(32, cpus + 4)``) holds.

Both run against the current server and against the server of commit 11f859c (its
``agentgym/server`` files, taken with ``git show``, over the same envs), interleaved
(each workload on the old server, then on the current one; then all again). Figures are client-side
round-trip times of benign steps, after one unmeasured warm-up phase per server (sandbox
workers start, first envs built).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.basecommit import BASE_COMMIT
from benchmarks.cli import exit_on_help

ENVS = (
    "agentgym/Sokoban-Tiny-v0",
    "agentgym/CodeMath-L1-v0",
    "agentgym/WebShopText-v0",
    "agentgym/UserTwentyQuestions-v0",
)
CLIENTS = 64
SLOW_S = 0.5
SOKOBAN8_STEPS = 20
WORKLOADS = ("unloaded", "loaded", "sokoban8")
ROOT = Path(__file__).resolve().parent.parent
SERVER_FILES = ("__init__.py", "app.py", "runner.py", "sessions.py")


# ---- the server process ----------------------------------------------------------------------


def _use_old_server(commit: str) -> None:
    """Import ``agentgym.server`` from ``commit``'s files (everything else stays current)."""
    old = Path(tempfile.mkdtemp(prefix="agentgym-old-server-"))
    for name in SERVER_FILES:
        src = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{commit}:agentgym/server/{name}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        (old / name).write_text(src)
    spec = importlib.util.spec_from_file_location(
        "agentgym.server", old / "__init__.py", submodule_search_locations=[str(old)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["agentgym.server"] = module
    spec.loader.exec_module(module)


def _serve(impl: str) -> None:
    """Serve every env of ENVS on its own port; print the URLs; run until stdin closes."""
    import gymnasium as gym

    import agentgym  # noqa: F401

    if impl == "old":
        _use_old_server(BASE_COMMIT)
    from agentgym.integrations.session import TextSession
    from agentgym.server import ServerLimits, ServerThread, create_app

    class SleepOnRequest(gym.Wrapper):
        """The env's step sleeps on the action ``SLEEP <s>`` (an env waiting on I/O)."""

        def step(self, action: Any) -> Any:
            if isinstance(action, str) and action.startswith("SLEEP "):
                time.sleep(float(action.split()[1]))
            return self.env.step(action)

    def factory_for(env_id: str) -> Any:
        return lambda: TextSession(SleepOnRequest(gym.make(env_id)))

    limits = ServerLimits(max_sessions=CLIENTS)
    with contextlib.ExitStack() as stack:
        urls = {
            e: stack.enter_context(
                ServerThread(create_app(e, limits=limits, session_factory=factory_for(e)))
            ).url
            for e in ENVS
        }
        print(json.dumps(urls), flush=True)
        sys.stdin.read()


# ---- the client side -------------------------------------------------------------------------


def _start(impl: str) -> tuple[subprocess.Popen, dict[str, str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.bench_server", "--serve", impl],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.kill()
        raise RuntimeError(f"the {impl} server process did not start")
    return proc, json.loads(line)


def _plans(urls: dict[str, str], steps: int, workload: str) -> list[Any]:
    from benchmarks.serve_clients import ClientPlan, sleeping_cell

    plans = []
    for i in range(CLIENTS):
        env = ENVS[i % len(ENVS)]
        slow = None
        if i in (1, 5):
            slow = sleeping_cell(SLOW_S)
        elif i in (0, 4):
            slow = f"SLEEP {SLOW_S}"
        if slow is not None and workload != "loaded":
            continue
        plans.append(ClientPlan(urls[env], steps=steps, seed=i, slow_action=slow, label=env))
    if workload == "sokoban8":  # more slow calls on one server than asyncio's default pool
        sokoban = ENVS[0]
        plans += [
            ClientPlan(
                urls[sokoban], steps=SOKOBAN8_STEPS, seed=900 + i, slow_action=f"SLEEP {SLOW_S}"
            )
            for i in range(8)
        ]
    return plans


def _phase(urls: dict[str, str], steps: int, workload: str) -> dict[str, Any]:
    from benchmarks.serve_clients import run_clients

    start = time.perf_counter()
    stats = asyncio.run(run_clients(_plans(urls, steps, workload)))
    benign = [s for s in stats if s.plan.slow_action is None]
    return {
        "wall_s": time.perf_counter() - start,
        "errors": sum(len(s.errors) for s in stats),
        "error_examples": [e for s in stats for e in s.errors][:2],
        "steps": {e: [t for s in benign if s.plan.label == e for t in s.step_s] for e in ENVS},
        "queue_ms": [q for s in benign for q in s.queue_ms],
        "load": os.getloadavg()[0],
    }


def _ms(x: float) -> str:
    return f"{x * 1e3:,.1f}" if x == x else "-"


def run(quick: bool = False) -> str:
    from benchmarks.serve_clients import percentile
    from benchmarks.timing import load

    steps, rounds = (20, 1) if quick else (50, 2)
    servers = {impl: _start(impl) for impl in ("old", "new")}
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    try:
        for impl in ("old", "new"):  # warm-up, not measured: sandbox workers, first imports
            _phase(servers[impl][1], 3, "unloaded")
        for _ in range(rounds):
            for workload in WORKLOADS:
                for impl in ("old", "new"):
                    out = _phase(servers[impl][1], steps, workload)
                    results.setdefault((impl, workload), []).append(out)
    finally:
        for proc, _ in servers.values():
            with contextlib.suppress(Exception):
                proc.stdin.close()  # type: ignore[union-attr]
                proc.wait(timeout=60)
            if proc.poll() is None:
                proc.kill()

    def p99s(impl: str, workload: str, env: str) -> list[float]:
        return [percentile(r["steps"][env], 99) for r in results[(impl, workload)]]

    lines = [
        "## Env server under load: slow clients vs everyone else",
        "",
        f"{CLIENTS} concurrent WebSocket clients x {steps} steps on 127.0.0.1, 16 per env "
        f"({', '.join(e.split('/')[1] for e in ENVS)}; one server per env, the four in one "
        "server process, the clients in another). `loaded` adds 4 slow clients to the 60 "
        f"benign ones: 2 CodeMath clients whose cells only sleep ({SLOW_S} s) and 2 Sokoban "
        f"clients whose env step sleeps {SLOW_S} s. `sokoban8` adds instead 8 slow Sokoban "
        f"clients ({SOKOBAN8_STEPS} steps each): more slow calls on one server than the old "
        "server's thread pool (asyncio's default, min(32, cpus + 4) = 6 threads here) holds. "
        f"Baseline: the server of commit {BASE_COMMIT} (before issue 15) over the same envs, "
        f"in its own process, run interleaved with the current one ({rounds} round(s); each "
        "workload on the old server, then on the current one). Figures: benign steps' client "
        "round trip in ms, p50 and p99 per env (min and median of the per-round p99 when "
        "there are several rounds); the last column divides median p99s.",
        "",
        "| server | workload | env | p50 ms | p99 ms (min / median) | p99 / unloaded p99 |",
        "|---|---|---|---|---|---|",
    ]
    for impl in ("old", "new"):
        for workload in WORKLOADS:
            for env in ENVS:
                allsteps = [t for r in results[(impl, workload)] for t in r["steps"][env]]
                p = sorted(p99s(impl, workload, env))
                ratio = "-"
                if workload != "unloaded":
                    base = sorted(p99s(impl, "unloaded", env))
                    ratio = f"{p[len(p) // 2] / base[len(base) // 2]:.1f}x"
                lines.append(
                    f"| {'current' if impl == 'new' else BASE_COMMIT} | {workload} | "
                    f"{env.split('/')[1]} | {_ms(percentile(allsteps, 50))} | "
                    f"{_ms(p[0])} / {_ms(p[len(p) // 2])} | {ratio} |"
                )
    lines += [
        "",
        "| server | workload | errors | wall s (per round) | 1-min load |",
        "|---|---|---|---|---|",
    ]
    for (impl, workload), rs in results.items():
        errs = sum(r["errors"] for r in rs)
        ex = (
            f" (e.g. {rs[0]['error_examples'][0][:80]})" if errs and rs[0]["error_examples"] else ""
        )
        lines.append(
            f"| {'current' if impl == 'new' else BASE_COMMIT} | {workload} | {errs}{ex} | "
            f"{', '.join(format(r['wall_s'], '.1f') for r in rs)} | "
            f"{', '.join(format(r['load'], '.1f') for r in rs)} |"
        )
    q = [x for r in results[("new", "loaded")] for x in r["queue_ms"]]
    lines += [
        "",
        f"Current server, loaded: benign steps waited for a worker thread p50 "
        f"{percentile(q, 50):.3f} ms, p99 {percentile(q, 99):.3f} ms (the `timing.queue_ms` "
        "each reply carries).",
        "",
        "How to read it: slow clients hurt others through what they share. Env calls of "
        "different sessions share the server's worker threads: the old server ran them on "
        "asyncio's default pool, so slow calls beyond its size made every session of that "
        "server wait (`sokoban8`); the current one gives each session a thread and reports "
        "any wait in `timing.queue_ms`. CodeMath sessions also share the process's sandbox "
        "pool, whose workers run one cell at a time: a cell that sleeps delays the benign "
        "CodeMath sessions on the same sandbox worker under either server (a sandbox matter, "
        "simulators/sandbox, not the server's).",
        "",
        f"Machine: 2 shared CPU cores, shared with seven other engineers' work while measured "
        f"({load()} at the end): absolute figures are noisy; compare rows of one run.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    exit_on_help(__doc__, "python -m benchmarks.bench_server [--quick]")
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        _serve(sys.argv[2])
    else:
        print(run(quick="--quick" in sys.argv))
