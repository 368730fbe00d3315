"""The Ray pool keeps the local pool's contract, survives dying and hanging actors."""

from __future__ import annotations

import os
import signal

import gymnasium as gym
import pytest

import agentgym
from agentgym.error import InvalidConfigError
from agentgym.parsing import render_tool_call
from agentgym.pools import EnvPool, RayEnvPool, RemoteEnv, RemoteEnvError, ensure_ray
from agentgym.testing import (
    FUZZ_ACTIONS,
    check_reset_determinism,
    check_snapshot_restore,
    check_state_key,
    check_step_fuzz,
)

pytestmark = pytest.mark.ray

ENV_ID = "agentgym/Sokoban-Tiny-v0"
UP = render_tool_call("move", {"direction": "up"})
LEFT = render_tool_call("move", {"direction": "left"})


def _trace(pool, seeds, script):
    """Reset with ``seeds``, then step by ``script`` (a list of {idx: action}) -> comparable."""
    out = [(o["text"], i["task_id"], i["state_key"]) for o, i in pool.reset(seeds=seeds)]
    for actions in script:
        res = pool.step(actions)
        assert sorted(res) == sorted(actions)  # only the named envs come back
        out.append(
            {
                k: (
                    r.obs["text"],
                    r.reward,
                    r.terminated,
                    r.truncated,
                    r.info["action_valid"],
                    r.info["state_key"],
                    r.info["reward_components"],
                )
                for k, r in res.items()
            }
        )
    return out


@pytest.fixture(scope="module")
def pool(ray_session):
    p = RayEnvPool.from_id(ENV_ID, 3, envs_per_actor=1, num_cpus=0.25, timeout_s=60)
    yield p
    p.close()


def test_ray_pool_matches_local_pool_step_for_step(pool):
    script = [{0: UP, 1: LEFT, 2: "junk"}, {1: UP}, {0: FUZZ_ACTIONS[3], 2: LEFT}]
    local = EnvPool([lambda: gym.make(ENV_ID)] * 3, backend="sync")
    try:
        expected = _trace(local, [4, 5, 6], script)
    finally:
        local.close()
    assert _trace(pool, [4, 5, 6], script) == expected


def _conformance_ids() -> list[str]:
    """Sokoban-Tiny by default; AGENTGYM_RAY_CONFORMANCE=all runs every single-agent id."""
    if os.environ.get("AGENTGYM_RAY_CONFORMANCE") == "all":
        return [r.id for r in agentgym.list_envs(multi_agent=False)]
    return [ENV_ID]


@pytest.mark.parametrize("env_id", _conformance_ids())
def test_conformance_checks_pass_through_ray(ray_session, env_id):
    factory = lambda: gym.make(env_id)  # noqa: E731
    with RayEnvPool.from_id(env_id, 1, num_cpus=0.25) as remote_pool:
        env = RemoteEnv(remote_pool, 0)
        check_reset_determinism(env)
        check_step_fuzz(env, seed=3, extra_actions=10)
        check_state_key(env, seed=2, factory=factory)
        check_snapshot_restore(env, seed=2, factory=factory)


def test_call_and_get_attr_reach_the_remote_env(pool):
    pool.reset(seeds=[0, 1, 2])
    keys = pool.call("state_key")
    assert len(keys) == 3 and all(isinstance(k, str) and k for k in keys)
    assert pool.get_attr("reward_weights", indices=[0])[0]["format"] == 0.1
    with pytest.raises(RemoteEnvError, match=r"call 'no_such_method' on env 1 failed: "):
        pool.call("no_such_method", indices=[1])
    with pytest.raises(RemoteEnvError, match=r"reading '\{no\}' of env 2 failed: "):
        pool.get_attr("{no}", indices=[2])


def test_bad_indices_are_typed_errors(pool):
    with pytest.raises(InvalidConfigError):
        pool.step({7: UP})
    with pytest.raises(InvalidConfigError):
        pool.reset([0, 1], seeds=[1])


def test_killed_actor_fails_its_episode_not_the_run(ray_session):
    """SIGKILL an env actor in the middle of a rollout: its episode ends, the others go on."""
    with RayEnvPool.from_id(ENV_ID, 4, envs_per_actor=2, num_cpus=0.25, timeout_s=60) as pool:
        pool.reset(seeds=[0, 1, 2, 3])
        first = pool.step({i: UP for i in range(4)})
        assert not any("env_error" in r.info for r in first.values())
        os.kill(pool.actor_pids()[0], signal.SIGKILL)
        res = pool.step({i: LEFT for i in range(4)})
        for i in (0, 1):  # the killed actor's two slots
            assert res[i].truncated and not res[i].info["success"]
            assert "env_error" in res[i].info
        for i in (2, 3):
            assert "env_error" not in res[i].info and res[i].info["action_valid"]
        # the restarted actor takes new episodes; the survivors keep theirs
        again = pool.reset([0, 1], seeds=[9, 9])
        assert again[0][1]["task_id"] == again[1][1]["task_id"]
        after = pool.step({0: UP, 2: UP})
        assert "env_error" not in after[0].info and "env_error" not in after[2].info


def test_env_that_kills_its_process_and_one_that_hangs(ray_session):
    from tests.distributed import ray_test_envs  # sent to the workers by value

    ray_session.cloudpickle.register_pickle_by_value(ray_test_envs)
    make_misbehaving = ray_test_envs.make_misbehaving
    with RayEnvPool(
        [make_misbehaving] * 2, num_cpus=0.25, timeout_s=3, start_timeout_s=120
    ) as pool:
        pool.reset(seeds=[0, 1])
        res = pool.step({0: "DIE", 1: UP})
        assert "env_error" in res[0].info and "env_error" not in res[1].info
        res = pool.step({1: "HANG"})
        assert res[1].truncated and "no answer within 3 s" in res[1].info["env_error"]
        obs_info = pool.reset(seeds=[7, 7])  # both actors were restarted
        assert obs_info[0][1]["task_id"] == obs_info[1][1]["task_id"]
        assert pool.step({0: UP, 1: UP})[1].info["action_valid"]


def test_async_actors_with_custom_resources_hold_many_slots(ray_session):
    script = [{0: UP, 1: LEFT, 2: UP, 3: "junk"}, {0: LEFT, 3: UP}]
    local = EnvPool([lambda: gym.make(ENV_ID)] * 4, backend="sync")
    try:
        expected = _trace(local, [1, 2, 3, 4], script)
    finally:
        local.close()
    with RayEnvPool.from_id(
        ENV_ID,
        4,
        envs_per_actor=2,
        num_cpus=0.1,
        resources={"agentgym_test_slot": 1},
        async_actor=True,
    ) as pool:
        assert len(pool.actors) == 2
        assert _trace(pool, [1, 2, 3, 4], script) == expected


def test_ensure_ray_reuses_the_running_ray(ray_session):
    before = ray_session.get_runtime_context().get_node_id()
    assert ensure_ray() is ray_session
    assert ray_session.get_runtime_context().get_node_id() == before


def test_closed_pool_refuses_work(ray_session):
    pool = RayEnvPool.from_id(ENV_ID, 1, num_cpus=0.1)
    pool.close()
    pool.close()
    with pytest.raises(InvalidConfigError):
        pool.step({0: UP})


def test_agentgym_import_is_enough_in_workers():
    assert "agentgym/Sokoban-Tiny-v0" in {r.id for r in agentgym.list_envs()}
