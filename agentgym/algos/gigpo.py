"""GiGPO (Group-in-Group Policy Optimization, arXiv 2505.10978) on group rollouts.

Rollouts: :func:`agentgym.rollout.groups.group_rollouts`. Every step is a row with its episode
group (task + seed), trajectory, reward and anchor state (``state_key`` before the action).

    A_E(i)    = norm_g( sum_t r_{i,t} )                 episode advantage (rows or trajectories)
    G_{i,t}   = sum_k gamma^k r_{i,t+k}                 discounted step return
    A_S(i,t)  = norm_{g, s_{i,t}}( G_{i,t} )            over rows sharing the anchor state
    A(i,t)    = A_E(i) + omega * A_S(i,t)

See :func:`agentgym.algos.advantages.gigpo_advantages` for the flags where the paper and the
official code differ.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from agentgym.algos.advantages import gigpo_advantages
from agentgym.rollout.steps import RolloutBatch, StepRecord


@dataclass
class GiGPOConfig:
    """GiGPO hyperparameters (defaults: the paper's runs)."""

    gamma: float = 0.95
    """Discount of the step returns."""
    omega: float = 1.0
    """Weight of the step advantage."""
    mode: str = "mean_norm"
    """``mean_norm`` or ``mean_std_norm``."""
    episode_stats: str = "rows"
    """``rows`` (official code) or ``trajectories`` (paper Eq. 3)."""
    invalid_penalty: float = 0.0
    """Subtracted from invalid-action rows (the code uses 0.1; agentgym envs already
    include a ``format`` reward component, so 0 by default)."""
    penalty_timing: str = "after"
    """``after`` discounting (code) or ``before``."""
    similarity_threshold: float | None = None
    """Group anchors by text similarity instead of equality (search-style envs)."""
    eps: float = 1e-6


def gigpo_rows(batch: RolloutBatch, cfg: GiGPOConfig) -> tuple[list[StepRecord], np.ndarray]:
    """Training rows (every step) and their GiGPO advantages."""
    rows = batch.steps
    adv = gigpo_advantages(
        np.array([r.reward for r in rows], dtype=np.float64),
        [r.group_id for r in rows],
        [r.traj_id for r in rows],
        [r.state_key for r in rows],
        gamma=cfg.gamma,
        omega=cfg.omega,
        mode=cfg.mode,
        episode_stats=cfg.episode_stats,
        eps=cfg.eps,
        invalid=[not r.valid for r in rows],
        invalid_penalty=cfg.invalid_penalty,
        penalty_timing=cfg.penalty_timing,
        similarity_threshold=cfg.similarity_threshold,
    )
    return rows, np.asarray(adv)


def anchor_group_stats(rows: list[StepRecord], cfg: GiGPOConfig | None = None) -> dict[str, float]:
    """How much step-level signal GiGPO finds in ``rows`` (one or more rollout batches).

    GiGPO differs from GRPO only through ``A_S``, which is zero for a row alone in its anchor
    group and for an anchor group whose rows all have the same discounted return. Returns:

    * ``shared``: fraction of rows whose anchor group has at least 2 rows;
    * ``anchor_size``: mean anchor-group size, weighted by rows;
    * ``step_nonzero`` / ``episode_nonzero``: fraction of rows with ``A_S != 0`` / ``A_E != 0``;
    * ``step_over_episode``: ``mean |omega * A_S| / mean |A_E|`` (NaN when every episode of
      every group scored the same, so ``A_E`` is zero everywhere).
    """
    cfg = cfg or GiGPOConfig()
    if not rows:
        raise ValueError("anchor_group_stats needs at least one row.")
    rewards = np.array([r.reward for r in rows], dtype=np.float64)
    groups = [r.group_id for r in rows]
    trajs = [r.traj_id for r in rows]
    keys = [r.state_key for r in rows]

    def advantages(omega: float) -> np.ndarray:
        return np.asarray(
            gigpo_advantages(
                rewards,
                groups,
                trajs,
                keys,
                gamma=cfg.gamma,
                omega=omega,
                mode=cfg.mode,
                episode_stats=cfg.episode_stats,
                eps=cfg.eps,
            )
        )

    a_e = advantages(0.0)
    a_s = advantages(cfg.omega) - a_e  # omega * A_S
    e_mean = float(np.mean(np.abs(a_e)))
    ratio = float(np.mean(np.abs(a_s))) / e_mean if e_mean > 0 else float("nan")
    size = Counter(zip(groups, keys))
    sizes = np.array([size[gk] for gk in zip(groups, keys)])
    return {
        "rows": float(len(rows)),
        "shared": float(np.mean(sizes >= 2)),
        "anchor_size": float(np.mean(sizes)),
        "step_nonzero": float(np.mean(np.abs(a_s) > 1e-9)),
        "episode_nonzero": float(np.mean(np.abs(a_e) > 1e-9)),
        "step_over_episode": ratio,
    }
