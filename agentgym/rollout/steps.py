"""The rows a rollout produces and the chat a policy reads while it plays.

* :class:`Chat` — the conversation of one episode: a fixed head (system prompt, task) and a
  window of recent (action, observation) pairs; :func:`merge_step_info` — the info a policy
  reads after a step.
* :class:`StepRecord` — one agent step, one training row; :class:`Trajectory` — one episode
  (or one root-to-leaf path of a tree); :class:`RolloutBatch` — what one round produced.

These types are shared by the rollout engine (:mod:`agentgym.rollout`) and the algorithms
(:mod:`agentgym.algos`), and import neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentgym.agents.base import Generation
from agentgym.wrappers.chat import observation_message

Message = dict[str, Any]


@dataclass
class Chat:
    """The conversation a policy reads: a fixed head and a window of recent turn pairs."""

    head: list[Message]
    turns: list[tuple[Message, Message]] = field(default_factory=list)

    def messages(self, history_turns: int | None) -> list[Message]:
        if history_turns is None:
            kept = self.turns
        else:
            kept = self.turns[len(self.turns) - history_turns :] if history_turns else []
        out = list(self.head)
        for pair in kept:
            out.extend(pair)
        return out

    def branch(self) -> Chat:
        return Chat(list(self.head), list(self.turns))

    @classmethod
    def after_reset(cls, obs: dict[str, Any], info: dict[str, Any]) -> Chat:
        """The chat of a fresh episode: the env's system prompt (if any) and its first
        observation."""
        head: list[Message] = []
        if info.get("system_prompt"):
            head.append({"role": "system", "content": info["system_prompt"]})
        head.append(observation_message(obs, "user"))
        return cls(head)


def merge_step_info(before: dict[str, Any], step_info: dict[str, Any]) -> dict[str, Any]:
    """The info a policy reads after a step: the reset's keys (tools, instruction...)
    updated by the step's; admissible actions only when the step listed them anew."""
    merged = {**before, **step_info}
    if "admissible_actions" not in step_info:
        merged.pop("admissible_actions", None)
    return merged


@dataclass
class StepRecord:
    """One agent step: one training row."""

    group_id: str
    traj_id: int
    step: int
    state_key: str
    """Anchor: the env's ``state_key`` before the action."""
    generation: Generation
    reward: float
    valid: bool
    done: bool
    success: bool = False
    node: int = -1
    """Index of this step's node in its tree (tree rollouts), else -1."""
    policy_version: int | None = None
    """Version of the policy that produced ``generation`` (asynchronous rollouts carry an
    episode across policy updates: :mod:`agentgym.rollout`); None when not tracked."""


@dataclass
class Trajectory:
    """One chain (group rollouts) or one root-to-leaf path (tree rollouts)."""

    traj_id: int
    group_id: str
    seed: int
    task_id: str
    steps: list[StepRecord]
    tree_id: int | None = None

    @property
    def total_reward(self) -> float:
        return float(sum(s.reward for s in self.steps))

    @property
    def success(self) -> bool:
        return bool(self.steps and self.steps[-1].success)


@dataclass
class RolloutBatch:
    """What one round of rollouts produced."""

    trajectories: list[Trajectory]
    env_steps: int
    """Env ``step`` calls executed (the budget unit)."""
    policy_calls: int
    tokens: int
    seconds: float

    @property
    def steps(self) -> list[StepRecord]:
        return [s for t in self.trajectories for s in t.steps]

    def success_rate(self) -> float:
        return float(np.mean([t.success for t in self.trajectories])) if self.trajectories else 0.0
