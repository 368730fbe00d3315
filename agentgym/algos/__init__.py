"""The RL algorithms for agentgym envs: GRPO, GiGPO and Tree-GRPO, and the trainer.

* :mod:`agentgym.algos.advantages` — the three advantage estimators on flat per-row arrays
  (numpy or torch), usable from any framework.
* :mod:`agentgym.algos.losses` — token-level PPO-clip with dual clip, k3 KL and entropy.
* :mod:`agentgym.algos.grpo`, :mod:`~agentgym.algos.gigpo`, :mod:`~agentgym.algos.tree_grpo` —
  one readable file per algorithm: its hyperparameters and how it turns rollouts into rows.
* :mod:`agentgym.algos.trainer` — the training loop (``agentgym train``), with its run folder
  (:mod:`~agentgym.algos.rundir`), curves, demonstrations and SFT warm start, and held-out
  evaluation (:mod:`~agentgym.algos.heldout`).

The episodes they learn from are played by the rollout core, :mod:`agentgym.rollout` (the
group and tree rollouts are :mod:`agentgym.rollout.groups`). This package was called
``agentgym.rl``; that name still imports (see :mod:`agentgym.rl`).

Heavy modules (torch) are imported lazily, so ``from agentgym.algos import gigpo_advantages``
needs only numpy.
"""

from __future__ import annotations

from typing import Any

from agentgym.algos.advantages import (
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
        from agentgym.algos.losses import ppo_clip_loss

        return ppo_clip_loss
    if name in ("TrainConfig", "Trainer", "train"):
        from agentgym.algos import trainer

        return getattr(trainer, name)
    raise AttributeError(f"module 'agentgym.algos' has no attribute {name!r}")
