"""Held-out evaluation through the rollout engine (what ``agentgym eval`` runs).

The same tasks as :func:`agentgym.rl.heldout.heldout_eval` (episode ``k`` of ``episodes``
tasks is reset with seed ``seed + k`` on ``split``, each task played ``samples_per_task``
times), but every episode is its own asyncio task: up to ``num_envs`` are in flight, each
steps as soon as its own reply arrives, and no slow reply holds up the others. Episodes are
started in order (task by task, sample by sample), so an episode's ``index`` is ``task x
samples_per_task + sample``.

Failures: a policy request is retried with backoff by the policy; an episode that still
fails (policy error, env crash or timeout) is marked ``infra_failure``, counted, and tried
once more from reset. Finished episodes are handed to ``callbacks`` the moment they end, so
nothing finished is lost whatever happens later. When an episode fails on the policy server
even after that fresh attempt, the server is taken to be down and the run stops (a
:class:`~agentgym.rollout.faults.CollectionError` is raised, the server's error as its
cause). Env failures stop it only as a run of failures with no episode finishing between
them (:class:`~agentgym.rollout.faults.FailureRunError`: the env side is down).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from agentgym.agents.base import Policy
from agentgym.error import InvalidConfigError
from agentgym.registry import get_record
from agentgym.rl.heldout import temperature
from agentgym.rollout.engine import EpisodeCallbacks, RolloutConfig, RolloutEngine
from agentgym.rollout.loop import run_bounded
from agentgym.rollout.records import CollectionSummary, Episode
from agentgym.rollout.sources import LocalEnvSource


def stop_when_policy_is_down(episode_retries: int) -> Any:
    """An ``on_episode`` check: re-raise the error of an attempt that failed on the policy
    server when it was the episode's last attempt."""

    def check(ep: Episode) -> None:
        last = ep.attempt >= episode_retries
        if ep.status == "infra_failure" and last and (ep.cause or "").startswith("policy_error"):
            raise ep.error if ep.error is not None else RuntimeError(ep.cause)

    return check


def engine_heldout(
    env_id: str,
    policy: Policy,
    *,
    episodes: int,
    split: str = "test",
    greedy: bool = False,
    env_kwargs: Mapping[str, Any] | None = None,
    history_turns: int | None = 1,
    num_envs: int = 16,
    seed: int = 0,
    samples_per_task: int = 1,
    callbacks: EpisodeCallbacks | None = None,
    env_timeout_s: float = 300.0,
    episode_retries: int = 1,
) -> CollectionSummary:
    """Play ``episodes`` tasks x ``samples_per_task`` through the engine; see the module
    docstring. Returns the collection's counts (infrastructure failures, retries...)."""
    if episodes < 1 or samples_per_task < 1:
        raise InvalidConfigError(
            f"episodes and samples_per_task must be >= 1, got {episodes}, {samples_per_task}."
        )
    record = get_record(env_id)
    kwargs = {**dict(env_kwargs or {}), "split": split}
    total = episodes * samples_per_task
    config = RolloutConfig(
        group_size=1,  # evaluation needs no GRPO groups: a task's samples are its seed x K
        max_in_flight=max(1, min(num_envs, total)),
        partial=False,
        history_turns=history_turns,
        env_timeout_s=env_timeout_s,
        episode_retries=episode_retries,
        group_prefix="eval:",
    )
    given = callbacks or EpisodeCallbacks()
    stop = stop_when_policy_is_down(episode_retries)

    def on_episode(ep: Episode) -> None:
        if given.on_episode is not None:
            given.on_episode(ep)
        stop(ep)

    hooks = EpisodeCallbacks(given.on_reset, given.on_step, given.on_end, on_episode)
    source = LocalEnvSource(record.id, factory=functools.partial(gym.make, record.id, **kwargs))
    with temperature(policy, 0.0 if greedy else None):
        engine = RolloutEngine(
            source, policy, [seed + k // samples_per_task for k in range(total)], config, hooks
        )
        try:
            return run_bounded(engine.collect_and_close(total)).summary
        finally:
            engine.close()
