"""Web family: steps/s, resets, episodes/s, memory, a soak, and BrowserGym as the peer.

Measured in one run on the same machine and the same Debian Chromium:
* agentgym's web envs (real Chromium through the shared browser runtime, text observation
  from one in-page script, trusted mouse/keyboard events), 1 / 4 / 8 envs on threads, with
  and without a JPEG screenshot per step; reset latency; oracle episodes per second; the
  browser-free text mode; memory per env; a soak with zero errors allowed;
* BrowserGym (``browsergym-core`` from PyPI in its own venv, default ``/tmp/bgym-venv``,
  ``AGENTGYM_BGYM_PYTHON`` to override) on the same local 25-button page, with its defaults
  and with ``slow_mo=0, pre_observation_delay=0.0``, in rounds alternating with agentgym's
  session on that page, with and without a PNG screenshot per step (BrowserGym returns one
  every step, so the screenshot row is the like-for-like comparison).

Setting up the peer (offline apart from PyPI; Playwright's own browser download does not
work here, so its Chromium 1117 path is pointed at Debian's binary)::

    python -m venv /tmp/bgym-venv
    /tmp/bgym-venv/bin/pip install browsergym-core playwright==1.44.0
    mkdir -p ~/.cache/ms-playwright/chromium-1117/chrome-linux
    ln -sf /usr/lib/chromium/chromium ~/.cache/ms-playwright/chromium-1117/chrome-linux/chrome
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
from agentgym.simulators.browser.runtime import get_runtime
from agentgym.simulators.browser.session import BrowserSession
from agentgym.simulators.browser.site import Request, Response, Site, page

import agentgym  # noqa: F401  (registers the envs)
from agentgym.parsing import render_tool_call
from benchmarks.cli import exit_on_help

BGYM_PYTHON = os.environ.get("AGENTGYM_BGYM_PYTHON", "/tmp/bgym-venv/bin/python")
PEER_SCRIPT = Path(__file__).with_name("bgym_peer.py")


class ButtonsSite(Site):
    """The shared peer page: 25 buttons that count clicks in the page."""

    def reset(self, seed: int, task: Mapping[str, Any]) -> None:
        self.n = 0

    def handle(self, request: Request) -> Response:
        buttons = "".join(
            f"<button onclick=\"document.getElementById('out').textContent = 'clicked {i}'\">Button {i}</button>"
            for i in range(25)
        )
        return Response(page("Buttons", f"<h1>Buttons</h1>{buttons}<p id='out'>none</p>"))

    def dump(self) -> Any:
        return {}

    def load(self, state: Any) -> None:
        pass


def _u(env: gym.Env) -> Any:
    """The agentgym env under gym.make's wrappers."""
    return env.unwrapped


def _switch_env(**kw: Any) -> gym.Env:
    return gym.make("agentgym/WebWidgets-v0", kinds=["toggle-switches"], max_turns=10**9, **kw)


def _throughput(n_envs: int, seconds: float, **kw: Any) -> tuple[float, int]:
    """Aggregate steps/s of n envs on threads clicking switches (never ends an episode)."""
    envs = [_switch_env(**kw) for _ in range(n_envs)]
    for i, env in enumerate(envs):
        env.reset(seed=i)
    counts = [0] * n_envs
    errors = [0] * n_envs
    stop = time.perf_counter() + seconds
    start = time.perf_counter()

    def work(i: int) -> None:
        env = envs[i]
        switches = [e["bid"] for e in _u(env).page_elements() if e["role"] == "switch"]
        k = 0
        while time.perf_counter() < stop:
            _, _, _, _, info = env.step(
                render_tool_call("click", {"bid": switches[k % len(switches)]})
            )
            errors[i] += info["error"] is not None
            k += 1
            counts[i] += 1

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_envs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    for env in envs:
        env.close()
    return sum(counts) / elapsed, sum(errors)


def _median_reset(env_id: str, n: int, **kw: Any) -> float:
    env = gym.make(env_id, **kw)
    env.reset(seed=0)
    times = []
    for seed in range(1, n + 1):
        t = time.perf_counter()
        env.reset(seed=seed)
        times.append(time.perf_counter() - t)
    env.close()
    return statistics.median(times)


def _episodes(env_id: str, n_envs: int, seconds: float) -> tuple[float, float, int]:
    """Oracle episodes/s (aggregate), success rate, errors, over ``seconds``."""
    envs = [gym.make(env_id) for _ in range(n_envs)]
    done = [0] * n_envs
    wins = [0] * n_envs
    errors = [0] * n_envs
    stop = time.perf_counter() + seconds
    start = time.perf_counter()

    def work(i: int) -> None:
        env = envs[i]
        seed = 1000 * i
        while time.perf_counter() < stop:
            env.reset(seed=seed)
            seed += 1
            while True:
                _, _, term, trunc, info = env.step(_u(env).oracle_action())
                errors[i] += info["error"] is not None
                if term or trunc:
                    break
            done[i] += 1
            wins[i] += bool(info.get("success"))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_envs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    for env in envs:
        env.close()
    total = sum(done)
    return total / elapsed, (sum(wins) / total if total else 0.0), sum(errors)


def _text_mode_rate(seconds: float) -> float:
    env = gym.make("agentgym/WebShopText-v0")
    steps, seed = 0, 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        env.reset(seed=seed)
        seed += 1
        while True:
            _, _, term, trunc, _ = env.step(_u(env).oracle_action())
            steps += 1
            if term or trunc:
                break
    return steps / (time.perf_counter() - start)


def _memory() -> tuple[float, float]:
    runtime = get_runtime()
    base_envs = [_switch_env()]
    base_envs[0].reset(seed=0)
    m1 = runtime.memory_rss_mb()
    more = [_switch_env() for _ in range(7)]
    for i, env in enumerate(more):
        env.reset(seed=i)
    m8 = runtime.memory_rss_mb()
    for env in base_envs + more:
        env.close()
    return m1, (m8 - m1) / 7


def _soak(seconds: float) -> tuple[int, int, int]:
    """Mixed envs on 4 threads running oracle episodes; returns (steps, episodes, errors)."""
    ids = [
        "agentgym/WebWidgets-v0",
        "agentgym/WebShop-v0",
        "agentgym/WebForms-v0",
        "agentgym/WebTodo-v0",
    ]
    steps = [0] * 4
    episodes = [0] * 4
    errors = [0] * 4
    stop = time.perf_counter() + seconds

    def work(i: int) -> None:
        env = gym.make(ids[i])
        seed = 0
        try:
            while time.perf_counter() < stop:
                env.reset(seed=seed)
                seed += 1
                while True:
                    _, _, term, trunc, info = env.step(_u(env).oracle_action())
                    steps[i] += 1
                    errors[i] += info["error"] is not None or not info["action_valid"]
                    if term or trunc:
                        break
                episodes[i] += 1
                errors[i] += not info.get("success")
        except Exception:
            errors[i] += 1
        finally:
            env.close()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(steps), sum(episodes), sum(errors)


class _PeerSession:
    """Our session on the peer page, kept open across the interleaved rounds."""

    def __init__(self) -> None:
        site = ButtonsSite()
        site.reset(0, {})
        self.session = BrowserSession(get_runtime(), site)
        self.resets = []
        for _ in range(5):
            t = time.perf_counter()
            self.session.open("/", fresh=True)
            self.resets.append(time.perf_counter() - t)
        self.bids = [e["bid"] for e in self.session.observe().elements]
        self.url = f"{self.session.slot.origin}/"

    def steps(self, n: int, screenshot: bool) -> float:
        """Median seconds of ``n`` steps: click a button, observe (and take a PNG screenshot,
        as BrowserGym does on every step, when ``screenshot``)."""
        times = []
        for i in range(n):
            t = time.perf_counter()
            self.session.click(self.bids[i % len(self.bids)])
            self.session.observe()
            if screenshot:
                self.session.screenshot("png")
            times.append(time.perf_counter() - t)
        return statistics.median(times)

    def close(self) -> None:
        self.session.close()


def _browsergym(url: str, steps: int, tuned: bool) -> dict[str, Any] | str:
    if not Path(BGYM_PYTHON).exists():
        return f"not run: {BGYM_PYTHON} missing (pip install browsergym-core in its own venv)"
    try:
        out = subprocess.run(
            [BGYM_PYTHON, str(PEER_SCRIPT), url, str(steps), "1" if tuned else "0"],
            capture_output=True,
            text=True,
            timeout=300,
        )
    except subprocess.TimeoutExpired:
        return "not run: timed out"
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        return "failed: " + (out.stderr.strip().splitlines() or ["?"])[-1][:200]
    return json.loads(lines[-1])


def run(quick: bool = False) -> str:
    load_before = os.getloadavg()[0]
    secs = 3.0 if quick else 8.0
    soak_secs = 10.0 if quick else 60.0
    rows: list[tuple[str, str]] = []
    rate = {}
    for n in (1, 4, 8):
        rate[n], errs = _throughput(n, secs)
        rows.append(
            (
                f"steps/s, {n} env{'s' if n > 1 else ''}, text obs (widget clicks)",
                f"{rate[n]:.0f} ({errs} errors)",
            )
        )
    for n in (1, 4, 8):
        r, errs = _throughput(n, secs, screenshot="jpeg")
        rows.append(
            (
                f"steps/s, {n} env{'s' if n > 1 else ''}, text + JPEG screenshot",
                f"{r:.0f} ({errs} errors)",
            )
        )
    rows.append(
        (
            "reset, WebWidgets (server reset + navigation), median",
            f"{_median_reset('agentgym/WebWidgets-v0', 15) * 1000:.0f} ms",
        )
    )
    rows.append(
        (
            "reset, WebShop (browser), median",
            f"{_median_reset('agentgym/WebShop-v0', 15) * 1000:.0f} ms",
        )
    )
    rows.append(
        (
            "reset, WebShopText (no browser), median",
            f"{_median_reset('agentgym/WebShopText-v0', 50) * 1000:.1f} ms",
        )
    )
    for env_id, n in (
        ("agentgym/WebWidgets-v0", 1),
        ("agentgym/WebWidgets-v0", 4),
        ("agentgym/WebShop-v0", 4),
    ):
        eps, win, errs = _episodes(env_id, n, secs)
        rows.append(
            (
                f"oracle episodes/s, {env_id.split('/')[1]}, {n} env{'s' if n > 1 else ''}",
                f"{eps:.1f} (success {win:.0%}, {errs} errors)",
            )
        )
    rows.append(("steps/s, WebShopText oracle (text mode, 1 env)", f"{_text_mode_rate(secs):.0f}"))
    fixed, per_env = _memory()
    rows.append(("Chromium memory (PSS, whole process tree) with 1 env", f"{fixed:.0f} MiB"))
    rows.append(("Chromium memory (PSS) per extra env (tab), 1 -> 8 envs", f"{per_env:.0f} MiB"))
    steps, episodes, errors = _soak(soak_secs)
    rows.append(
        (
            f"soak {soak_secs:.0f} s, 4 mixed envs on threads",
            f"{steps} steps, {episodes} episodes, {errors} errors",
        )
    )

    peer_steps = 10 if quick else 20
    peer_rounds = 1 if quick else 3
    ours = _PeerSession()
    samples: dict[str, list[float]] = {k: [] for k in ("text", "shot", "bg", "bg_tuned")}
    peer_resets: dict[str, list[float]] = {"bg": [], "bg_tuned": []}
    peer_errors: dict[str, str] = {}
    try:
        ours.steps(10, screenshot=True)  # warm-up
        for _ in range(peer_rounds):  # ABAB: ours, the peer's two settings, ours, ...
            samples["text"].append(ours.steps(100, screenshot=False))
            samples["shot"].append(ours.steps(30, screenshot=True))
            for key, tuned in (("bg", False), ("bg_tuned", True)):
                res = _browsergym(ours.url, peer_steps, tuned)
                if isinstance(res, dict):
                    samples[key].append(res["step_s"])
                    peer_resets[key].append(res["reset_s"])
                else:
                    peer_errors[key] = res
    finally:
        ours.close()
    labels = {
        "text": "agentgym session, text observation",
        "shot": "agentgym session, text observation + PNG screenshot",
        "bg": "BrowserGym, defaults",
        "bg_tuned": "BrowserGym, slow_mo=0, pre_observation_delay=0",
    }
    peer_rows = []
    for key, label in labels.items():
        if key in peer_errors and not samples[key]:
            peer_rows.append((label, peer_errors[key], "", ""))
            continue
        resets = statistics.median(ours.resets if key in ("text", "shot") else peer_resets[key])
        lo, med = min(samples[key]), statistics.median(samples[key])
        peer_rows.append(
            (
                label,
                f"{resets * 1000:.0f} ms" if key != "shot" else "",
                f"{lo * 1000:.1f} / {med * 1000:.1f} ms",
                f"{1 / med:.1f}",
            )
        )
    ratios = []
    for bg_key in ("bg_tuned", "bg"):
        if not samples[bg_key]:
            continue
        bg = statistics.median(samples[bg_key])
        text = statistics.median(samples["text"])
        shot = statistics.median(samples["shot"])
        ratios.append(f"| {labels[bg_key]} | {bg / text:.1f}x | {bg / shot:.1f}x |")
    load_after = os.getloadavg()[0]

    out = [
        "## Web envs (real Chromium) vs BrowserGym",
        "",
        f"Machine: {os.cpu_count()}-core CPU, no GPU, Debian Chromium through Playwright; "
        f"1-minute load average {load_before:.1f} at the start, {load_after:.1f} at the end "
        "(a load above the core count means other jobs shared the cores, and absolute "
        "figures are then on the low side); the ratios to BrowserGym come from the same run. "
        f"Mode: {'quick' if quick else 'full'}; throughput windows {secs:.0f} s each. Baseline: "
        "BrowserGym (`browsergym-core`, its own venv, pinned Playwright 1.44, the same Chromium "
        "binary) on the same local 25-button page served by agentgym's site server.",
        "",
        "| measure | value |",
        "|---|---|",
        *[f"| {a} | {b} |" for a, b in rows],
        "",
        "The 1 / 4 / 8-env throughput windows above run one after another on threads sharing "
        "one Chromium and one Playwright driver; they are not a scaling measurement. How "
        "throughput scales with envs and cores (threads against a browser per worker "
        "process, interleaved) is the Env pools section.",
        "",
        "Peer comparison on the 25-button page: click one button, then observe. "
        f"{peer_rounds} rounds, each running agentgym's two rows (median of 100 and 30 "
        f"steps) and then BrowserGym twice (median of {peer_steps} steps each, a fresh "
        "process each time, as its browser is launched per env); step is min / median "
        "over the rounds of those medians, steps/s from the median. BrowserGym returns a "
        "screenshot, the DOM snapshot and the accessibility tree on every step, so the "
        "like-for-like row is agentgym's step with a PNG screenshot added.",
        "",
        "| driver | reset (median) | step (min / median) | steps/s |",
        "|---|---|---|---|",
        *[f"| {a} | {b} | {c} | {d} |" for a, b, c, d in peer_rows],
        "",
        *(
            [
                "BrowserGym's step time over agentgym's (medians of the same run):",
                "",
                "| against | agentgym, text observation | like-for-like: agentgym + PNG "
                "screenshot |",
                "|---|---:|---:|",
                *ratios,
            ]
            if ratios
            else [
                "BrowserGym did not run here ("
                + "; ".join(sorted(set(peer_errors.values())))
                + "), so this run makes no claim against it; earlier runs' ratios are not "
                "repeated."
            ]
        ),
        "",
        "Notes: a step is one tool call parsed, validated and run with trusted input events, then "
        "one in-page observation (element list + text). Envs on threads share one Chromium (tabs "
        "on separate origins). Server-rendered families (shop, forms, todo) navigate on most "
        "clicks, which costs a page load each. Errors in the soak count failed actions, browser "
        "faults and unsuccessful oracle episodes.",
    ]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    exit_on_help(__doc__, "python -m benchmarks.bench_web [--quick]")
    sys.stdout.write(run(quick="--quick" in sys.argv))
