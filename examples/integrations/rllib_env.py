"""RLlib: an agentgym id through RLlib's ParallelPettingZooEnv (and Tune's env registry).

Run: python examples/integrations/rllib_env.py
"""

from agentgym.integrations.rllib import parallel_env, register, rllib_env

ENV = "agentgym/Sokoban-Tiny-v0"
try:
    env = rllib_env(ENV)
    print("RLlib env registered as", register(ENV))
except ImportError:
    env = parallel_env(ENV)  # the PettingZoo env RLlib would wrap
obs, infos = env.reset(seed=0)
print(obs["agent"]["text"][-120:])
for _ in range(10):
    action = infos["agent"]["admissible_actions"][0]
    obs, rewards, terms, truncs, infos = env.step({"agent": action})
    print("reward", rewards, "terminated", terms)
    if terms.get("agent") or truncs.get("agent"):
        break
