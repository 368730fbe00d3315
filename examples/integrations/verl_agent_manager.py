"""verl-agent: the environment manager (groups of envs on one task, GiGPO anchors).

Run: python examples/integrations/verl_agent_manager.py [--ray]
"""

import sys

import numpy as np

from agentgym.integrations.verl_agent import AgentGymEnvironmentManager

pool = None
if "--ray" in sys.argv:  # the same manager with its envs on Ray actors
    from agentgym.pools import RayEnvPool

    pool = RayEnvPool.from_id(
        "agentgym/Sokoban-Tiny-v0", 8, num_cpus=0.25, ray_init={"num_cpus": 2}
    )
mgr = AgentGymEnvironmentManager(
    "agentgym/Sokoban-Tiny-v0", env_num=2, group_n=4, seed=0, pool=pool
)
rng = np.random.default_rng(0)
obs, infos = mgr.reset()
print(obs["text"][0][:300], "\n...")
for t in range(10):
    actions = [rng.choice(info.get("admissible_actions") or ["?"]) for info in infos]
    obs, rewards, dones, infos = mgr.step(actions)
    groups = {}
    for a in obs["anchor"]:
        groups[a] = groups.get(a, 0) + 1
    print(
        f"step {t}: rewards {[round(float(r), 2) for r in rewards]} done {dones.astype(int).tolist()} "
        f"anchor groups {sorted(groups.values(), reverse=True)}"
    )
    if dones.all():
        break
print("success:", mgr.success_evaluator(infos)["success_rate"].tolist())
mgr.close()
