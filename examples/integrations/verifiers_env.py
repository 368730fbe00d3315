"""verifiers: `load_environment` for an agentgym id, one rollout driven through its hooks.

With verifiers installed this is a `vf.MultiTurnEnv` (dataset + rubric included).
Run: python examples/integrations/verifiers_env.py
"""

import asyncio

from agentgym.integrations.verifiers import env_reward, load_environment, opening_rows
from agentgym.parsing import render_tool_call

ENV = "agentgym/Sokoban-Tiny-v0"
env = load_environment(ENV, num_examples=4)
row = opening_rows(ENV, [0])[0]


async def rollout():
    state = {"prompt": row["prompt"], "info": row["info"]}
    await env.setup_state(state)
    messages = list(row["prompt"])
    for d in ["up", "left", "down", "right"] * 3:
        messages.append(
            {"role": "assistant", "content": render_tool_call("move", {"direction": d})}
        )
        reply = await env.env_response(messages, state)
        messages += reply
        print(d, "->", reply[0]["content"].splitlines()[0])
        if state.get("final_env_response") is not None:
            break
    return state


state = asyncio.run(rollout())
print("rubric reward:", env_reward(state))
