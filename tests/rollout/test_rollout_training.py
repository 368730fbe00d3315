"""The trainer's collection through the rollout engine (issue 25).

:func:`agentgym.rollout.training.collect_groups` must give the lockstep
``group_rollouts``'s episodes for the same seeds and a deterministic policy, leave a group
with a crashed env out of the batch whole (never a zero in the advantages), and drive a
real :class:`~agentgym.algos.trainer.Trainer` iteration when ``rollout_engine`` is set.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import pytest

import agentgym  # noqa: F401  (registers the envs)
from agentgym.agents.scripted import OraclePolicy
from agentgym.error import InvalidConfigError
from agentgym.pools import EnvPool
from agentgym.rollout.groups import group_rollouts
from agentgym.rollout.training import collect_groups

SOKOBAN = "agentgym/Sokoban-Tiny-v0"


class CrashOnSeed(gym.Wrapper):
    """Raises in every step of an episode reset with ``seed``."""

    def __init__(self, env: gym.Env, seed: int):
        super().__init__(env)
        self.bad, self.now = seed, None

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        self.now = seed
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> Any:
        if self.now == self.bad:
            raise RuntimeError("simulator crashed")
        return self.env.step(action)


def _by_member(trajectories: list[Any], k: int) -> dict:
    out: dict = {}
    for traj in trajectories:
        member = sum(key[0] == traj.seed for key in out)
        out[(traj.seed, member)] = ([s.generation.text for s in traj.steps], traj.total_reward)
    assert all(m < k for _, m in out)
    return out


def test_collect_groups_equals_group_rollouts_and_drops_a_crashed_group() -> None:
    seeds, k = [0, 1, 2], 2
    with EnvPool([lambda: gym.make(SOKOBAN)] * 6) as pool:
        reference = group_rollouts(pool, OraclePolicy(), seeds, group_size=k, group_prefix="3:")
    with EnvPool([lambda: CrashOnSeed(gym.make(SOKOBAN), seed=1)] * 10) as pool:
        batch, summary = collect_groups(
            pool, OraclePolicy(), seeds, group_size=k, group_prefix="3:", policy_version=3
        )
    # seed 1: both members crash, are retried once on fresh envs, crash again
    assert (summary.infra_failures, summary.retries, summary.excluded_groups) == (4, 2, 1)
    assert summary.causes == {"env_error": 4}
    assert sorted({t.group_id for t in batch.trajectories}) == ["3:0", "3:2"]
    assert {s.policy_version for s in batch.steps} == {3}
    expected = _by_member([t for t in reference.trajectories if t.seed != 1], k)
    assert _by_member(batch.trajectories, k) == expected
    assert batch.success_rate() == 1.0 and batch.env_steps == summary.env_steps


@pytest.mark.slow  # a real training iteration: ~10 s on a loaded 2-core machine
def test_trainer_collects_through_the_engine() -> None:
    from agentgym.agents.transformer import TransformerConfig
    from agentgym.algos.trainer import TrainConfig, Trainer

    cfg = TrainConfig(
        env_id=SOKOBAN,
        algo="grpo",
        iterations=1,
        tasks_per_iter=2,
        group_size=2,
        num_envs=4,
        env_kwargs={"max_turns": 2},
        backend="sync",
        rollout_engine=True,
        minibatch_size=64,
        model=TransformerConfig(d_model=16, n_layers=1, max_prompt_bytes=32),
        progress=False,
    )
    trainer = Trainer(cfg)
    try:
        result = trainer.run()
    finally:
        if trainer.pool is not None:
            trainer.pool.close()
    row = result.metrics[0]
    assert row["episodes"] == 4 and trainer.infra_failures == 0
    assert row["env_steps"] > 0 and math.isfinite(row["loss"])
    with pytest.raises(InvalidConfigError, match="rollout_engine"):
        TrainConfig(algo="tree-grpo", rollout_engine=True).validate()


def test_async_rollouts_example_carries_episodes_between_collections() -> None:
    import re
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "examples/async_rollouts.py", "--collections", "2", "--groups", "2"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == 2
    carried = [re.search(r"carried in (\d+) / out (\d+)", line).groups() for line in lines]  # type: ignore[union-attr]
    # what the first collection paused is what the second took over
    assert carried[0][0] == "0" and carried[1][0] == carried[0][1] != "0"
    assert all(int(re.search(r"(\d+) usable groups", line).group(1)) >= 2 for line in lines)  # type: ignore[union-attr]
