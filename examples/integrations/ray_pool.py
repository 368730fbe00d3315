"""Env pools on Ray: same calls as agentgym.pools.EnvPool, envs on (fractional-CPU) actors.

Run: python examples/integrations/ray_pool.py        (starts a local Ray with 2 CPUs,
     or joins $RAY_ADDRESS / a Ray already running in this process)
"""

import os
import signal

from agentgym.parsing import render_tool_call
from agentgym.pools import RayEnvPool, ensure_ray

ensure_ray(num_cpus=2)
moves = [render_tool_call("move", {"direction": d}) for d in ("up", "left", "down", "right")]
with RayEnvPool.from_id("agentgym/Sokoban-Tiny-v0", 4, envs_per_actor=2, num_cpus=0.25) as pool:
    pool.reset(seeds=[0, 1, 2, 3])
    active = set(range(4))
    for t in range(6):
        if t == 2:  # simulate a crash: kill the first actor's process mid-rollout
            os.kill(pool.actor_pids()[0], signal.SIGKILL)
        results = pool.step({i: moves[t % 4] for i in active})
        for i, r in sorted(results.items()):
            flag = f" env_error={r.info['env_error'][:60]!r}" if "env_error" in r.info else ""
            print(
                f"turn {t} env {i}: reward {r.reward:+.2f} done={r.terminated or r.truncated}{flag}"
            )
            if r.terminated or r.truncated:
                active.discard(i)
        if not active:
            break
    print("reset after the crash:", [info["task_id"] for _, info in pool.reset(seeds=[9, 9, 9, 9])])
