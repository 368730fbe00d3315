"""Wrappers: chat history windows, turn limits, reward re-weighting and seats."""

from __future__ import annotations

import doctest

import gymnasium as gym
import numpy as np
import pytest
from agentgym.wrappers import (
    AsParallelEnv,
    ChatHistory,
    LimitTurns,
    ReweightReward,
    SeatAsEnv,
    chat,
    limits,
    rewards,
    seats,
)
from agentgym.wrappers.chat import observation_message
from pettingzoo.test import parallel_api_test

import agentgym  # noqa: F401


@pytest.mark.parametrize("module", [chat, limits, rewards, seats])
def test_docstring_examples_run(module):
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted > 0


def test_chat_history_keeps_task_and_last_turns():
    env = ChatHistory(gym.make("agentgym/Sokoban-Large-v0"), history_turns=2)
    env.reset(seed=0)
    for i in range(4):
        _, _, _, _, info = env.step(f"turn {i}")
    msgs = info["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert [m["content"] for m in msgs if m["role"] == "assistant"] == ["turn 2", "turn 3"]
    assert "Push" in msgs[1]["content"]


def test_chat_history_zero_window_keeps_only_the_task():
    env = ChatHistory(gym.make("agentgym/Sokoban-Tiny-v0"), history_turns=0)
    env.reset(seed=0)
    env.step("x")
    assert [m["role"] for m in env.messages] == ["system", "user"]


@pytest.mark.parametrize("fmt", ["data_url", "array"])
def test_images_become_content_parts(fmt):
    img = np.zeros((4, 5, 3), dtype=np.uint8)
    msg = observation_message({"text": "look", "images": (img,)}, image_format=fmt)
    assert msg["content"][-1] == {"type": "text", "text": "look"}
    part = msg["content"][0]
    if fmt == "data_url":
        assert part["image_url"]["url"].startswith("data:image/png;base64,")
    else:
        assert part["image"] is img


def test_limit_turns_truncates_and_counts_down():
    env = LimitTurns(gym.make("agentgym/Sokoban-Large-v0"), max_turns=3)
    _, info = env.reset(seed=0)
    assert info["turns_left"] == 3
    flags = [env.step("x")[3] for _ in range(3)]
    assert flags == [False, False, True]


def test_reweight_rejects_unknown_components():
    with pytest.raises(ValueError, match="no reward components"):
        ReweightReward(gym.make("agentgym/Sokoban-Tiny-v0"), {"speed": 1})


def test_single_agent_env_passes_pettingzoo_api_as_a_seat():
    parallel_api_test(AsParallelEnv(gym.make("agentgym/Sokoban-Tiny-v0")), num_cycles=20)


def test_a_seat_of_a_parallel_env_is_a_gym_env():
    penv = AsParallelEnv(gym.make("agentgym/Sokoban-Tiny-v0"), agent="solver")
    env = SeatAsEnv(penv, "solver", others={})
    obs, info = env.reset(seed=0)
    assert "Push" in obs["text"] and info["task_id"]
    _, _, terminated, truncated, info = env.step("bad")
    assert info["action_valid"] is False and not terminated and not truncated
    with pytest.raises(ValueError, match="not in"):
        SeatAsEnv(penv, "nobody", others={})
