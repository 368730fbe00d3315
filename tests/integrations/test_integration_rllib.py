"""RLlib: agentgym ids through RLlib's ParallelPettingZooEnv."""

from __future__ import annotations

import pytest

from agentgym.integrations.rllib import parallel_env
from agentgym.parsing import render_tool_call

ENV_ID = "agentgym/Sokoban-Tiny-v0"
UP = render_tool_call("move", {"direction": "up"})


def test_parallel_env_passes_pettingzoo_api_test():
    from pettingzoo.test import parallel_api_test

    parallel_api_test(parallel_env(ENV_ID), num_cycles=5)


def test_real_rllib_wrapper_steps_text():
    pytest.importorskip("ray.rllib.env.wrappers.pettingzoo_env")
    from agentgym.integrations.rllib import rllib_env

    env = rllib_env(ENV_ID)
    obs, infos = env.reset(seed=4)
    assert set(obs) == {"agent"} and "#" in obs["agent"]["text"]
    obs, _rewards, terms, _truncs, infos = env.step({"agent": UP})
    assert infos["agent"]["action_valid"] and "__all__" in terms
