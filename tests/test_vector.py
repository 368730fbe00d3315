"""EnvPool: active-subset stepping, crash isolation, and backends agreeing."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import threading
import time

import gymnasium as gym
import pytest

import agentgym  # noqa: F401
from agentgym.error import InvalidConfigError
from agentgym.pools import EnvPool, worker_cpus
from agentgym.rollout.sources import PoolEnvSource
from tests.fake_envs import CpuReportingEnv, RaisingEnv
from tests.rollout.faulty import make_stuck_first

make_tiny = functools.partial(gym.make, "agentgym/Sokoban-Tiny-v0")


@pytest.mark.parametrize("backend", ["sync", "thread", "process"])
def test_backends_give_the_same_results(backend):
    with EnvPool([make_tiny] * 3, backend=backend) as pool:
        resets = pool.reset(seeds=[0, 1, 2])
        out = pool.step({0: "x", 2: resets[2][1]["admissible_actions"][0]})
        alone = pool.step_one(1, resets[1][1]["admissible_actions"][-1])
        keys = pool.call("state_key")
    with EnvPool([make_tiny] * 3, backend="sync") as ref:
        ref_resets = ref.reset(seeds=[0, 1, 2])
        ref_out = ref.step({0: "x", 2: ref_resets[2][1]["admissible_actions"][0]})
        ref_alone = ref.step({1: ref_resets[1][1]["admissible_actions"][-1]})[1]
        ref_keys = ref.call("state_key")
    assert [r[1]["task_id"] for r in resets] == [r[1]["task_id"] for r in ref_resets]
    assert sorted(out) == [0, 2]
    assert {i: o.obs["text"] for i, o in out.items()} == {
        i: o.obs["text"] for i, o in ref_out.items()
    }
    assert (alone.obs["text"], alone.reward) == (ref_alone.obs["text"], ref_alone.reward)
    assert keys == ref_keys


def test_a_crashing_env_fails_its_episode_not_the_pool():
    with EnvPool([make_tiny, RaisingEnv], backend="thread") as pool:
        pool.reset(seeds=[0, 0])
        out = pool.step({0: "x", 1: ""})
        alone = pool.step_one(1, "")
    assert out[1].truncated and "ValueError: empty" in out[1].info["env_error"]
    assert out[1].info["success"] is False
    assert not out[0].truncated
    assert alone.truncated and "ValueError: empty" in alone.info["env_error"]


def test_bad_indices_and_lengths_are_clear_errors():
    with EnvPool([make_tiny], backend="sync") as pool:
        with pytest.raises(InvalidConfigError, match="out of range"):
            pool.step({3: "x"})
        with pytest.raises(InvalidConfigError, match="out of range"):
            pool.step_one(-1, "x")
        with pytest.raises(InvalidConfigError, match="1 indices but 2 seeds"):
            pool.reset(seeds=[1, 2])
    with pytest.raises(InvalidConfigError, match="backend"):
        EnvPool([make_tiny], backend="gpu")


def test_pinned_workers_and_their_children_each_hold_one_cpu_round_robin():
    allowed = sorted(os.sched_getaffinity(0))
    with EnvPool([CpuReportingEnv] * 3, backend="process", pin_cpus=True) as pool:
        reports = pool.call("cpus")
    expected = [allowed[i % len(allowed)] for i in range(3)]
    assert [r["worker"] for r in reports] == [[cpu] for cpu in expected]
    assert [r["child"] for r in reports] == [[cpu] for cpu in expected]
    with EnvPool([CpuReportingEnv], backend="process") as pool:  # unpinned: every CPU
        assert pool.call("cpus") == [{"worker": allowed, "child": allowed}]


def test_worker_cpus_go_round_robin_over_the_allowed_cpus(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {7, 2, 5})
    assert worker_cpus(5) == [2, 5, 7, 2, 5]


def test_pinning_threads_is_a_clear_error():
    with pytest.raises(InvalidConfigError, match="pin_cpus=True needs backend='process'"):
        EnvPool([make_tiny], backend="thread", pin_cpus=True)


def test_close_is_idempotent():
    pool = EnvPool([make_tiny], backend="process")
    pool.close()
    pool.close()


def test_play_runs_on_a_process_pool_with_a_policy_that_needs_no_env_handle():
    from agentgym.agents import RandomPolicy
    from agentgym.episodes import play

    threaded = play("agentgym/Sokoban-Tiny-v0", RandomPolicy(0), episodes=3, progress=False)
    spawned = play(
        "agentgym/Sokoban-Tiny-v0", RandomPolicy(0), episodes=3, progress=False, backend="process"
    )
    assert [s.task_id for s in spawned] == [s.task_id for s in threaded]
    assert all(s.turns > 0 for s in spawned)


def test_process_workers_step_at_the_same_time(tmp_path):
    """Each step waits at a barrier for the other workers: only a pool that sends every
    request before reading any reply lets them meet (stepped one after another, each would
    wait alone until its patience ran out)."""
    import functools

    from tests.barrier_env import make

    folder = tmp_path / "barrier"
    folder.mkdir()
    fns = [functools.partial(make, str(folder), f"env{i}", 3) for i in range(3)]
    with EnvPool(fns, backend="process") as pool:
        pool.reset(seeds=[0, 1, 2])
        out = pool.step({0: "meet", 1: "meet", 2: "meet"})
    assert [r.obs["text"] for r in out.values()] == ["together"] * 3


def test_a_dead_process_worker_fails_its_own_step_and_leaves_the_others_in_step():
    with EnvPool([make_tiny, make_tiny], backend="process") as pool:
        pool.reset(seeds=[0, 1])
        pool._remote[0]._proc.kill()
        pool._remote[0]._proc.join()
        out = pool.step({0: "x", 1: "x"})
        assert out[0].truncated and "env_error" in out[0].info
        assert "env_error" not in out[1].info
        again = pool.step({1: "x"})  # the live worker's pipe holds no stale reply
        assert again[1].info["action_valid"] is False and "env_error" not in again[1].info


_CTRL_C_CHILD = """
import sys, time
from agentgym.pools import EnvPool
from agentgym.episodes import EnvFactory
pool = EnvPool([EnvFactory("agentgym/Sokoban-Tiny-v0", {})] * 2, backend="process")
pool.reset(seeds=[0, 1])  # both workers are up and waiting for their next command
try:  # "ready" inside the try: a Ctrl-C right after it must land in the handler
    print("ready", flush=True)
    while True:
        time.sleep(0.05)
except KeyboardInterrupt:
    pool.close()
    print("closed", flush=True)
"""


def test_ctrl_c_on_a_process_pool_lets_the_parent_close_its_workers_quietly():
    """Ctrl-C goes to the whole process group: the workers leave it to the parent, so the
    user sees no KeyboardInterrupt traceback per worker and the parent's close still works."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _CTRL_C_CHILD],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's job would be
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert "closed" in out, err[-2000:]
    assert "KeyboardInterrupt" not in err and "Traceback" not in err, err[-2000:]


def _worker_pids(pool: EnvPool) -> list[int]:
    return [remote._proc.pid for remote in pool._remote]


def test_a_dead_worker_is_replaced_when_its_index_is_next_reset():
    """A worker killed between episodes (out of memory, say) costs nothing: the next reset
    of its index finds the pipe broken, starts a new worker and resets there."""
    import psutil

    with EnvPool([make_tiny, make_tiny], backend="process") as pool:
        first = pool.reset(seeds=[0, 1])
        old = _worker_pids(pool)
        pool._remote[0]._proc.kill()
        pool._remote[0]._proc.join()
        assert pool.step({0: "x"})[0].info["env_error"]  # its step fails, as before
        again = pool.reset([0, 1], seeds=[0, 1])
        assert [info["task_id"] for _, info in again] == [info["task_id"] for _, info in first]
        assert pool.restarts == 1 and _worker_pids(pool)[1] == old[1] != _worker_pids(pool)[0]
        assert "env_error" not in pool.step({0: "x"})[0].info
        pids = _worker_pids(pool)
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie" for p in pids)


@pytest.mark.parametrize("backend", ["thread", "process"])
def test_restart_puts_a_fresh_env_at_an_index(backend):
    with EnvPool([make_tiny, make_tiny], backend=backend) as pool:
        pool.reset(seeds=[0, 1])
        before = _worker_pids(pool) if backend == "process" else list(pool.envs)
        pool.restart([1])
        after = _worker_pids(pool) if backend == "process" else list(pool.envs)
        assert after[0] == before[0] and after[1] != before[1] and pool.restarts == 1
        ((_, info),) = pool.reset([1], seeds=[4])
        assert info["task_id"] == gym.make("agentgym/Sokoban-Tiny-v0").reset(seed=4)[1]["task_id"]
        if backend == "process":  # the old worker was killed, not left behind
            import psutil

            assert (
                not psutil.pid_exists(before[1]) or psutil.Process(before[1]).status() == "zombie"
            )
        with pytest.raises(InvalidConfigError, match="out of range"):
            pool.restart([2])
        if backend != "process":  # a slot lent before the restart hands out the new env
            slot = PoolEnvSource(pool).acquire()
            first = slot.env
            assert first is pool.envs[slot.index].unwrapped
            pool.restart([slot.index])
            assert slot.env is pool.envs[slot.index].unwrapped and slot.env is not first
    with pytest.raises(InvalidConfigError, match="closed"):
        pool.restart([0])


def test_a_reset_cut_short_by_a_restart_fails_and_leaves_the_new_worker_alone(tmp_path):
    """A reset whose worker ``restart`` killed (the rollout engine gave up on it and had
    the env replaced) fails. It must not go on to reset the new worker as if its own had
    died: ``restart`` and the env's next user talk to that one, and two callers on one
    pipe read each other's replies (a reset answered with another seed's observation)."""
    factory = functools.partial(make_stuck_first, "agentgym/Sokoban-Tiny-v0", str(tmp_path))
    outcome: dict[str, object] = {}

    def reset() -> None:
        try:
            outcome["value"] = pool.reset([0], seeds=[3])
        except Exception as exc:
            outcome["error"] = exc

    with EnvPool([factory], backend="process") as pool:
        stuck = threading.Thread(target=reset, daemon=True)
        stuck.start()
        deadline = time.monotonic() + 120
        while not (tmp_path / "entered").exists():  # the worker is inside its reset
            assert time.monotonic() < deadline, "the stuck reset never started"
            time.sleep(0.05)
        pool.restart([0])
        stuck.join(120)
        assert not stuck.is_alive() and isinstance(outcome.get("error"), (EOFError, OSError))
        ((_, info),) = pool.reset([0], seeds=[5])
        assert info["task_id"] == make_tiny().reset(seed=5)[1]["task_id"]
        assert pool.restarts == 1


class PoolLike:
    """What a pool-like (a RayEnvPool) offers the rollout engine: no ``step_one``."""

    def __init__(self, pool: EnvPool):
        self.pool, self.num_envs = pool, pool.num_envs

    def reset(self, *args, **kwargs):
        return self.pool.reset(*args, **kwargs)

    def step(self, actions):
        return self.pool.step(actions)

    def call(self, *args, **kwargs):
        return self.pool.call(*args, **kwargs)


def test_a_pool_without_step_one_plays_the_same_episodes():
    from agentgym.agents.scripted import RandomPolicy
    from agentgym.rollout import RolloutConfig, RolloutEngine

    def played(wrap) -> list[list[str]]:
        with EnvPool([make_tiny] * 2) as pool:
            source = PoolEnvSource(wrap(pool))
            config = RolloutConfig.whole_run(2, group_size=1)
            collection = RolloutEngine(source, RandomPolicy(3), range(4), config).run_to_end(4)
        return [[s.generation.text for s in ep.steps] for ep in collection.episodes]

    assert not hasattr(PoolLike, "step_one")
    assert played(PoolLike) == played(lambda pool: pool)
