"""The rollout engine over a RayEnvPool with an env actor killed mid-run (issue 25).

One group waits for its model at its second turn; the actor holding one of its envs is
killed with ``ray.kill``; when the group goes on, that episode ends as ``infra_failure``
(the pool reports the dead actor as ``env_error``), its group is released whole but
unusable and stays out of the advantages, and every other episode finishes exactly as the
local lockstep loop plays it.
"""

from __future__ import annotations

import asyncio

import gymnasium as gym
import pytest

from agentgym.pools import RayEnvPool
from agentgym.rollout import PoolEnvSource, RolloutConfig, RolloutEngine, training_arrays
from tests.distributed.ray_test_envs import kill_actor_for_good
from tests.fake_llm_server import ScriptedChatPolicy
from tests.rollout.held_group import HoldOneTask, collect_with_held_group
from tests.rollout.test_rollout_engine import engine_results, lockstep

pytestmark = [pytest.mark.ray, pytest.mark.slow]

ENV_ID = "agentgym/Sokoban-Tiny-v0"


def test_actor_killed_mid_run_fails_its_episode_only(ray_session):
    seeds, k, held_seed = [0, 1, 2], 2, 1
    policy = HoldOneTask(gym.make(ENV_ID).reset(seed=held_seed)[0]["text"], k)
    with RayEnvPool.from_id(ENV_ID, 6, num_cpus=0.25, max_restarts=0, timeout_s=60) as pool:
        config = RolloutConfig(group_size=k, max_in_flight=6, partial=False, episode_retries=0)
        engine = RolloutEngine(PoolEnvSource(pool), policy, seeds, config)
        killed: list[int] = []

        async def kill_an_actor_of_the_held_group() -> None:
            victim = next(ep for ep in engine.carried if ep.seed == held_seed)
            actor = pool.actors[victim.slot.index // pool.envs_per_actor]
            killed.append(victim.traj_id)
            await asyncio.to_thread(kill_actor_for_good, ray_session, actor)

        try:
            collection = collect_with_held_group(engine, 3, policy, kill_an_actor_of_the_held_group)
        finally:
            engine.close()
    summary = collection.summary
    assert summary.causes == {"env_error": 1} and summary.retries == 0
    held = next(g for g in collection.groups if g.seed == held_seed)
    (failed,) = [ep for ep in held.members if ep.status == "infra_failure"]
    assert failed.traj_id == killed[0] and len(held.members) == k
    assert not held.usable and summary.excluded_groups == 1 and summary.usable_groups == 2
    # the failure never reaches the advantages; everything that finished is kept
    assert set(training_arrays(collection).group_ids) == {"0", "2"}
    reference = lockstep(ENV_ID, ScriptedChatPolicy(), seeds, k)
    got = engine_results(collection.groups)
    assert got == {key: v for key, v in reference.items() if key != (held_seed, failed.member)}
