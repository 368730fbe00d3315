"""SkyRL-gym: AgentGymTextEnv through skyrl_gym.make, init/step outputs in SkyRL's shape."""

from __future__ import annotations

import pytest

from agentgym.integrations.skyrl import AgentGymTextEnv
from agentgym.parsing import render_tool_call

ENV_ID = "agentgym/Sokoban-Tiny-v0"
UP = render_tool_call("move", {"direction": "up"})


def test_through_real_skyrl_gym_registry():
    skyrl_gym = pytest.importorskip("skyrl_gym")
    from skyrl_gym.envs.base_text_env import BaseTextEnv

    from agentgym.integrations.skyrl import register

    register()
    env = skyrl_gym.make("agentgym", env_config={}, extras={"env_id": ENV_ID, "seed": 3})
    assert isinstance(env, BaseTextEnv)
    chat, meta = env.init([{"role": "user", "content": "replaced"}])
    assert chat[-1]["role"] == "user" and meta["tools"][0]["function"]["name"] == "move"
    out = env.step(UP)
    assert set(out) >= {"observations", "reward", "done", "metadata"}
    assert out["observations"][0]["role"] == "user" and out["metadata"]["action_valid"]
    env.close()


def test_max_turns_and_missing_env_id():
    from agentgym.error import InvalidConfigError

    env = AgentGymTextEnv({"max_turns": 2}, {"env_id": ENV_ID, "seed": 1})
    env.init()
    assert not env.step(UP)["done"]
    last = env.step(UP)
    assert last["done"] and last["observations"] == []
    assert env.get_metrics()["turns"] == 2
    with pytest.raises(InvalidConfigError):
        AgentGymTextEnv({}, {})
