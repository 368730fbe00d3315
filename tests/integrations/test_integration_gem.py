"""GEM/ROLL: every id registers as a GEM env with reset(seed)->(str, info) and step(str)."""

from __future__ import annotations

import agentgym
from agentgym.integrations.gem import PREFIX, AgentGymGemEnv, register_all
from agentgym.parsing import render_tool_call

ENV_ID = "agentgym/Sokoban-Tiny-v0"
UP = render_tool_call("move", {"direction": "up"})


def test_registration_covers_every_single_agent_id():
    registry = {}
    ids = register_all(lambda env_id, entry_point, **kw: registry.setdefault(env_id, entry_point))
    assert set(ids) == {PREFIX + r.id for r in agentgym.list_envs(multi_agent=False)}
    env = registry[PREFIX + ENV_ID]()
    obs, info = env.reset(seed=5)
    assert isinstance(obs, str) and info["task_id"]


def test_gem_shape_determinism_and_spawn():
    a, b = AgentGymGemEnv(ENV_ID), AgentGymGemEnv(ENV_ID)
    assert a.reset(seed=8)[0] == b.reset(seed=8)[0]
    obs, reward, _terminated, _truncated, info = a.step(UP)
    assert isinstance(obs, str) and isinstance(reward, float) and info["action_valid"]
    assert a.sample_random_action() in info["admissible_actions"]
    child = a.spawn(same_state=True)
    assert child.session.env.unwrapped.state_key() == a.session.env.unwrapped.state_key()
