"""SkyRL-gym: register `agentgym` and build it the way SkyRL does (env_config + extras).

In a SkyRL dataset row: "env_class": "agentgym", "env_extras": {"env_id": ..., "seed": ...}.
Run: python examples/integrations/skyrl_env.py
"""

from agentgym.integrations.skyrl import AgentGymTextEnv, register
from agentgym.parsing import render_tool_call

extras = {"env_id": "agentgym/Sokoban-Tiny-v0", "seed": 2, "max_turns": 6}
try:
    import skyrl_gym

    register()
    env = skyrl_gym.make("agentgym", env_config={}, extras=extras)
except ImportError:
    env = AgentGymTextEnv({}, extras)
chat, meta = env.init([{"role": "user", "content": "(replaced by the env's task)"}])
print(chat[-1]["content"])
for d in ["up", "left", "down", "right"] * 2:
    out = env.step(render_tool_call("move", {"direction": d}))
    print(d, "reward", round(out["reward"], 2), "done", out["done"])
    if out["done"]:
        break
print(env.get_metrics())
env.close()
