"""Reinforcement learning for agentgym envs: GRPO, GiGPO and Tree-GRPO.

* :mod:`agentgym.rl.advantages` — the three advantage estimators on flat per-row arrays
  (numpy or torch), usable from any framework.
* :mod:`agentgym.rl.losses` — token-level PPO-clip with dual clip, k3 KL and entropy.
* :mod:`agentgym.rl.rollouts` — group rollouts (N envs per task, shared seed, one batched
  policy call per turn) and tree rollouts via ``snapshot``/``restore``.
* :mod:`agentgym.rl.grpo`, :mod:`~agentgym.rl.gigpo`, :mod:`~agentgym.rl.tree_grpo` — one
  readable file per algorithm: its hyperparameters and how it turns rollouts into rows.
* :mod:`agentgym.rl.trainer` — the training loop (``agentgym train``).

Heavy modules (torch) are imported lazily, so ``from agentgym.rl import gigpo_advantages``
needs only numpy.
"""

from __future__ import annotations

from typing import Any

from agentgym.rl.advantages import (
    discounted_returns,
    gigpo_advantages,
    group_normalize,
    grpo_advantages,
    tree_grpo_advantages,
)

__all__ = [
    "TrainConfig",
    "Trainer",
    "discounted_returns",
    "gigpo_advantages",
    "group_normalize",
    "grpo_advantages",
    "ppo_clip_loss",
    "train",
    "tree_grpo_advantages",
]


def __getattr__(name: str) -> Any:
    if name == "ppo_clip_loss":
        from agentgym.rl.losses import ppo_clip_loss

        return ppo_clip_loss
    if name in ("TrainConfig", "Trainer", "train"):
        from agentgym.rl import trainer

        return getattr(trainer, name)
    raise AttributeError(f"module 'agentgym.rl' has no attribute {name!r}")
