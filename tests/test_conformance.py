"""Every registered env id through the public conformance suite (agentgym.testing).

Parametrized from the registry, so a new env family is covered the moment it registers.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import agentgym
from agentgym.testing import check_env, check_multi_agent_env

#: Families whose envs need a real browser or sandbox get that marker (CI still runs them).
FAMILY_MARKS = {"web": [pytest.mark.browser, pytest.mark.slow], "code": [pytest.mark.sandbox]}
FAMILY_MARKS["repo"] = [pytest.mark.sandbox]  # RepoFix runs its tools in the sandbox too


def _params(multi_agent: bool) -> list:
    return [
        pytest.param(r.id, id=r.id, marks=FAMILY_MARKS.get(r.family, []))
        for r in agentgym.list_envs(multi_agent=multi_agent)
    ]


def test_the_registry_is_not_empty():
    assert len(agentgym.list_envs(multi_agent=False)) >= 4


@pytest.mark.parametrize("env_id", _params(multi_agent=False))
def test_single_agent_env_conforms(env_id):
    env = gym.make(env_id)
    try:
        check_env(env)
    finally:
        env.close()


@pytest.mark.parametrize("env_id", _params(multi_agent=True))
def test_multi_agent_env_conforms(env_id):
    check_multi_agent_env(lambda: agentgym.make_multi(env_id))


@pytest.mark.parametrize("env_id", _params(multi_agent=False))
def test_every_env_declares_its_family_and_a_format_reward(env_id):
    record = agentgym.get_record(env_id)
    cls = record.load()
    assert cls.metadata.get("family") == record.family
    assert "format" in cls.default_reward_weights
