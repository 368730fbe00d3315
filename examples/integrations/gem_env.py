"""GEM / ROLL: every agentgym id as a GEM env.

With gem installed: `register_all()` then `gem.make("agentgym:agentgym/Sokoban-Tiny-v0")`.
Run: python examples/integrations/gem_env.py
"""

from agentgym.integrations.gem import PREFIX, register_all

registry = {}
try:
    import gem

    ids = register_all()
    make = gem.make
except Exception:  # gem (or one of its optional deps) missing: use a local registry
    ids = register_all(lambda env_id, entry_point, **kw: registry.setdefault(env_id, entry_point))
    make = lambda env_id: registry[env_id]()  # noqa: E731
print(len(ids), "ids registered, e.g.", ids[:3])
env = make(PREFIX + "agentgym/Sokoban-Tiny-v0")
obs, info = env.reset(seed=0)
print(obs[-200:])
for _ in range(10):
    obs, reward, terminated, truncated, info = env.step(env.sample_random_action())
    print("reward", round(reward, 2), "|", obs.splitlines()[0])
    if terminated or truncated:
        break
env.close()
