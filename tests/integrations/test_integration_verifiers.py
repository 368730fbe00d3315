"""verifiers: MultiTurnEnv hooks drive an agentgym episode; signature as published (0.1.x)."""

from __future__ import annotations

import asyncio
import inspect

from agentgym.integrations.verifiers import (
    AgentGymVerifiersEnv,
    env_reward,
    load_environment,
    opening_rows,
)
from agentgym.parsing import render_tool_call

ENV_ID = "agentgym/Sokoban-Tiny-v0"
MOVES = [render_tool_call("move", {"direction": d}) for d in ("up", "left", "down", "right")]

# verifiers 0.1.14 MultiTurnEnv (verifiers/envs/multiturn_env.py)
PUBLISHED = {
    "env_response": ["self", "messages", "state", "kwargs"],
    "setup_state": ["self", "state"],
}


def test_hooks_match_the_published_signature():
    for name, params in PUBLISHED.items():
        method = getattr(AgentGymVerifiersEnv, name)
        assert inspect.iscoroutinefunction(method)
        got = list(inspect.signature(method).parameters)
        assert got[: len(params) - 1] == params[:-1] and "kwargs" in got


def test_rollout_through_the_hooks_ends_with_final_env_response():
    env = load_environment(ENV_ID, num_examples=2, seed=3)
    row = opening_rows(ENV_ID, [3])[0]

    async def main():
        state = {"prompt": row["prompt"], "info": row["info"]}
        await env.setup_state(state)
        messages = list(row["prompt"])
        for move in MOVES * 4:
            messages.append({"role": "assistant", "content": move})
            messages += await env.env_response(messages, state)
            if state.get("final_env_response"):
                break
        return state

    state = asyncio.run(main())
    assert state.get("final_env_response") is not None
    assert env_reward(state) == state["agentgym_session"].total_reward != 0
