"""Tree-GRPO (Tree Search for LLM Agent RL, arXiv 2509.21240) on tree rollouts.

Rollouts: :func:`agentgym.rollout.groups.tree_rollouts`: per task ``trees`` (M) trees, each one
full chain, then ``rounds`` (L) rounds expanding ``expand`` (N) nodes per tree from env
snapshots. Each root-to-leaf path is a trajectory; shared prefixes appear in several paths
and their gradients add up, which gives implicit step-level credit.

    s_l       = sum of rewards on the path to leaf l
    A_l       = norm_task(s_l) + norm_tree(s_l)        (mean/unbiased std; singleton: raw)
    A_{l,t}   = A_l for every step t on the path
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agentgym.algos.advantages import tree_grpo_advantages
from agentgym.rollout.steps import RolloutBatch, StepRecord


@dataclass
class TreeGRPOConfig:
    """Tree-GRPO hyperparameters (defaults: the paper's M=2, N=2, L=1)."""

    trees: int = 2
    """M: trees per task, each starting from one full chain."""
    expand: int = 2
    """N: nodes expanded per tree per round (sampled with replacement)."""
    rounds: int = 1
    """L: expansion rounds."""
    eps: float = 1e-6


def tree_rows(batch: RolloutBatch, cfg: TreeGRPOConfig) -> tuple[list[StepRecord], np.ndarray]:
    """Training rows (every step of every root-to-leaf path) and their advantages."""
    trajs = [t for t in batch.trajectories if t.steps]
    adv_leaf = tree_grpo_advantages(
        np.array([t.total_reward for t in trajs]),
        [t.group_id for t in trajs],
        [f"{t.group_id}/{t.tree_id}" for t in trajs],
        eps=cfg.eps,
    )
    rows = [s for t in trajs for s in t.steps]
    adv = (
        np.concatenate([np.full(len(t.steps), a) for t, a in zip(trajs, adv_leaf)])
        if trajs
        else np.zeros(0)
    )
    return rows, adv
