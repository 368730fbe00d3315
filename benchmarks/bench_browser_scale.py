"""Browsers at scale (issue 22): CPU per browser step part by part, pools in processes, and
64 concurrent sessions.

* **CPU per step**: browser-mode ``agentgym/WebTodo-v0`` oracle episodes; the CPU of this
  process plus every process under it (the Playwright driver, Chromium's browser, renderer,
  GPU and utility processes), read from ``/proc`` through psutil around each ``env.step``.
  The same measurement on commit 89477ec (before this work) runs in its own process through
  :mod:`benchmarks.basecommit`, the two trees taking turns, round after round.
* **Part by part**: what one call of each piece of a step costs in CPU, on the same page:
  the observation script, the locate script, a trusted mouse click that does not navigate,
  a navigation (``goto /``), a PNG screenshot (taken only when an env asks for one), and a
  click that submits a WebTodo form, with its observation (a full page load on 89477ec; the
  form fetched and the body swapped in now).
* **Pools in processes**: ``EnvPool(backend="process")`` with 1 and then 2 worker
  processes, each with its own Chromium, oracle episodes back to back, stepped in lockstep
  as a trainer batches them; steps/s (resets included in the wall time) and the CPU cores
  the whole tree kept busy, rounds alternating; once with the kernel free to place every
  process, once with each worker and its Chromium held to a CPU of its own
  (``pin_cpus=True``), which is how the pool is meant to grow with cores.
* **64 sessions**: 64 browser-mode WebTodo envs in one process (one Chromium, a context
  each) stepped concurrently on threads; errors, and contexts/pages left after close.

One command: ``python -m benchmarks browser_scale`` (``--quick`` for a smoke run). The 1 -> 2
process figure needs two idle cores: on a shared machine it is bounded by the load, which the
section reports next to it.
"""

from __future__ import annotations

import functools
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
BASE = "89477ec"
ENV_ID = "agentgym/WebTodo-v0"
SESSION_TIMEOUT_S = 60.0


# -- measuring CPU ----------------------------------------------------------------------------


def _process_kind(cmdline: list[str], name: str) -> str:
    """Which part of the stack a child process is (for the per-process split)."""
    if "node" in name or any("run-driver" in part for part in cmdline):
        return "driver"
    for part in cmdline:
        if part.startswith("--type="):
            kind = part.split("=", 1)[1]
            return {"gpu-process": "gpu", "zygote": "browser"}.get(kind, kind)
    return "browser"


class CpuMeter:
    """CPU seconds used so far by this process and all its descendants, by kind.

    Processes that exited between two readings lose their last slice; a run keeps its
    browser processes for its whole length, so that does not happen within one.
    """

    def __init__(self) -> None:
        import psutil

        self._me = psutil.Process()
        self._error = psutil.Error
        self._kinds: dict[int, str] = {}

    def read(self) -> Counter[str]:
        out: Counter[str] = Counter()
        times = self._me.cpu_times()
        out["python"] = times.user + times.system
        for child in self._me.children(recursive=True):
            try:
                kind = self._kinds.get(child.pid)
                if kind is None:
                    kind = self._kinds[child.pid] = _process_kind(child.cmdline(), child.name())
                t = child.cpu_times()
                out[kind] += t.user + t.system
            except self._error:
                continue
        return out


def machine_busy_jiffies() -> tuple[int, int]:
    """(busy, total) CPU jiffies of the whole machine so far, from ``/proc/stat``."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields[:8]) - idle, sum(fields[:8])


def _call(name: str, **args: Any) -> str:
    from agentgym.parsing import render_tool_call

    return render_tool_call(name, args)


# -- workers (run in a subprocess, on this tree or on the base commit's) ---------------------


def worker_cpu(episodes: int) -> dict[str, Any]:
    """CPU per oracle step and per part, in this process (whichever agentgym it imports)."""
    import gymnasium as gym
    from agentgym.simulators.browser.runtime import get_runtime
    from agentgym.simulators.browser.session import _LOCATE_JS, _OBSERVE_JS

    import agentgym  # noqa: F401

    meter = CpuMeter()
    env = gym.make(ENV_ID, max_turns=10**6)
    env.reset(seed=0)
    by_kind: Counter[str] = Counter()
    by_action: dict[str, list[float]] = {}
    steps = 0
    for seed in range(1, episodes + 1):
        env.reset(seed=seed)
        for _ in range(20):
            action = env.unwrapped.oracle_action()
            before = meter.read()
            _obs, _r, term, trunc, _info = env.step(action)
            used = meter.read() - before
            # Counter subtraction drops non-positive entries: fine, CPU only grows
            by_kind.update(used)
            name = action.split('"name": "', 1)[-1].split('"', 1)[0][:12]
            by_action.setdefault(name, []).append(sum(used.values()))
            steps += 1
            if term or trunc:
                break
    runtime = get_runtime()
    driver = env.unwrapped.driver
    page = driver.slot.page
    box = next(e["bid"] for e in env.unwrapped.page_elements() if e["role"] == "textbox")
    where = runtime.call(page.evaluate(_LOCATE_JS, box), 10)
    origin = driver.slot.origin

    def per_call(fn: Any, n: int) -> float:
        before = meter.read()
        for _ in range(n):
            fn()
        return 1000 * sum((meter.read() - before).values()) / n

    def submit_part() -> float:
        driver.open("/")  # the raw goto above left the session's last observation behind
        return per_call(lambda: toggle(driver), 20)

    parts = {
        "observation script (observe.js)": per_call(
            lambda: runtime.call(page.evaluate(_OBSERVE_JS), 10), 30
        ),
        "locate script (locate.js)": per_call(
            lambda: runtime.call(page.evaluate(_LOCATE_JS, box), 10), 30
        ),
        "trusted click, no navigation": per_call(
            lambda: runtime.call(page.mouse.click(where["x"], where["y"]), 10), 30
        ),
        "navigation (goto /, DOMContentLoaded)": per_call(
            lambda: runtime.call(page.goto(origin + "/", wait_until="domcontentloaded"), 20), 20
        ),
        "PNG screenshot (only when asked)": per_call(lambda: driver.screenshot("png"), 10),
        "form submit + observation (click Done/Undo)": submit_part(),
    }
    env.close()
    return {
        "steps": steps,
        "ms_per_step": 1000 * sum(by_kind.values()) / steps,
        "by_process": {k: 1000 * v / steps for k, v in by_kind.items()},
        "by_action": {k: 1000 * statistics.mean(v) for k, v in by_action.items()},
        "parts": parts,
    }


def toggle(driver: Any) -> None:
    """Click the first item's Done/Undo button: a form POST and the page it redirects to."""
    button = next(e["bid"] for e in driver.observe().elements if e["role"] == "button")
    error = driver.click(button)
    if error:
        raise RuntimeError(error)


def worker_pool(processes: int, seconds: float, pinned: int = 0) -> dict[str, Any]:
    """Steps/s of ``processes`` browser envs in EnvPool worker processes, oracle episodes.

    ``pinned``: each worker, with its Playwright driver and Chromium, held to a CPU of its own
    (``EnvPool(pin_cpus=True)``), so a worker gets one core and two workers two.
    """
    import gymnasium as gym

    import agentgym  # noqa: F401
    from agentgym.pools import EnvPool

    factory = functools.partial(gym.make, ENV_ID)
    pool = EnvPool([factory] * processes, backend="process", pin_cpus=bool(pinned))
    try:
        seeds = list(range(processes))
        pool.reset(seeds=seeds)
        for _ in range(2):  # warm up: every worker has its Chromium and a page
            pool.step(dict(zip(range(processes), pool.call("oracle_action"), strict=True)))
        pool.reset(seeds=seeds)
        steps = errors = 0
        next_seed = processes
        meter = CpuMeter()  # this process, the workers and their Chromiums
        cpu_before = meter.read()
        machine_before = machine_busy_jiffies()
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            actions = dict(enumerate(pool.call("oracle_action")))
            done = []
            for i, result in pool.step(actions).items():
                steps += 1
                errors += bool(result.info.get("error") or result.info.get("env_error"))
                if result.terminated or result.truncated:
                    done.append(i)
            if done:
                pool.reset(done, seeds=list(range(next_seed, next_seed + len(done))))
                next_seed += len(done)
        elapsed = time.perf_counter() - start
        cpu = sum((meter.read() - cpu_before).values())
        machine = [after - before for after, before in zip(machine_busy_jiffies(), machine_before)]
    finally:
        pool.close()
    return {
        "steps_per_s": steps / elapsed,
        "steps": steps,
        "errors": errors,
        "cores_busy": cpu / elapsed,
        "machine_cores_busy": os.cpu_count() * machine[0] / max(1, machine[1]),
    }


def worker_sessions(n: int, episodes: int) -> dict[str, Any]:
    """``n`` concurrent browser-mode sessions in one process: errors and what close leaves."""
    import gymnasium as gym
    from agentgym.simulators.browser.runtime import get_runtime

    import agentgym  # noqa: F401

    runtime = get_runtime()
    # the action timeout is for hung pages: with n sessions sharing two cores a step waits
    # its turn for CPU, so it gets more than the default 10 s
    envs = [gym.make(ENV_ID, action_timeout=SESSION_TIMEOUT_S) for _ in range(n)]
    errors: list[str] = []
    successes = [0] * n
    steps = [0] * n
    peak_mb = [0.0]

    def work(i: int) -> None:
        try:
            for e in range(episodes):
                envs[i].reset(seed=1000 * e + i)
                for _ in range(20):
                    _o, _r, term, trunc, info = envs[i].step(envs[i].unwrapped.oracle_action())
                    steps[i] += 1
                    if info["error"]:
                        errors.append(info["error"])
                    if term or trunc:
                        break
                successes[i] += bool(info.get("success"))
        except Exception as exc:  # counted, not raised: the figure is the error count
            errors.append(repr(exc))

    start = time.perf_counter()
    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    peak_mb[0] = runtime.memory_rss_mb()
    during = runtime.open_pages()
    for env in envs:
        env.close()
    after = runtime.open_pages()
    return {
        "sessions": n,
        "errors": len(errors),
        "first_errors": errors[:3],
        "successes": sum(successes),
        "episodes": n * episodes,
        "steps_per_s": sum(steps) / elapsed,
        "open_during": during,
        "open_after_close": after,
        "chromium_mb": peak_mb[0],
    }


WORKERS = {"cpu": worker_cpu, "pool": worker_pool, "sessions": worker_sessions}


def _spawn(kind: str, args: list[Any], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run one worker in a fresh Python process (``env``: the base commit's PYTHONPATH)."""
    out = subprocess.run(
        [sys.executable, str(HERE), kind, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
        cwd="/tmp",  # not the repository root, so PYTHONPATH decides which agentgym loads
    )
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"{kind} worker failed: {out.stderr[-1500:]}")
    return json.loads(lines[-1])


# -- the section --------------------------------------------------------------------------------


def _cpu_section(rounds: int, episodes: int) -> list[str]:
    from benchmarks.basecommit import base_env

    base = base_env(BASE)
    runs: dict[str, list[dict[str, Any]]] = {"now": [], BASE: []}
    for r in range(rounds):
        order = ["now", BASE] if r % 2 == 0 else [BASE, "now"]
        for label in order:
            if label == BASE and base is None:
                continue
            runs[label].append(_spawn("cpu", [episodes], base if label == BASE else None))
    med = {
        label: statistics.median(x["ms_per_step"] for x in rs) for label, rs in runs.items() if rs
    }
    lines = [
        "### CPU per browser step (WebTodo-v0 oracle episodes, all processes)",
        "",
        f"{rounds} rounds, each tree in a fresh process, taking turns; {episodes} episodes per "
        "run. CPU = this process + the Playwright driver + every Chromium process, in ms per "
        "`env.step`.",
        "",
        "| tree | CPU ms/step, median | per round |",
        "|---|---:|---|",
    ]
    for label, rs in runs.items():
        if rs:
            per = ", ".join(f"{x['ms_per_step']:.0f}" for x in rs)
            name = "this tree" if label == "now" else f"{BASE} (before)"
            lines.append(f"| {name} | {med[label]:.1f} | {per} |")
    if BASE in med:
        lines += ["", f"Ratio now / before: **{med['now'] / med[BASE]:.2f}**."]
    lines += _median_table(
        runs,
        "by_process",
        "process",
        "Where a step's CPU goes, by process (ms/step, median of the runs):",
    )
    lines += _median_table(
        runs,
        "parts",
        "part",
        "Part by part (ms of CPU per call, all processes, median of the runs):",
    )
    lines += _median_table(
        runs,
        "by_action",
        "action",
        "By action of the step (ms of CPU per step, median of the runs):",
    )
    return lines


def _median_table(
    runs: dict[str, list[dict[str, Any]]], key: str, what: str, title: str
) -> list[str]:
    """One row per name found under ``runs[*][*][key]``, one column per tree: the median over
    that tree's runs (a run without the name counts 0; "-" where no run of the tree has it)."""
    names: list[str] = []
    for rs in runs.values():
        for x in rs:
            names += [n for n in x[key] if n not in names]
    if key != "parts":  # parts keep the order they were measured in
        names.sort()
    lines = ["", title, "", f"| {what} | " + " | ".join(runs) + " |", "|---|" + "---:|" * len(runs)]
    for name in names:
        cells = [
            f"{statistics.median(x[key].get(name, 0.0) for x in rs):.1f}"
            if any(name in x[key] for x in rs)
            else "-"
            for rs in runs.values()
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def _pool_section(rounds: int, seconds: float) -> list[str]:
    from benchmarks.timing import load

    modes = ((0, "free"), (1, "a CPU each"))
    rates: dict[tuple[int, int], list[float]] = {(n, p): [] for n in (1, 2) for p, _ in modes}
    cores: dict[tuple[int, int], list[float]] = {key: [] for key in rates}
    machine: dict[tuple[int, int], list[float]] = {key: [] for key in rates}
    errors = 0
    start_load = load()
    for r in range(rounds):
        order = sorted(rates, reverse=r % 2 == 1)  # alternate which run goes first
        for n, pinned in order:
            result = _spawn("pool", [n, seconds, pinned])
            rates[n, pinned].append(result["steps_per_s"])
            cores[n, pinned].append(result["cores_busy"])
            machine[n, pinned].append(result["machine_cores_busy"])
            errors += result["errors"]

    def scaling(pinned: int) -> float:
        return statistics.median(rates[2, pinned]) / statistics.median(rates[1, pinned])

    return [
        "### Browser envs in worker processes: 1 -> 2 processes",
        "",
        f"`EnvPool(backend='process')`, WebTodo-v0 oracle episodes for {seconds:.0f} s per run, "
        f"stepped in lockstep as a trainer batches them, {rounds} rounds, the order of the runs "
        "alternating; every worker runs its own Chromium. *Workers' CPUs*: `free`, the kernel "
        "places every process on either core; `a CPU each`, `EnvPool(pin_cpus=True)`: each "
        "worker, its Playwright driver and its Chromium held to one CPU of their own.",
        "",
        "| workers' CPUs | worker processes | steps/s, median | per round "
        "| CPU cores busy (tree), median | machine cores busy, median |",
        "|---|---:|---:|---|---:|---:|",
        *(
            f"| {label} | {n} | {statistics.median(rates[n, pinned]):.1f} | "
            + ", ".join(f"{x:.1f}" for x in rates[n, pinned])
            + f" | {statistics.median(cores[n, pinned]):.2f} "
            f"| {statistics.median(machine[n, pinned]):.2f} |"
            for pinned, label in modes
            for n in (1, 2)
        ),
        "",
        f"Scaling 1 -> 2: **{scaling(0):.2f}x** free, **{scaling(1):.2f}x** with a CPU each "
        f"({errors} step errors). CPU cores busy (tree): the CPU time of this process, the "
        "workers and their Chromiums over the wall time, as psutil sees them (a renderer that "
        "exits between two readings loses its last slice, so it reads low); machine cores "
        "busy: the whole machine's, from `/proc/stat`, over the same window. "
        f"Load at the start: {start_load}; at the end: {load()}.",
    ]


def _sessions_section(n: int, episodes: int) -> list[str]:
    result = _spawn("sessions", [n, episodes])
    return [
        f"### {n} concurrent browser-mode WebTodo sessions in one process",
        "",
        f"One Chromium, a browser context per session, {n} threads each playing {episodes} "
        f"oracle episode(s); `action_timeout={SESSION_TIMEOUT_S:.0f}` (a step waits its turn "
        "for the two cores; the default 10 s is meant for hung pages, not for queueing).",
        "",
        "| sessions | episodes solved | step errors | steps/s | Chromium memory (PSS) | "
        "contexts, pages while open | after close |",
        "|---:|---:|---:|---:|---:|---|---|",
        f"| {n} | {result['successes']}/{result['episodes']} | {result['errors']} | "
        f"{result['steps_per_s']:.1f} | {result['chromium_mb']:.0f} MiB | "
        f"{tuple(result['open_during'])} | {tuple(result['open_after_close'])} |",
    ]


def run(quick: bool = False) -> str:
    lines = ["## Browsers at scale (issue 22)", ""]
    lines += _cpu_section(rounds=2 if quick else 4, episodes=4 if quick else 15)
    lines += [""]
    lines += _pool_section(rounds=1 if quick else 3, seconds=10 if quick else 20)
    lines += [""]
    lines += _sessions_section(n=8 if quick else 64, episodes=1)
    lines += [
        "",
        "Re-run: `python -m benchmarks browser_scale` (about 12 minutes; `--quick` for a smoke "
        "run). Before-rows import commit 89477ec through `benchmarks/basecommit.py`.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":  # a worker process of the sections above (not the entry point)
    if len(sys.argv) < 2 or sys.argv[1] not in WORKERS:
        sys.exit(
            "This module's command line runs one worker of the benchmark "
            f"(`{' | '.join(WORKERS)}` and its numbers). To run the benchmark: "
            "`python -m benchmarks browser_scale` (`--quick` for a smoke run)."
        )
    kind, *raw = sys.argv[1:]
    numbers = [float(x) if "." in x else int(x) for x in raw]
    print(json.dumps(WORKERS[kind](*numbers)))
