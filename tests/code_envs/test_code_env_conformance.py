"""The code family is registered and solved by its oracle (tests/test_conformance.py checks
every code id against the contract)."""

from __future__ import annotations

import pytest

import agentgym  # noqa: F401 - registers the envs
from agentgym.registry import list_envs, make

pytestmark = [pytest.mark.sandbox]

CODE_IDS = sorted(r.id for r in list_envs() if r.family == "code")


def test_code_family_is_registered() -> None:
    assert {"agentgym/CodeMath-v0", "agentgym/CodeTests-v0"} <= set(CODE_IDS)


@pytest.mark.parametrize("env_id", ["agentgym/CodeMath-v0", "agentgym/CodeTests-v0"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_oracle_solves(pool: object, env_id: str, seed: int) -> None:
    env = make(env_id)
    try:
        env.reset(seed=seed)
        for _ in range(5):
            _, _, term, trunc, info = env.step(env.unwrapped.oracle_action())
            if term or trunc:
                break
        assert term and info["success"] and info["reward_components"]["outcome"] == 1.0
    finally:
        env.close()
