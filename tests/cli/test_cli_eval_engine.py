"""``agentgym eval`` runs its episodes through the asynchronous rollout engine (issue 25).

Against the fake OpenAI server (``tests/fake_openai.py``): no barrier across episodes (one
episode's held reply does not stop another from finishing, which the lockstep loop could
not do), and an episode whose request fails for good is an infrastructure failure: counted
in the summary and the recording, played again from reset, never scored.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import gymnasium as gym

from agentgym import trajectory
from agentgym.cli import main
from tests.fake_openai import FakeOpenAI, move_up_or_echo

ENV = "agentgym/Sokoban-Tiny-v0"


def _first_observations(seeds: list[int], turns: int) -> dict[str, int]:
    env = gym.make(ENV, split="test", max_turns=turns)
    firsts = {env.reset(seed=s)[0]["text"]: s for s in seeds}
    env.close()
    assert len(firsts) == len(seeds)
    return firsts


def _eval(url: str, *args: str, turns: int) -> list[str]:
    kwargs = json.dumps({"max_turns": turns})
    return ["eval", ENV, "--policy", "openai", "--base-url", url, "--model", "m",
            "--env-kwargs", kwargs, "--no-progress", *args]  # fmt: skip


def test_a_held_reply_does_not_stop_the_other_episodes(tmp_path, capsys):
    seed_of = _first_observations([0, 1], turns=3)
    other_done = threading.Event()
    waited: list[bool] = []

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        msgs = body["messages"]
        seed, turn = seed_of[msgs[1]["content"]], sum(m["role"] == "assistant" for m in msgs)
        if seed == 0 and turn == 1:  # held until episode 1 has asked for its last turn
            waited.append(other_done.wait(30))
        if seed == 1 and turn == 2:
            other_done.set()
        return move_up_or_echo(body)

    out = tmp_path / "eval.jsonl"
    with FakeOpenAI(reply) as server:
        args = ["--episodes", "2", "--num-envs", "2", "--out", str(out)]
        assert main(_eval(server.url, *args, turns=3)) == 0
    assert waited == [True]  # a lockstep loop would have held episode 1 at turn 1 instead
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["seed"], r["turns"]) for r in rows] == [(0, 3), (1, 3)]
    assert "infra failures" not in capsys.readouterr().out


def test_a_failed_request_is_an_infra_failure_played_again_and_never_scored(tmp_path, capsys):
    seed_of = _first_observations([0, 1, 2], turns=2)
    dropped: list[int] = []

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        msgs = body["messages"]
        seed, turn = seed_of[msgs[1]["content"]], sum(m["role"] == "assistant" for m in msgs)
        if seed == 1 and turn == 1 and not dropped:  # episode 1's second turn, once
            dropped.append(seed)
            raise ConnectionAbortedError("dropped by the test")
        return move_up_or_echo(body)

    out, rec = tmp_path / "eval.jsonl", tmp_path / "eval.agtr"
    with FakeOpenAI(reply) as server:
        args = ["--episodes", "3", "--num-envs", "3", "--retries", "0"]
        code = main(_eval(server.url, *args, "--out", str(out), "--record", str(rec), turns=2))
        requests = len(server.requests)
    stdout = capsys.readouterr().out
    assert code == 0, stdout
    assert dropped == [1] and requests == 3 * 2 + 2  # the failed attempt's two requests
    # every task finished once, as if nothing had happened; the failure is counted
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["seed"], r["turns"]) for r in rows] == [(0, 2), (1, 2), (2, 2)]
    greedy = next(line.split() for line in stdout.splitlines() if line.startswith("greedy"))
    assert greedy[1] == "3", stdout
    line = next(line for line in stdout.splitlines() if line.startswith("infra failures"))
    assert "1 attempts (policy_error 1)" in line and "greedy seed 1: policy_error" in line
    # the recording keeps the failed attempt, marked with its cause
    with trajectory.open(rec) as reader:
        episodes = list(reader.episodes())
    failed = [ep for ep in episodes if ep.end and ep.end.get("error")]
    assert len(episodes) == 4 and len(failed) == 1
    assert failed[0].length == 1 and "policy_error" in failed[0].end["error"]
