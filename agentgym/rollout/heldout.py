"""Held-out evaluation: success on an env's TEST split, through the rollout engine.

Success on the training rollouts says little: a policy can memorise a handful of training
tasks and score well there. The headline metric is success on tasks it never trained on.
Every agentgym env with seeded tasks has disjoint ``train`` and ``test`` splits
(``gym.make(id, split="test")``); :func:`heldout_eval` plays episode ``k`` of ``episodes``
tasks with seed ``seed + k`` on ``split`` (each task ``samples_per_task`` times, so an
episode's ``index`` is ``task x samples_per_task + sample``) and reports per-episode
outcomes. It is the one evaluator: the trainer's every ``eval_every`` iterations, the
learning protocol's, and ``agentgym eval``'s. Two ways to play, one engine:

* ``asynchronous=False`` (default): lockstep, over a pool of ``num_envs`` envs; every turn
  is one policy call for all running episodes, so a trained policy sees exactly the batches
  (and draws exactly the samples) it would in training's group rollouts.
* ``asynchronous=True`` (``agentgym eval``): every episode its own task, up to ``num_envs``
  in flight, each stepping as soon as its own reply arrives, for policies behind a server.

Failures: an episode whose env crashes or times out, or whose policy request still fails
after the policy's retries, is marked ``infra_failure``, counted, never scored, and tried
once more from reset; finished episodes reach the callbacks the moment they end. An
episode that fails on the policy server even after that fresh attempt means the server is
down, and the run stops (:class:`~agentgym.rollout.faults.CollectionError`, the server's
error as its cause); env failures stop it only as a run of failures with no episode
finishing (:class:`~agentgym.rollout.faults.FailureRunError`). In lockstep mode a local
policy's own exception is raised as itself.
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
from agentgym.pools import EnvPool
from agentgym.registry import get_record
from agentgym.rollout.engine import EpisodeCallbacks, RolloutConfig, RolloutEngine
from agentgym.rollout.events import EpisodeSummary, StepEvent
from agentgym.rollout.records import CollectionSummary, Episode
from agentgym.rollout.sources import EnvSource, LocalEnvSource, PoolEnvSource

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

    summary: CollectionSummary = field(default_factory=CollectionSummary)
    """The engine's counts for the run (infrastructure failures, retries, requests...)."""


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


def stop_when_policy_is_down(episode_retries: int) -> Any:
    """An ``on_episode`` check: re-raise the error of an attempt that failed on the policy
    server when it was the episode's last attempt."""

    def check(ep: Episode) -> None:
        last = ep.attempt >= episode_retries
        if ep.status == "infra_failure" and last and (ep.cause or "").startswith("policy_error"):
            raise ep.error if ep.error is not None else RuntimeError(ep.cause)

    return check


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
    on_episode: Callable[[Episode], None] | None = None,
    asynchronous: bool = False,
    env_timeout_s: float = 300.0,
    episode_retries: int = 1,
) -> HeldoutResult:
    """Play ``episodes`` tasks (or the given task ``seeds``) x ``samples_per_task`` on
    ``split`` and return the per-episode outcomes, ordered by seed; see the module docstring.

    ``greedy`` sets the policy's temperature to 0 for the call (byte transformer, HF and
    HTTP policies). ``on_reset``/``on_step``/``on_end`` are
    :func:`agentgym.episodes.play`'s callbacks and ``on_episode(episode)`` sees every
    attempt as it ends, so the episodes can be recorded or streamed as they are played::

        with Recorder("eval.agtr") as rec:
            heldout_eval(env_id, policy, **rec.play_callbacks(
                env_id, env_kwargs={**env_kwargs, "split": "test"}, seed=seed), seed=seed)
    """
    task_seeds = [seed + k for k in range(episodes)] if seeds is None else [int(s) for s in seeds]
    if not task_seeds or samples_per_task < 1:
        raise InvalidConfigError(
            f"episodes and samples_per_task must be >= 1, got {len(task_seeds)}, "
            f"{samples_per_task}."
        )
    record = get_record(env_id)
    mode = "greedy" if greedy else "sampled"
    total = len(task_seeds) * samples_per_task
    n = max(1, min(num_envs, total))
    bar = tqdm(total=total, desc=f"eval {split} {mode}", unit="ep", disable=not progress or None)
    given = EpisodeCallbacks(on_reset, on_step, on_end, on_episode)
    hooks = _hooks(given, episode_retries, asynchronous, bar)
    factory = functools.partial(gym.make, record.id, **{**dict(env_kwargs or {}), "split": split})
    pool = None if asynchronous else EnvPool([factory] * n, backend=backend)
    settings: dict[str, Any] = {
        "history_turns": history_turns,
        "env_timeout_s": env_timeout_s,
        "episode_retries": episode_retries,
        "group_prefix": "eval:",
    }
    try:
        if pool is None:  # async: one group per sample, so no more than n are in flight
            source: EnvSource = LocalEnvSource(record.id, factory=factory)
            groups = [s for s in task_seeds for _ in range(samples_per_task)]
            config = RolloutConfig.whole_run(n, lockstep=False, group_size=1, **settings)
        else:  # lockstep: a task's samples form a group, as in the trainer's rollouts
            source, groups = PoolEnvSource(pool), task_seeds
            config = RolloutConfig.whole_run(n, group_size=samples_per_task, **settings)
        with temperature(policy, 0.0 if greedy else None):
            engine = RolloutEngine(source, policy, groups, config, hooks)
            collection = engine.run_to_end(len(groups))
    finally:
        bar.close()
        if pool is not None:
            pool.close()
    result = HeldoutResult(record.id, split, mode, summary=collection.summary)
    result.env_steps = collection.summary.env_steps
    for ep in sorted(collection.usable_episodes, key=lambda ep: (ep.seed, ep.index)):
        result.outcomes.append(
            TaskOutcome(ep.task_id, ep.seed, ep.success, ep.total_reward, len(ep.steps))
        )
    return result


def _hooks(given: EpisodeCallbacks, retries: int, asynchronous: bool, bar: Any) -> EpisodeCallbacks:
    """The caller's callbacks, a progress tick per finished episode, and (asynchronous)
    the stop when the policy server is down."""
    stop = stop_when_policy_is_down(retries) if asynchronous else None

    def on_episode(ep: Episode) -> None:
        if ep.status == "done":
            bar.update(1)
        if given.on_episode is not None:
            given.on_episode(ep)
        if stop is not None:
            stop(ep)

    return EpisodeCallbacks(given.on_reset, given.on_step, given.on_end, on_episode)
