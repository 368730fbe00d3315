"""What the rollout core tells its callers about episodes as they happen.

:class:`StepEvent` is handed to ``on_step`` callbacks and :class:`EpisodeSummary` to
``on_end`` callbacks (and returned by :func:`agentgym.episodes.play`); a
:class:`~agentgym.trajectory.Recorder` streams both to disk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
        (a :class:`~agentgym.pools.StepResult`)."""
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
