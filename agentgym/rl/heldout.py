"""Held-out evaluation: success on the env's TEST split, greedy and sampled.

Success on the training rollouts says little: a policy can memorise a handful of training
tasks (always answer one secret, replay one level) and score well there. The headline
metric is success on tasks it never trained on. Every agentgym env with seeded tasks has
disjoint ``train`` and ``test`` splits (``gym.make(id, split="test")``); this module plays
``tasks`` test-split episodes with a policy through the same rollout engine as training
(:func:`agentgym.rl.rollouts.run_chains`, so a trained policy sees exactly the input it was
trained on) and reports per-task results.

Used by the trainer every ``eval_every`` iterations and by ``agentgym eval``.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm.auto import tqdm

from agentgym.agents.base import Policy
from agentgym.error import InvalidConfigError
from agentgym.registry import get_record
from agentgym.rl.rollouts import Chain, group_rollouts
from agentgym.rollout.events import EpisodeSummary, StepEvent
from agentgym.vector import EnvPool

#: Reset seeds of held-out episodes start here (any value works; fixed for reproducibility).
EVAL_SEED_BASE = 0


@dataclass
class TaskOutcome:
    """One held-out episode."""

    task_id: str
    seed: int
    success: bool
    total_reward: float
    turns: int


@dataclass
class HeldoutResult:
    """Per-episode outcomes of one held-out evaluation, and their summary."""

    env_id: str
    split: str
    mode: str
    """``greedy`` (temperature 0) or ``sampled``."""
    outcomes: list[TaskOutcome] = field(default_factory=list)
    env_steps: int = 0

    @property
    def success(self) -> float:
        return float(np.mean([o.success for o in self.outcomes])) if self.outcomes else 0.0

    @property
    def return_mean(self) -> float:
        return float(np.mean([o.total_reward for o in self.outcomes])) if self.outcomes else 0.0

    @property
    def stderr(self) -> float:
        """Standard error of the success rate (binomial)."""
        n = len(self.outcomes)
        p = self.success
        return float(np.sqrt(p * (1 - p) / n)) if n else 0.0

    def rows(self) -> list[dict[str, Any]]:
        """Per-episode rows (``mode`` and ``split`` included) for a results file."""
        return [{"mode": self.mode, "split": self.split, **asdict(o)} for o in self.outcomes]


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


@contextlib.contextmanager
def temperature(policy: Policy, value: float | None) -> Iterator[None]:
    """Temporarily set a policy's sampling temperature (``None``: leave it as is).

    Knows the byte transformer (``policy.config.temperature``) and policies with a
    ``temperature`` attribute (the HF and HTTP policies); others are left unchanged.
    """
    if value is None:
        yield
        return
    holder: Any = None
    cfg = getattr(policy, "config", None)
    if cfg is not None and hasattr(cfg, "temperature"):
        holder = cfg
    elif hasattr(policy, "temperature"):
        holder = policy
    if holder is None:
        yield
        return
    old = holder.temperature
    holder.temperature = value
    try:
        yield
    finally:
        holder.temperature = old


def heldout_eval(
    env_id: str,
    policy: Policy,
    *,
    episodes: int = 32,
    split: str = "test",
    greedy: bool = False,
    env_kwargs: Mapping[str, Any] | None = None,
    history_turns: int | None = 1,
    num_envs: int = 32,
    backend: str = "thread",
    seed: int = EVAL_SEED_BASE,
    progress: bool = False,
    samples_per_task: int = 1,
    seeds: Sequence[int] | None = None,
    on_reset: Callable[[int, int, dict, dict], None] | None = None,
    on_step: Callable[[StepEvent], None] | None = None,
    on_end: Callable[[int, EpisodeSummary], None] | None = None,
) -> HeldoutResult:
    """Play ``episodes`` episodes on ``split`` and return per-episode outcomes.

    Episode ``k`` is reset with seed ``seed + k`` in an env made with ``split=split``, so
    the same arguments give the same tasks. With ``samples_per_task`` K > 1 each of those
    ``episodes`` tasks is played K times (episode ``k`` then has seed ``seed + k // K``), for
    pass@k and pass^k. ``greedy`` sets the policy's temperature to 0
    for the call (byte transformer, HF and HTTP policies).

    ``on_reset``/``on_step``/``on_end`` are :func:`agentgym.episodes.play`'s callbacks
    (episode ``k`` as above), so the episodes can be recorded as they are played::

        with Recorder("eval.agtr") as rec:
            heldout_eval(env_id, policy, **rec.play_callbacks(
                env_id, env_kwargs={**env_kwargs, "split": "test"}, seed=seed), seed=seed)
    """
    task_seeds = [seed + k for k in range(episodes)] if seeds is None else [int(s) for s in seeds]
    episodes = len(task_seeds)
    if episodes < 1:
        raise InvalidConfigError(f"episodes must be >= 1, got {episodes}.")
    record = get_record(env_id)
    kwargs = {**dict(env_kwargs or {}), "split": split}
    if samples_per_task < 1:
        raise InvalidConfigError(f"samples_per_task must be >= 1, got {samples_per_task}.")
    n = max(1, min(num_envs, episodes * samples_per_task))
    factory = functools.partial(gym.make, record.id, **kwargs)
    bar = tqdm(
        total=episodes * samples_per_task,
        desc=f"eval {split} {'greedy' if greedy else 'sampled'}",
        unit="ep",
        disable=None if progress else True,  # None: off when stderr is not a terminal
        leave=False,
    )

    def tick(_: Chain) -> None:
        bar.update(1)

    try:
        with EnvPool([factory] * n, backend=backend) as pool:
            pool.reset(seeds=[seed] * n)
            with temperature(policy, 0.0 if greedy else None):
                batch = group_rollouts(
                    pool,
                    policy,
                    task_seeds,
                    group_size=samples_per_task,
                    history_turns=history_turns,
                    group_prefix="eval:",
                    on_chain_end=tick,
                    on_reset=on_reset,
                    on_step=on_step,
                    on_end=on_end,
                )
    finally:
        bar.close()
    result = HeldoutResult(record.id, split, "greedy" if greedy else "sampled")
    result.env_steps = batch.env_steps
    for t in sorted(batch.trajectories, key=lambda t: t.seed):
        result.outcomes.append(
            TaskOutcome(t.task_id, t.seed, t.success, t.total_reward, len(t.steps))
        )
    return result


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
