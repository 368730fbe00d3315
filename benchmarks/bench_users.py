"""Benchmark of the simulated-user envs: scripted-user speed and LLM-wording overhead.

Measures, on this machine:

* per env, steps/s of the full ``env.step`` (parsing, dispatch, reward, info, state key)
  driven by the oracle policy (its own time not counted), against the **baseline** of the
  bare scripted core: the same dialogue calls made directly on the simulator;
* UserTravel with wording backends: templates (no backend), a replay cache serving recorded
  replies, and an OpenAI-compatible client talking to a local fake server (HTTP round trip,
  no model) - the overhead an LLM user adds before any model time;
* the two-seat PettingZoo versions and negotiation.
"""

from __future__ import annotations

import json
import platform
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import gymnasium as gym
from agentgym.envs.users.seats import scripted_user_policy
from agentgym.simulators.users import OpenAICompatibleWording, ReplayCache, WordingRequest
from agentgym.wrappers.seats import SeatAsEnv

import agentgym
from agentgym.parsing import parse_action
from benchmarks.cli import exit_on_help

ENV_IDS = (
    "agentgym/UserTravel-v0",
    "agentgym/UserIntention-v0",
    "agentgym/UserTwentyQuestions-v0",
    "agentgym/UserFunction-v0",
    "agentgym/UserPersuade-v0",
    "agentgym/UserService-v0",
)


def _record(env_id: str, episodes: int) -> list[tuple[int, list[str]]]:
    """Oracle episodes as (seed, actions), so timing excludes the oracle."""
    env = gym.make(env_id)
    out = []
    for seed in range(episodes):
        env.reset(seed=seed)
        actions: list[str] = []
        while True:
            action = env.unwrapped.oracle_action()
            actions.append(action)
            _, _, term, trunc, _ = env.step(action)
            if term or trunc:
                break
        out.append((seed, actions))
    env.close()
    return out


def _time_env(
    env: gym.Env, episodes: list[tuple[int, list[str]]], repeats: int = 3
) -> tuple[float, float, int]:
    """(step seconds, reset seconds, steps): the fastest of ``repeats`` replays (less noise)."""
    runs = [_time_env_once(env, episodes) for _ in range(repeats)]
    return min(r[0] for r in runs), min(r[1] for r in runs), runs[0][2]


def _time_env_once(env: gym.Env, episodes: list[tuple[int, list[str]]]) -> tuple[float, float, int]:
    step_t = reset_t = 0.0
    steps = 0
    for seed, actions in episodes:
        t0 = time.process_time()
        env.reset(seed=seed)
        reset_t += time.process_time() - t0
        t0 = time.process_time()
        for a in actions:
            env.step(a)
        step_t += time.process_time() - t0
        steps += len(actions)
    return step_t, reset_t, steps


def _time_core(env_id: str, episodes: list[tuple[int, list[str]]], repeats: int = 3) -> float:
    """Seconds in the bare dialogue calls for the same episodes (the baseline), best of 3."""
    return min(_time_core_once(env_id, episodes) for _ in range(repeats))


def _time_core_once(env_id: str, episodes: list[tuple[int, list[str]]]) -> float:
    env = gym.make(env_id).unwrapped
    tools = env.tools
    total = 0.0
    for seed, actions in episodes:
        env.reset(seed=seed)
        dialogue = env.dialogue
        calls = []
        for a in actions:
            c = parse_action(a, tools).tool_calls[0]
            calls.append((c.name, c.arguments))
        # rebuild the same episode's dialogue, then time only the simulator calls
        dialogue = type(dialogue)()
        dialogue.start(int(env.task_id.rsplit("-", 1)[1]), env.user_seed)
        t0 = time.process_time()
        for name, args in calls:
            if name == "talk":
                dialogue.talk(args["message"])
            elif name == "search":
                dialogue.search(args["query"])
            elif name == "answer":
                dialogue.answer(args["answer"])
            else:
                dialogue.call(name, args)
        total += time.process_time() - t0
        dialogue.close()
    env.close()
    return total


class _Paraphrase:
    def word(self, request: WordingRequest) -> str:
        return "Well... " + request.template


class _FakeServer(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        draft = body["messages"][-1]["content"].split("DRAFT reply: ", 1)[-1]
        data = json.dumps({"choices": [{"message": {"content": draft}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def _wording_rows(episodes: list[tuple[int, list[str]]]) -> list[tuple[str, float, int]]:
    rows = []
    env_id = "agentgym/UserTravel-v0"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cache.jsonl"
        _time_env(gym.make(env_id, wording=ReplayCache(path, _Paraphrase(), "record")), episodes)
        server = HTTPServer(("127.0.0.1", 0), _FakeServer)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            backends: list[tuple[str, Callable[[], Any]]] = [
                ("templates (no backend)", lambda: None),
                ("replay cache (recorded replies)", lambda: ReplayCache(path, mode="replay")),
                (
                    "OpenAI-compatible client, local fake server",
                    lambda: OpenAICompatibleWording(
                        f"http://127.0.0.1:{server.server_port}/v1", "fake", timeout=10
                    ),
                ),
            ]
            for name, make in backends:
                env = gym.make(env_id, wording=make())
                step_t, _, steps = _time_env(env, episodes)
                rows.append((name, step_t, steps))
        finally:
            server.shutdown()
            server.server_close()
    return rows


def _multi_rows(n: int) -> list[tuple[str, float, int]]:
    rows = []
    penv = agentgym.make_multi("agentgym/UserTravelSeats-v0")
    env = SeatAsEnv(penv, "assistant", {"user": scripted_user_policy})
    t_total, steps = 0.0, 0
    for seed in range(n):
        env.reset(seed=seed)
        while True:
            action = penv.env.oracle_action()
            t0 = time.process_time()
            _, _, term, trunc, _ = env.step(action)
            t_total += time.process_time() - t0
            steps += 1
            if term or trunc:
                break
    rows.append(("UserTravelSeats-v0 (scripted user seat, both seats' steps)", t_total, steps))
    neg = agentgym.make_multi("agentgym/Negotiation-v0")
    t_total, steps = 0.0, 0
    for seed in range(n):
        obs, infos = neg.reset(seed=seed)
        pols = {s: neg.scripted_policy(s) for s in neg.possible_agents}
        while neg.agents:
            actions = {s: pols[s](obs[s], infos[s]) for s in neg.agents}
            t0 = time.process_time()
            obs, _, _, _, infos = neg.step(actions)
            t_total += time.process_time() - t0
            steps += 1
    rows.append(("Negotiation-v0 (scripted seats)", t_total, steps))
    return rows


def run(quick: bool = False) -> str:
    episodes = 20 if quick else 200
    lines = [
        "## Simulated users (agentgym/User*-v0)",
        "",
        f"Machine: 2-core CPU, no GPU ({platform.python_implementation()} "
        f"{platform.python_version()}), shared with other jobs, so times are process CPU time "
        "(``time.process_time``), not wall time, best of 3 runs. Oracle policy; its own time "
        "is not counted. "
        f"{episodes} episodes per env. **Baseline**: the bare scripted core, i.e. the same "
        "dialogue calls (talk/search/answer/db tools) made directly on the simulator, "
        "without parsing, reward assembly, info or state keys. The machine is shared by "
        "several jobs: the same row can vary by up to about 2x between runs.",
        "",
        "| env | env steps/s | env ms/step | reset ms | core calls/s (baseline) | env / core time |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    travel_eps: list[tuple[int, list[str]]] = []
    for env_id in ENV_IDS:
        eps = _record(env_id, episodes)
        if env_id.endswith("Travel-v0"):
            travel_eps = eps
        step_t, reset_t, steps = _time_env(gym.make(env_id), eps)
        core_t = _time_core(env_id, eps)
        lines.append(
            f"| {env_id.split('/')[1]} | {steps / step_t:,.0f} | {1e3 * step_t / steps:.3f} | "
            f"{1e3 * reset_t / len(eps):.3f} | {steps / core_t:,.0f} | {step_t / core_t:.1f}x |"
        )
    lines += [
        "",
        "Wording backends on UserTravel-v0 (same episodes; the guard checks every worded reply):",
        "",
        "| wording | env steps/s | ms/step | vs templates |",
        "|---|---:|---:|---:|",
    ]
    rows = _wording_rows(travel_eps[: max(10, episodes // 4)])
    base = rows[0][1] / rows[0][2]
    for name, t, steps in rows:
        lines.append(
            f"| {name} | {steps / t:,.0f} | {1e3 * t / steps:.3f} | {t / steps / base:.1f}x |"
        )
    lines += [
        "",
        "Multi-agent (PettingZoo ParallelEnv) steps:",
        "",
        "| env | steps/s | ms/step |",
        "|---|---:|---:|",
    ]
    for name, t, steps in _multi_rows(max(10, episodes // 4)):
        lines.append(f"| {name} | {steps / t:,.0f} | {1e3 * t / steps:.3f} |")
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    exit_on_help(__doc__, "python -m benchmarks.bench_users")
    print(run(quick=True))
