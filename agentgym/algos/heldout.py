"""The held-out protocol's tools: disjoint splits, distinct task seeds, standard errors.

Evaluation itself is :func:`agentgym.rollout.heldout.heldout_eval` (re-exported here with
its result types, where the trainer and older code import it from). What is here serves the
protocol around it (``examples/learning_protocol.py``): that train and test share no task,
seeds whose tasks are all different, and the mean, standard error and paired difference
the tables report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from agentgym.error import InvalidConfigError
from agentgym.registry import get_record
from agentgym.rollout.heldout import (
    EVAL_SEED_BASE,
    HeldoutResult,
    TaskOutcome,
    heldout_eval,
    temperature,
)

__all__ = [
    "EVAL_SEED_BASE",
    "HeldoutResult",
    "TaskOutcome",
    "check_splits_disjoint",
    "distinct_task_seeds",
    "heldout_eval",
    "mean_se",
    "paired_difference",
    "seed_task_mapper",
    "temperature",
]


def check_splits_disjoint(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> None:
    """Raise unless ``env_id`` has a test split whose task ids are disjoint from train's."""
    env = gym.make(get_record(env_id).id, **dict(env_kwargs or {}))
    try:
        base: Any = env.unwrapped
        if not hasattr(base, "task_ids"):
            raise InvalidConfigError(f"{env_id} has no task_ids(); it cannot be held out.")
        train, test = base.task_ids("train"), base.task_ids("test")
        if not len(test):
            raise InvalidConfigError(f"{env_id} has an empty test split.")
        overlap = sorted(set(train) & set(test))
        if overlap:
            raise InvalidConfigError(
                f"{env_id}: train and test splits share tasks, e.g. {overlap[:3]}."
            )
    finally:
        env.close()


def distinct_task_seeds(
    task_of: Callable[[int], str],
    count: int,
    *,
    start: int = EVAL_SEED_BASE,
    exclude: Sequence[str] = (),
    max_tries: int = 100_000,
) -> list[int]:
    """The first ``count`` reset seeds from ``start`` on whose tasks are all different.

    A reset seed draws its task from the split with replacement, so ``n`` consecutive seeds
    give fewer than ``n`` distinct tasks (200 draws from 1,000 tasks hold about 181).
    ``task_of(seed)`` names the task a seed resets to (see :func:`seed_task_mapper`); a seed
    whose task was already taken, or is in ``exclude`` (e.g. another evaluation set's
    tasks, to keep two sets disjoint), is skipped.
    """
    taken = set(exclude)
    chosen: list[int] = []
    for s in range(start, start + max_tries):
        if len(chosen) == count:
            break
        task = task_of(s)
        if task not in taken:
            taken.add(task)
            chosen.append(s)
    if len(chosen) < count:
        raise InvalidConfigError(
            f"found only {len(chosen)} distinct tasks in {max_tries} seeds, wanted {count}."
        )
    return chosen


def seed_task_mapper(
    env_id: str, split: str, env_kwargs: Mapping[str, Any] | None = None
) -> tuple[Callable[[int], str], Callable[[], None]]:
    """``(task_of, close)``: the task id ``reset(seed=s)`` gives on ``split``, by resetting."""
    env = gym.make(get_record(env_id).id, **{**dict(env_kwargs or {}), "split": split})

    def task_of(seed: int) -> str:
        _, info = env.reset(seed=seed)
        return str(info["task_id"])

    return task_of, env.close


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (sample std with ddof=1 over sqrt(n)).

    The SE of one value is NaN: a single draw says nothing about its spread.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        raise ValueError("mean_se needs at least one value.")
    se = float(np.std(x, ddof=1) / np.sqrt(x.size)) if x.size > 1 else float("nan")
    return float(np.mean(x)), se


def paired_difference(before: Sequence[float], after: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error of ``after - before``, pair by pair (the same episodes).

    Pairing removes what both share (which tasks are easy), so the SE of the difference is
    usually far smaller than the two SEs combined.
    """
    if len(before) != len(after):
        raise ValueError(f"unpaired: {len(before)} values before, {len(after)} after.")
    diff = np.asarray(after, dtype=np.float64) - np.asarray(before, dtype=np.float64)
    return mean_se(diff.tolist())
