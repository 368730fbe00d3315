"""``agentgym serve`` at RL scale (issue 22): thousands of WebSocket sessions in one process.

Scale rows: ONE server process serves three envs (Sokoban-Tiny, WebTodoText and
UserTwentyQuestions, one port each, one event loop), each started with ``max_sessions`` =
clients + 16. Clients run in ``CLIENT_PROCS`` other processes, many asyncio clients each,
with the harness of :mod:`benchmarks.serve_clients` (connect, reset, ``STEPS`` steps of a fixed
cheap policy, resetting when an episode ends, close); half the clients play Sokoban-Tiny and
a quarter each play the other two. The same harness drives today's server and the server of
commit ``BASE`` (its ``agentgym`` on ``PYTHONPATH``, see :mod:`benchmarks.basecommit`),
interleaved in one run (at 1,024 clients ``ROUNDS_AT_1024`` rounds, the order alternating;
at 4,096 one). Every client connects and resets, then waits until every session is
open (the server's ``/health`` then counts them), then all step at once. Reported: sessions
open at once and the seconds to open them, errors (refusals included), aggregate
Sokoban-Tiny steps/s (its steps from the common start until its last client finished),
p50/p99 client round trip of every step, and the server's peak RSS growth over its
warmed-up size, per session.

Half-open rows: ``agentgym serve`` under ``ulimit -n 1024`` while one client holds 1,100 TCP
connections that never send a byte; then another client's ``/health`` latency and the bytes
the server logged in the 10 s after the connections opened.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.cli import exit_on_help

BASE = "582008d"
ENVS = {
    "sokoban": "agentgym/Sokoban-Tiny-v0",
    "todo": "agentgym/WebTodoText-v0",
    "twenty": "agentgym/UserTwentyQuestions-v0",
}
MIX = ("sokoban", "sokoban", "todo", "twenty")  # client i plays MIX[i % 4]
CLIENT_PROCS = int(os.environ.get("AGENTGYM_BENCH_CLIENT_PROCS", "4"))
STEPS = 20
ROUNDS_AT_1024 = 3  # the 4,096 rows take minutes each: one round
HALF_OPEN, HALF_OPEN_FDS, HALF_OPEN_WATCH_S = 1100, 1024, 10.0
ROOT = Path(__file__).resolve().parent.parent


# ---- processes ---------------------------------------------------------------------------------


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _python(code: str, tree: str | None, **kw: Any) -> subprocess.Popen:
    """``python -c code`` from a scratch directory, importing agentgym from ``tree``
    (None: today's) and ``benchmarks`` from this checkout."""
    path = os.pathsep.join(p for p in (tree, str(ROOT)) if p)
    env = {**os.environ, "PYTHONPATH": path}
    return subprocess.Popen([sys.executable, "-c", code], env=env, cwd=tempfile.gettempdir(), **kw)


def _loop_factory() -> Any:
    """The event loop ``uvicorn.Server.run`` would pick (``loop="auto"``: uvloop when it is
    installed), used by the server processes of both trees and by the client processes."""
    import uvicorn

    return uvicorn.Config(app=None).get_loop_factory()


def serve_mix(ports: list[int], max_sessions: int) -> None:
    """Server process: every env of ENVS on its port, one event loop, until killed."""
    import uvicorn

    from agentgym.server import ServerLimits, create_app, runner

    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    async def main() -> None:
        servers = []
        for env_id, port in zip(ENVS.values(), ports, strict=True):
            app = create_app(env_id, limits=ServerLimits(max_sessions=max_sessions))
            if hasattr(runner, "_server"):  # today's: admission control included
                srv = runner._server(app, "127.0.0.1", port, 1 << 20, None, 60.0)
            else:  # BASE's runner
                srv = uvicorn.Server(runner._config(app, "127.0.0.1", port, 1 << 20))
            srv.install_signal_handlers = lambda: None  # type: ignore[method-assign]
            servers.append(srv)
        await asyncio.gather(*(s.serve() for s in servers))

    with asyncio.Runner(loop_factory=_loop_factory()) as loop_runner:
        loop_runner.run(main())


def play(spec_json: str) -> None:
    """Client process: play the plans of ``spec`` concurrently; write what they saw as JSON.

    Protocol with the parent, over stdin/stdout: ``ready`` once imported; the clients connect
    and reset at the time the parent then writes; ``open`` once every session is open (or
    failed to open); every client steps at the time the parent writes next (once all client
    processes are open), so that every session is open at once and handshakes are timed
    apart from steps."""
    from benchmarks.serve_clients import ClientPlan, run_client

    spec = json.loads(spec_json)
    plans = [
        ClientPlan(spec["urls"][kind], steps=spec["steps"], seed=seed, label=kind)
        for kind, seed in spec["plans"]
    ]
    print("ready", flush=True)
    start_at = float(sys.stdin.readline())
    while time.time() < start_at:
        time.sleep(0.002)
    marks: dict[str, float] = {"began": time.time()}

    async def everyone() -> list[tuple[Any, float]]:
        loop = asyncio.get_running_loop()
        left, all_open, go = len(plans), asyncio.Event(), asyncio.Event()

        async def opened(ok: bool) -> None:
            nonlocal left
            left -= 1
            if left == 0:
                all_open.set()
            await go.wait()

        async def timed(plan: ClientPlan) -> tuple[Any, float]:
            return await run_client(plan, opened=opened), time.time()

        async def coordinate() -> None:
            await all_open.wait()
            marks["open"] = time.time()
            print("open", flush=True)
            go_at = float(await loop.run_in_executor(None, sys.stdin.readline))
            await asyncio.sleep(max(0.0, go_at - time.time()))
            marks["go"] = time.time()
            go.set()

        coordinator = asyncio.create_task(coordinate())
        done = list(await asyncio.gather(*(timed(p) for p in plans)))
        await coordinator
        return done

    with asyncio.Runner(loop_factory=_loop_factory()) as loop_runner:
        done = loop_runner.run(everyone())
    ended = time.time()
    stats = [st for st, _ in done]
    out = {
        **marks,
        "ended": ended,
        "sokoban_ended": max(
            (t for st, t in done if st.plan.label == "sokoban"), default=marks["go"]
        ),
        "step_s": [x for s in stats for x in s.step_s],
        "sokoban_steps": sum(len(s.step_s) for s in stats if s.plan.label == "sokoban"),
        "errors": [e for s in stats for e in s.errors],
    }
    Path(spec["out"]).write_text(json.dumps(out))  # a file: stdout may be non-blocking now


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _wait_up(ports: list[int], proc: subprocess.Popen) -> None:
    import httpx

    deadline = time.monotonic() + 120
    for port in ports:
        while True:
            if proc.poll() is not None:
                raise RuntimeError("the server exited at start")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("the server never answered /health")
            time.sleep(0.1)


def _active_sessions(urls: dict[str, str]) -> int:
    import httpx

    return sum(
        httpx.get(url + "/health", timeout=60).json()["active_sessions"] for url in urls.values()
    )


def _run_clients(
    urls: dict[str, str], n: int, steps: int, procs: int, seed0: int, mix: tuple[str, ...]
) -> tuple[list[dict], int]:
    """Every client's results, and the sessions the server held open once all had opened."""
    plans = [(mix[i % len(mix)], seed0 + i) for i in range(n)]
    children = []
    with tempfile.TemporaryDirectory(prefix="agentgym-serve-clients-") as tmp:
        outs = [os.path.join(tmp, f"{k}.json") for k in range(procs)]
        for k in range(procs):
            spec = {"urls": urls, "steps": steps, "plans": plans[k::procs], "out": outs[k]}
            code = f"from benchmarks.bench_serve_scale import play; play({json.dumps(spec)!r})"
            children.append(
                _python(code, None, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            )

        def tell_all(line: str, then: str | None) -> None:
            for c in children:
                assert c.stdin is not None
                c.stdin.write(line + "\n")
                c.stdin.flush()
            for c in children:
                assert c.stdout is not None
                if then is not None and c.stdout.readline().strip() != then:
                    raise RuntimeError(f"a client process did not say {then!r}")

        for c in children:  # every client process has imported what it needs
            assert c.stdout is not None and c.stdout.readline().strip() == "ready"
        tell_all(f"{time.time() + 0.2}", "open")  # connect and reset, then say "open"
        held = _active_sessions(urls)
        tell_all(f"{time.time() + 0.1}", None)  # step
        for c in children:
            if c.wait(timeout=900) != 0:
                raise RuntimeError(f"a client process failed with exit status {c.returncode}")
        return [json.loads(Path(o).read_text()) for o in outs], held


def _scale_row(tree: str | None, n: int, steps: int, mix: tuple[str, ...]) -> dict[str, Any]:
    """One server process (today's, or BASE's from ``tree``) under ``n`` clients."""
    from benchmarks.serve_clients import percentile

    ports = _free_ports(len(ENVS))
    code = f"from benchmarks.bench_serve_scale import serve_mix; serve_mix({ports!r}, {n + 16})"
    server = _python(code, tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_up(ports, server)
        urls = {k: f"http://127.0.0.1:{p}" for k, p in zip(ENVS, ports, strict=True)}
        _run_clients(urls, 3 * len(MIX), 2, 1, 10**6, MIX)  # warm-up: first builds import
        base_kib = _rss_kib(server.pid)
        peak = [base_kib]
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(0.1):
                with contextlib.suppress(OSError):
                    peak[0] = max(peak[0], _rss_kib(server.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        results, held = _run_clients(urls, n, steps, CLIENT_PROCS, 0, mix)
        stop.set()
        sampler.join()
    finally:
        server.kill()
        server.wait()
    step_s = [x for r in results for x in r["step_s"]]
    errors = [e for r in results for e in r["errors"]]
    go = max(r["go"] for r in results)
    return {
        "errors": len(errors),
        "first_error": errors[0][:160] if errors else "",
        "held": held,
        "open_s": max(r["open"] for r in results) - min(r["began"] for r in results),
        "sokoban_steps_s": sum(r["sokoban_steps"] for r in results)
        / (max(r["sokoban_ended"] for r in results) - go),
        "p50_ms": percentile(step_s, 50) * 1e3,
        "p99_ms": percentile(step_s, 99) * 1e3,
        "kib_per_session": (peak[0] - base_kib) / n,
        "wall_s": max(r["ended"] for r in results) - go,
    }


# ---- half-open connections ---------------------------------------------------------------------


def _low_fds() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (HALF_OPEN_FDS, HALF_OPEN_FDS))


def _half_open_row(tree: str | None) -> dict[str, Any]:
    import httpx

    port = _free_ports(1)[0]
    with tempfile.NamedTemporaryFile(prefix="agentgym-serve-log-", delete=False) as log:
        path = log.name
    with open(path, "wb") as out:
        code = (
            "import sys; from agentgym.cli import main; "
            f"sys.exit(main(['serve', '{ENVS['sokoban']}', '--port', '{port}']))"
        )
        server = _python(code, tree, stdout=out, stderr=subprocess.STDOUT, preexec_fn=_low_fds)
    socks: list[socket.socket] = []
    try:
        _wait_up([port], server)
        before = os.path.getsize(path)
        opened = time.monotonic()
        for _ in range(HALF_OPEN):
            s = socket.socket()
            s.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                s.connect(("127.0.0.1", port))
            socks.append(s)
        time.sleep(2.0)  # let the server meet them
        health: list[float | None] = []
        for _ in range(3):
            t0 = time.perf_counter()
            try:
                ok = httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).status_code == 200
                health.append(time.perf_counter() - t0 if ok else None)
            except httpx.TransportError:
                health.append(None)
        time.sleep(max(0.0, HALF_OPEN_WATCH_S - (time.monotonic() - opened)))
        logged = os.path.getsize(path) - before
    finally:
        for s in socks:
            s.close()
        server.kill()
        server.wait()
        os.unlink(path)
    answered = [h for h in health if h is not None]
    return {
        "answered": f"{len(answered)}/{len(health)}",
        "health_ms": sorted(answered)[len(answered) // 2] * 1e3 if answered else None,
        "log_bytes": logged,
    }


# ---- the section --------------------------------------------------------------------------------


def _ratio(rates: dict[str, list[float]]) -> str:
    """today / BASE of the median Sokoban steps/s over the rounds, with each round's ratio."""
    today, base = rates.get("today"), rates.get(BASE)
    if not today or not base or not min(base):
        return "-"
    median = statistics.median(today) / statistics.median(base)
    if len(today) == 1:
        return f"{median:.2f}x"
    each = ", ".join(f"{t / b:.2f}" for t, b in zip(today, base, strict=True))
    return f"{median:.2f}x (medians of {len(today)} rounds; round by round {each})"


def run(quick: bool = False) -> str:
    from benchmarks.basecommit import base_tree
    from benchmarks.timing import load

    old = base_tree(BASE)
    sizes = (1024,) if quick else (1024, 4096)
    lines = [
        "## Serving at RL scale: thousands of WebSocket sessions per server (issue 22)",
        "",
        f"One server process; clients in {CLIENT_PROCS} other processes, {STEPS} steps each, "
        f"`max_sessions` = clients + 16; today's server (this tree) against {BASE}'s, "
        f"interleaved in one run ({ROUNDS_AT_1024} rounds at 1,024 clients, which server goes "
        "first alternating; one at 4,096), with the same client harness (`benchmarks.serve_clients`: "
        "`LeanWebSocket`, the `websockets` package's client protocol on asyncio's transport, "
        "text frames written from orjson bytes; like that package's client it offers "
        f"permessage-deflate, which {BASE}'s server accepts and today's declines). "
        "Every process runs the event loop `uvicorn.Server.run` would pick for either server "
        "(`loop='auto'`: uvloop, installed here). Each client connects and resets, then waits "
        "until every session of the run is open; then all step at once. Workloads: `sokoban`, "
        "every client on Sokoban-Tiny (its steps are microseconds, its resets about 1 ms: "
        "level generation); `mix`, three envs in the one process (Sokoban-Tiny for half the "
        "clients, WebTodoText and UserTwentyQuestions a quarter each; WebTodoText's steps cost "
        "milliseconds of CPU). *Open*: sessions the server held open at once (its `/health`), "
        "and seconds until all were open. *Sokoban steps/s*: Sokoban-Tiny steps over the time "
        "from the common start until its last client finished. Round trips are every step's, "
        "client side. Memory is the server's peak RSS growth over its warmed-up size, per "
        "client. The machine is shared (2 CPUs, other work running): see the load figures.",
        "",
        f"Machine load at start: {load()}.",
        "",
        "| workload | server | clients | open at once | open s | errors | Sokoban steps/s "
        "| p50 ms | p99 ms | KiB / session | steps wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    notes, ratios = [], []
    for n in sizes:
        rounds = 1 if quick or n > 1024 else ROUNDS_AT_1024
        for workload, mix in (("sokoban", ("sokoban",)), ("mix", MIX)):
            rates: dict[str, list[float]] = {BASE: [], "today": []}
            for r in range(rounds):
                order = ((BASE, old), ("today", None))
                for name, tree in order if r % 2 == 0 else order[::-1]:
                    if name == BASE and old is None:
                        lines.append(f"| {workload} | {BASE} | {n} | (no tree) | | | | | | | |")
                        continue
                    row = _scale_row(tree, n, STEPS, mix)
                    rates[name].append(row["sokoban_steps_s"])
                    lines.append(
                        f"| {workload} | {name} | {n:,} | {row['held']:,} | {row['open_s']:.1f} "
                        f"| {row['errors']:,} | {row['sokoban_steps_s']:,.0f} | "
                        f"{row['p50_ms']:,.1f} | {row['p99_ms']:,.1f} | "
                        f"{row['kib_per_session']:.0f} | {row['wall_s']:.1f} |"
                    )
                    if row["first_error"]:
                        notes.append(
                            f"- {workload}, {name}, {n:,} clients, first error: "
                            f"`{row['first_error']}`"
                        )
            ratios.append(f"{workload} at {n:,} clients: {_ratio(rates)}")
    lines += [
        "",
        f"Sokoban steps/s, today / {BASE} (target 3x): " + "; ".join(ratios) + ".",
        "",
        f"Machine load at the end of the scale rows: {load()}.",
        "",
        *notes,
        "",
    ]
    lines += [
        f"### {HALF_OPEN:,} half-open connections under `ulimit -n {HALF_OPEN_FDS}`",
        "",
        f"`agentgym serve` (Sokoban-Tiny) with {HALF_OPEN:,} connections that never send a byte; "
        f"another client's `/health` (3 tries, 10 s client timeout) and the bytes logged in the "
        f"{HALF_OPEN_WATCH_S:g} s after they opened.",
        "",
        "| server | /health answered | median /health ms | log bytes |",
        "|---|---|---|---|",
    ]
    for name, tree in ((BASE, old), ("today", None)):
        if name == BASE and old is None:
            continue
        h = _half_open_row(tree)
        ms = f"{h['health_ms']:.1f}" if h["health_ms"] is not None else "-"
        lines.append(f"| {name} | {h['answered']} | {ms} | {h['log_bytes']:,} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    exit_on_help(__doc__, "python -m benchmarks.bench_serve_scale [--full]")
    print(run(quick="--full" not in sys.argv))
