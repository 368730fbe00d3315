"""Play whole episodes of one env id with a policy, batched across a pool of envs.

This is the loop behind ``agentgym run`` and ``agentgym demo``; training rollouts
(:mod:`agentgym.rl`) build on the same pattern. Each turn, every active env contributes one
:class:`~agentgym.agents.PolicyInput` and the policy is called ONCE for all of them.
Episode ``k`` is reset with seed ``seed + k``, so a run is reproducible.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from tqdm.auto import tqdm

from agentgym.agents.base import Policy, PolicyInput
from agentgym.registry import get_record
from agentgym.vector import EnvPool
from agentgym.wrappers.chat import ChatHistory


@dataclass(frozen=True)
class ChatEnvFactory:
    """Builds ``ChatHistory(gym.make(env_id, **kwargs))``; picklable for process pools."""

    env_id: str
    kwargs: Mapping[str, Any]
    history_turns: int | None = 4

    def __call__(self) -> gym.Env:
        import agentgym  # noqa: F401  (a spawned worker must register the ids)

        return ChatHistory(
            gym.make(self.env_id, **dict(self.kwargs)), history_turns=self.history_turns
        )


@dataclass
class EpisodeSummary:
    """How one episode went."""

    env_id: str
    episode: int
    seed: int
    task_id: str
    turns: int = 0
    total_reward: float = 0.0
    success: bool = False
    invalid_actions: int = 0
    terminated: bool = False
    truncated: bool = False
    error: str | None = None
    components: dict[str, float] = field(default_factory=dict)


@dataclass
class StepEvent:
    """Everything about one step, handed to ``on_step`` callbacks (e.g. a recorder)."""

    slot: int
    episode: int
    action: str
    generation: Any
    obs: dict[str, Any]
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]
    policy_ms: float
    env_ms: float

    @classmethod
    def of(
        cls, slot: int, episode: int, generation: Any, result: Any, policy_ms: float, env_ms: float
    ) -> StepEvent:
        """The event of ``generation`` (its ``text`` was the action) and the env's ``result``
        (a :class:`~agentgym.vector.StepResult`)."""
        return cls(
            slot,
            episode,
            generation.text,
            generation,
            result.obs,
            result.reward,
            result.terminated,
            result.truncated,
            result.info,
            policy_ms,
            env_ms,
        )


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
) -> list[EpisodeSummary]:
    """Run ``episodes`` episodes and return their summaries in episode order.

    Callbacks: ``on_reset(slot, episode, obs, info)``, ``on_step(event)``,
    ``on_end(slot, summary)``; they let a recorder stream every event to disk.
    """
    record = get_record(env_id)
    kwargs = dict(env_kwargs or {})
    n = max(1, min(num_envs, episodes))

    factory = ChatEnvFactory(record.id, kwargs, history_turns)
    pool = EnvPool([factory] * n, backend=backend)
    summaries: dict[int, EpisodeSummary] = {}
    infos: dict[int, dict[str, Any]] = {}
    slot_episode: dict[int, int] = {}
    next_episode = 0
    bar = tqdm(
        total=episodes,
        desc=f"{record.id}",
        unit="ep",
        disable=None if progress else True,
        leave=False,
    )

    def start(slot: int) -> None:
        nonlocal next_episode
        ep = next_episode
        next_episode += 1
        obs, info = pool.reset([slot], seeds=[seed + ep])[0]
        slot_episode[slot] = ep
        infos[slot] = info
        summaries[ep] = EpisodeSummary(record.id, ep, seed + ep, info.get("task_id", ""))
        if on_reset:
            on_reset(slot, ep, obs, info)

    try:
        for slot in range(n):
            start(slot)
        while slot_episode:
            active = sorted(slot_episode)
            inputs = [
                PolicyInput(
                    messages=infos[s]["messages"],
                    info=infos[s],
                    env=pool.envs[s].unwrapped if pool.envs else None,
                )
                for s in active
            ]
            t0 = time.perf_counter()
            generations = policy.act(inputs)
            policy_ms = (time.perf_counter() - t0) * 1000 / max(1, len(active))
            t0 = time.perf_counter()
            results = pool.step({s: g.text for s, g in zip(active, generations)})
            env_ms = (time.perf_counter() - t0) * 1000 / max(1, len(active))
            for s, gen in zip(active, generations):
                res = results[s]
                ep = slot_episode[s]
                summary = summaries[ep]
                summary.turns += 1
                summary.total_reward += res.reward
                summary.invalid_actions += int(not res.info.get("action_valid", True))
                for k, v in res.info.get("reward_components", {}).items():
                    summary.components[k] = summary.components.get(k, 0.0) + float(v)
                infos[s] = {**infos[s], **res.info}
                if on_step:
                    on_step(StepEvent.of(s, ep, gen, res, policy_ms, env_ms))
                if res.terminated or res.truncated:
                    summary.terminated, summary.truncated = res.terminated, res.truncated
                    summary.success = bool(res.info.get("success", False))
                    summary.error = res.info.get("env_error")
                    del slot_episode[s]
                    bar.update(1)
                    if on_end:
                        on_end(s, summary)
                    if next_episode < episodes:
                        start(s)
    finally:
        bar.close()
        pool.close()
    return [summaries[k] for k in sorted(summaries)]
