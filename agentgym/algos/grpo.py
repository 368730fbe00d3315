"""GRPO for multi-turn agents: one episode score per trajectory, normalised in its group.

Rollouts: :func:`agentgym.rollout.groups.group_rollouts` (``group_size`` chains per task seed).

    score_i   = sum_t r_{i,t}                              (episode return)
    A_i       = (score_i - mean_g) / (std_g + eps)         (std unbiased; singleton: raw)
    A_{i,t}   = A_i  for every step t of trajectory i      (broadcast to its rows)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agentgym.algos.advantages import grpo_advantages
from agentgym.rollout.steps import RolloutBatch, StepRecord


@dataclass
class GRPOConfig:
    """GRPO hyperparameters."""

    mode: str = "mean_std_norm"
    """``mean_std_norm`` (GRPO) or ``mean_norm`` (Dr. GRPO style, no std)."""
    eps: float = 1e-6
    """Added to the std."""


def grpo_rows(batch: RolloutBatch, cfg: GRPOConfig) -> tuple[list[StepRecord], np.ndarray]:
    """Training rows (every step) and their advantages."""
    trajs = [t for t in batch.trajectories if t.steps]
    adv_traj = grpo_advantages(
        np.array([t.total_reward for t in trajs]),
        [t.group_id for t in trajs],
        mode=cfg.mode,
        eps=cfg.eps,
    )
    rows = [s for t in trajs for s in t.steps]
    adv = (
        np.concatenate([np.full(len(t.steps), a) for t, a in zip(trajs, adv_traj)])
        if trajs
        else np.zeros(0)
    )
    return rows, adv
