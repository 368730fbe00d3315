"""Collected groups as the flat arrays :mod:`agentgym.algos`'s advantage estimators take.

Infrastructure failures never enter the statistics: with ``exclude="group"`` (the default)
a group with a failed member is left out whole; with ``exclude="episode"`` only the failed
members are left out and the rest of their group is kept (open-instruct's masking). Either
way a failure is never scored as a zero.

>>> import numpy as np
>>> from agentgym.agents.base import Generation
>>> from agentgym.rollout.steps import StepRecord
>>> from agentgym.rollout.records import Episode, Group
>>> def episode(member, rewards, status="done"):
...     ep = Episode("g", 0, member, traj_id=member, status=status)
...     ep.steps = [StepRecord("g", member, t, "", Generation("a"), r, True, False)
...                 for t, r in enumerate(rewards)]
...     return ep
>>> group = Group("g", 0, [episode(0, [1.0]), episode(1, [0.0, 0.0]), episode(2, [], "infra_failure")])
>>> len(training_arrays([group]).rows)
0
>>> arrays = training_arrays([group], exclude="episode")
>>> arrays.scores.tolist(), arrays.traj_ids.tolist()
([1.0, 0.0], [0, 1, 1])
>>> np.round(arrays.grpo_advantages(), 3).tolist()
[0.707, -0.707, -0.707]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from agentgym.algos.advantages import grpo_advantages
from agentgym.error import InvalidConfigError
from agentgym.rollout.engine import RolloutConfig, RolloutEngine
from agentgym.rollout.records import Collection, CollectionSummary, Group
from agentgym.rollout.sources import PoolEnvSource
from agentgym.rollout.steps import RolloutBatch, StepRecord


@dataclass
class TrainingArrays:
    """One entry per row (an agent step) of the kept episodes, and one per episode."""

    rows: list[StepRecord]
    rewards: np.ndarray
    """Per row: the step's reward (float64)."""
    group_ids: list[str]
    """Per row: its group (what ``grpo_advantages`` / ``gigpo_advantages`` group by)."""
    traj_ids: np.ndarray
    """Per row: its episode's trajectory id."""
    state_keys: list[str]
    """Per row: the anchor state before the action (GiGPO)."""
    invalid: np.ndarray
    """Per row: the action was invalid."""
    policy_versions: np.ndarray
    """Per row: the policy version that generated the action (-1: not recorded)."""
    scores: np.ndarray
    """Per episode: its return (sum of rewards)."""
    episode_group_ids: list[str]
    episode_of_row: np.ndarray
    """Per row: the index of its episode in ``scores``."""

    def grpo_advantages(self, mode: str = "mean_std_norm", eps: float = 1e-6) -> np.ndarray:
        """GRPO's episode advantages broadcast to every row."""
        per_episode = grpo_advantages(self.scores, self.episode_group_ids, mode=mode, eps=eps)
        return np.asarray(per_episode, dtype=np.float64)[self.episode_of_row]


def training_arrays(
    collected: Collection | Iterable[Group],
    *,
    exclude: Literal["group", "episode"] = "group",
) -> TrainingArrays:
    """The rows of the kept episodes of ``collected`` (see the module docstring)."""
    if exclude not in ("group", "episode"):
        raise InvalidConfigError(f"exclude must be 'group' or 'episode', got {exclude!r}.")
    groups = collected.groups if isinstance(collected, Collection) else list(collected)
    kept = [
        ep
        for g in groups
        if g.ended and (g.usable or exclude == "episode")
        for ep in g.members
        if ep.status == "done"
    ]
    rows = [s for ep in kept for s in ep.steps]
    return TrainingArrays(
        rows=rows,
        rewards=np.array([r.reward for r in rows], dtype=np.float64),
        group_ids=[r.group_id for r in rows],
        traj_ids=np.array([r.traj_id for r in rows], dtype=np.int64),
        state_keys=[r.state_key for r in rows],
        invalid=np.array([not r.valid for r in rows], dtype=bool),
        policy_versions=np.array(
            [-1 if r.policy_version is None else r.policy_version for r in rows], dtype=np.int64
        ),
        scores=np.array([ep.total_reward for ep in kept], dtype=np.float64),
        episode_group_ids=[ep.group_id for ep in kept],
        episode_of_row=np.repeat(np.arange(len(kept)), [len(ep.steps) for ep in kept]).astype(
            np.int64
        ),
    )


def collect_groups(
    pool: Any,
    policy: Any,
    seeds: Sequence[int],
    *,
    group_size: int,
    history_turns: int | None = 1,
    group_prefix: str = "",
    policy_version: int = 0,
    env_timeout_s: float = 300.0,
) -> tuple[RolloutBatch, CollectionSummary]:
    """One trainer iteration's rollouts through the engine, in place of
    :func:`agentgym.rollout.groups.group_rollouts` (same arguments, same batch type).

    Every seed's group runs to its end over ``pool``'s envs (all of them in flight, no
    barrier across envs); a member that fails on infrastructure is retried once from reset,
    and a group whose member still failed is left out of the batch whole, so its failure
    never enters the advantages as a zero. The summary counts those failures.
    """
    config = RolloutConfig.whole_run(
        int(pool.num_envs) // group_size * group_size,
        lockstep=False,
        group_size=group_size,
        history_turns=history_turns,
        env_timeout_s=env_timeout_s,
        group_prefix=group_prefix,
    )
    engine = RolloutEngine(PoolEnvSource(pool), policy, seeds, config)
    try:
        collection = engine.collect_sync(len(seeds), policy_version=policy_version)
    finally:
        engine.close()
    return collection.to_batch(), collection.summary
