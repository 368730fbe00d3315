"""Helpers shared by the user-env tests: ids, naive policies and an episode runner."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym

import agentgym  # noqa: F401 - registers the envs
from agentgym.parsing import render_tool_call

SINGLE_IDS = (
    "agentgym/UserTravel-v0",
    "agentgym/UserIntention-v0",
    "agentgym/UserTwentyQuestions-v0",
    "agentgym/UserFunction-v0",
    "agentgym/UserPersuade-v0",
    "agentgym/UserService-v0",
)

#: A naive policy per env: it answers at once, without asking the user anything.
NAIVE_ANSWERS = {
    "agentgym/UserTravel-v0": "H1",
    "agentgym/UserIntention-v0": "Here is a plan for your request.",
    "agentgym/UserTwentyQuestions-v0": "dog",
    "agentgym/UserFunction-v0": "0",
    "agentgym/UserPersuade-v0": "Please just agree.",
    "agentgym/UserService-v0": "All done, your request is handled.",
}


def talk(message: str) -> str:
    return render_tool_call("talk", {"message": message})


def run_episode(
    env: gym.Env, policy: Callable[[gym.Env], str], seed: int, options: dict | None = None
) -> tuple[list[str], dict[str, Any], list[dict[str, Any]]]:
    """Play one episode; return the observation texts, the last info and every step info."""
    obs, info = env.reset(seed=seed, options=options)
    texts = [obs["text"]]
    infos = []
    while True:
        obs, _, terminated, truncated, info = env.step(policy(env))
        texts.append(obs["text"])
        infos.append(info)
        if terminated or truncated:
            return texts, info, infos


def oracle(env: gym.Env) -> str:
    return env.unwrapped.oracle_action()


def naive_for(env_id: str) -> Callable[[gym.Env], str]:
    answer = render_tool_call("answer", {"answer": NAIVE_ANSWERS[env_id]})
    return lambda env: answer
