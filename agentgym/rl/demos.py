"""Demonstrations: record them with a scripted policy, read them back as training steps.

The pipeline the field uses for LLM agents is demonstrations, then RL: clone a
demonstrator into a starting checkpoint (:mod:`agentgym.rl.sft`), then improve it with
GRPO / GiGPO / Tree-GRPO. Every agentgym env has a privileged oracle; wrapped in
:class:`~agentgym.agents.NoisyPolicy` it gives *imperfect* demonstrations (a fraction
``epsilon`` of random admissible actions), so the clone also sees mistakes and what follows
them. Demonstrations are ordinary ``.agtr`` trajectory files (``agentgym view`` shows them).

:func:`demo_steps` rebuilds, for every recorded step, the exact :class:`PolicyInput` the
training rollouts would have given the policy at that point (system prompt, first
observation, the last ``history_turns`` turn pairs, the merged info with its admissible
actions), paired with the action the demonstrator took.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentgym.agents.base import Policy, PolicyInput
from agentgym.error import InvalidConfigError
from agentgym.registry import get_record
from agentgym.rl.rollouts import Chat
from agentgym.wrappers.chat import observation_message


@dataclass
class DemoStep:
    """One demonstrated step: what the policy would read, and the action taken."""

    input: PolicyInput
    action: str
    episode_id: str
    success: bool
    """Whether the episode this step belongs to succeeded."""


@dataclass
class DemoStats:
    """What :func:`record_demos` wrote."""

    path: str
    episodes: int
    steps: int
    success: float


def record_demos(
    env_id: str,
    out: str | os.PathLike[str],
    *,
    episodes: int = 64,
    epsilon: float = 0.2,
    policy: Policy | None = None,
    seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    num_envs: int = 8,
    progress: bool = False,
) -> DemoStats:
    """Play ``episodes`` TRAIN-split episodes with a demonstrator and record them to ``out``.

    The demonstrator is ``policy`` if given, else the env's oracle with probability
    ``epsilon`` of a random admissible action. Episode ``k`` is reset with seed
    ``seed + k``.
    """
    from agentgym.agents.scripted import NoisyPolicy, OraclePolicy
    from agentgym.episodes import play
    from agentgym.trajectory import Recorder

    if episodes < 1:
        raise InvalidConfigError(f"episodes must be >= 1, got {episodes}.")
    record = get_record(env_id)
    kwargs = dict(env_kwargs or {})
    if kwargs.get("split", "train") != "train":
        raise InvalidConfigError(
            f"demonstrations come from the train split; got split={kwargs['split']!r}. "
            "Held-out evaluation uses the test split, so demos from it would leak."
        )
    demonstrator = policy if policy is not None else NoisyPolicy(OraclePolicy(), epsilon, seed)
    extra = {"demonstrator": type(demonstrator).__name__, "epsilon": epsilon, "seed": seed}
    with Recorder(out, env_id=record.id, header_extra=extra) as rec:
        callbacks: dict[str, Any] = rec.play_callbacks(record.id, seed=seed)
        summaries = play(
            record.id,
            demonstrator,
            episodes=episodes,
            seed=seed,
            env_kwargs=kwargs,
            num_envs=num_envs,
            progress=progress,
            **callbacks,
        )
    steps = sum(s.turns for s in summaries)
    success = sum(s.success for s in summaries) / len(summaries)
    return DemoStats(str(out), len(summaries), steps, success)


def demo_steps(
    path: str | os.PathLike[str],
    *,
    history_turns: int | None = 1,
    only_success: bool = False,
) -> list[DemoStep]:
    """Every step of every complete episode in ``path``, as training inputs and actions."""
    import agentgym.trajectory as trj

    out: list[DemoStep] = []
    with trj.open(path) as reader:
        for ep in reader.episodes():
            if ep.start is None or not ep.complete:
                continue
            if only_success and not ep.success:
                continue
            start = ep.start
            head = []
            if start.get("system_prompt"):
                head.append({"role": "system", "content": start["system_prompt"]})
            head.append(observation_message(_obs(start.get("observation")), "user"))
            chat = Chat(head)
            info: dict[str, Any] = dict(start.get("info") or {})
            for frame in ep.steps:
                action = str(frame.get("action", ""))
                inp = PolicyInput(messages=chat.messages(history_turns), info=dict(info))
                out.append(DemoStep(inp, action, ep.episode_id, ep.success))
                chat.turns.append(
                    (
                        {"role": "assistant", "content": action},
                        observation_message(_obs(frame.get("observation")), "user"),
                    )
                )
                step_info = dict(frame.get("info") or {})
                info = {**info, **step_info}
                if "admissible_actions" not in step_info:
                    info.pop("admissible_actions", None)
    if not out:
        raise InvalidConfigError(
            f"{path} holds no complete demonstration episodes"
            + (" that succeeded" if only_success else "")
            + "; record some with `agentgym demos ENV --episodes N --out FILE.agtr`."
        )
    return out


def _obs(obs: Any) -> dict[str, Any]:
    """A recorded observation as the dict ``observation_message`` takes (images dropped)."""
    if isinstance(obs, Mapping):
        return {"text": str(obs.get("text", "")), "images": []}
    return {"text": "" if obs is None else str(obs), "images": []}
