"""Play whole episodes of one env id with a policy, batched across a pool of envs.

What ``agentgym run``, ``demo`` and ``demos`` call: a synchronous front to the rollout
engine (:mod:`agentgym.rollout`) in its lockstep mode. Each turn, every active env
contributes one :class:`~agentgym.agents.PolicyInput` and the policy is called ONCE for
all of them. Episode ``k`` is reset with seed ``seed + k``, so a run is reproducible.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
from tqdm.auto import tqdm

from agentgym.agents.base import Policy
from agentgym.error import InvalidConfigError
from agentgym.pools import EnvPool
from agentgym.registry import get_record
from agentgym.rollout.engine import EpisodeCallbacks, RolloutConfig, RolloutEngine
from agentgym.rollout.events import EpisodeSummary, StepEvent
from agentgym.rollout.records import Episode
from agentgym.rollout.sources import PoolEnvSource


@dataclass(frozen=True)
class EnvFactory:
    """Builds ``gym.make(env_id, **kwargs)``; picklable for process pools. (No chat
    wrapper: the rollout engine keeps each episode's chat itself.)"""

    env_id: str
    kwargs: Mapping[str, Any]

    def __call__(self) -> gym.Env:
        import agentgym  # noqa: F401  (a spawned worker must register the ids)

        return gym.make(self.env_id, **dict(self.kwargs))


def play(
    env_id: str,
    policy: Policy,
    *,
    episodes: int = 1,
    seed: int = 0,
    num_envs: int = 4,
    env_kwargs: Mapping[str, Any] | None = None,
    history_turns: int | None = 4,
    on_reset: Callable[[int, int, dict, dict], None] | None = None,
    on_step: Callable[[StepEvent], None] | None = None,
    on_end: Callable[[int, EpisodeSummary], None] | None = None,
    progress: bool = True,
    backend: str = "thread",
    env_timeout_s: float = 600.0,
) -> list[EpisodeSummary]:
    """Run ``episodes`` episodes and return their summaries in episode order.

    Callbacks: ``on_reset(slot, episode, obs, info)``, ``on_step(event)``,
    ``on_end(slot, summary)``; they let a recorder stream every event to disk (``slot``
    names one attempt at an episode). An env that crashes, or does not answer within
    ``env_timeout_s``, ends its attempt with the cause as the summary's ``error``, and the
    episode is played once more from reset on a fresh env; the summary returned is the
    last attempt's. An exception raised by the policy or a callback stops the run and is
    raised here, after every env is closed.
    """
    record = get_record(env_id)
    if episodes < 1:
        raise InvalidConfigError(f"episodes must be at least 1, got {episodes}.")
    n = min(max(1, num_envs), episodes)
    factory = EnvFactory(record.id, dict(env_kwargs or {}))
    config = RolloutConfig.whole_run(
        n,
        lane_reuse="lowest",
        group_size=1,
        history_turns=history_turns,
        env_timeout_s=env_timeout_s,
    )
    bar = tqdm(total=episodes, desc=record.id, unit="ep", disable=None if progress else True)
    tally = _Tally(record.id, seed, on_reset, on_step, on_end, config.episode_retries)
    pool = EnvPool([factory] * n, backend=backend)
    engine = RolloutEngine(
        PoolEnvSource(pool), policy, range(seed, seed + episodes), config, tally.callbacks()
    )
    try:
        engine.run_to_end(episodes, on_group=lambda _group: bar.update(1), keep=False)
    finally:
        bar.close()
        pool.close()
    return [tally.summaries[k] for k in sorted(tally.summaries)]


class _Tally:
    """Builds each episode's :class:`EpisodeSummary` from the engine's events and passes
    them on to the caller's callbacks. The engine's own summary of an attempt (``on_end``)
    holds its counts, so no callback runs per step unless the caller gave ``on_step``."""

    def __init__(
        self,
        env_id: str,
        seed: int,
        on_reset: Callable[[int, int, dict, dict], None] | None,
        on_step: Callable[[StepEvent], None] | None,
        on_end: Callable[[int, EpisodeSummary], None] | None,
        retries: int,
    ):
        self.env_id, self.seed, self.retries = env_id, seed, retries
        self.user_reset, self.user_step, self.user_end = on_reset, on_step, on_end
        self.summaries: dict[int, EpisodeSummary] = {}

    def callbacks(self) -> EpisodeCallbacks:
        return EpisodeCallbacks(
            on_reset=self.on_reset,
            on_step=self.user_step,
            on_end=self.on_end,
            on_episode=self.on_episode,
        )

    def on_reset(self, slot: int, episode: int, obs: dict, info: dict) -> None:
        task_id = info.get("task_id", "")
        self.summaries[episode] = EpisodeSummary(self.env_id, episode, self.seed + episode, task_id)
        if self.user_reset:
            self.user_reset(slot, episode, obs, info)

    def on_episode(self, ep: Episode) -> None:
        """An episode whose last attempt could not even reset its env stops the run with
        the env's own error (a missing browser, a bad keyword): there is nothing to play."""
        last_try = ep.attempt >= self.retries
        if ep.status == "infra_failure" and ep.chat is None and ep.error is not None and last_try:
            raise ep.error

    def on_end(self, slot: int, ended: EpisodeSummary) -> None:
        summary = self.summaries[ended.episode]
        summary.turns, summary.total_reward = ended.turns, ended.total_reward
        summary.invalid_actions, summary.components = ended.invalid_actions, ended.components
        summary.terminated, summary.truncated = ended.terminated, ended.truncated
        summary.success, summary.error = ended.success, ended.error
        if self.user_end:
            self.user_end(slot, summary)


__all__ = ["EnvFactory", "EpisodeSummary", "StepEvent", "play"]
