"""Two-seat versions of the user envs: an ``assistant`` seat and a ``user`` seat.

:class:`UserSeatsParallelEnv` turns any single-agent user env into a PettingZoo
``ParallelEnv`` where a policy (an LLM being trained or evaluated as a user simulator, or
a person) plays the user. The scripted core still decides what each reply may release, when
the user stops and every reward of the assistant; the user seat only *words* the reply.
Its words pass the same guard as an LLM wording backend: a reply that leaks a fact the core
has not released (or is empty or too long) is replaced by the core's template.

Turns alternate. On an assistant turn the assistant's action is applied to the inner env;
if it was a ``talk`` that reached the user, the next step is the user's turn, whose action
is the reply text. The seat whose turn it is not gets a waiting observation and its action
is ignored. ``info["turn"]`` names whose turn comes next.

Rewards
    * assistant: the inner env's reward for its step (components in
      ``info["reward_components"]``).
    * user: +1 for a reply the guard accepts, -1 for one it replaces
      (``info["reward_components"] = {"guard": +-1}``), 0 on turns that are not theirs.

``info["reference_reply"]`` (user seat) holds the core's template reply; the policy
:func:`scripted_user_policy` returns it, which makes the two-seat env behave exactly like
the single-agent one.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, ClassVar

import gymnasium as gym
from agentgym.envs.users.base import UserDialogueEnv
from agentgym.simulators.users.wording import Guard, WordingRequest
from pettingzoo import ParallelEnv

from agentgym.registry import get_record
from agentgym.spaces import action_space, observation_space

ASSISTANT, USER = "assistant", "user"
_WAIT = "(Waiting for the other side.)"


class _CaptureWording:
    """A wording backend that records the core's request and returns the template."""

    def __init__(self) -> None:
        self.last: WordingRequest | None = None

    def word(self, request: WordingRequest) -> str:
        self.last = request
        return request.template


def scripted_user_policy(obs: Mapping[str, Any], info: Mapping[str, Any]) -> str:
    """Plays the user seat with the scripted core's own reply."""
    return str(info.get("reference_reply", ""))


class UserSeatsParallelEnv(ParallelEnv):
    """A user env with both seats open; see the module docstring.

    Args:
        env_id: The single-agent user env to seat (e.g. ``"agentgym/UserTravel-v0"``).
        **env_kwargs: Passed to that env's constructor (``split``, ``max_turns``...).
    """

    metadata: ClassVar[dict[str, Any]] = {
        "name": "agentgym_user_seats",
        "family": "users",
        "render_modes": [],
        "is_parallelizable": True,
    }

    def __init__(self, env_id: str, **env_kwargs: Any):
        cls = get_record(env_id).load()
        if not issubclass(cls, UserDialogueEnv):
            raise TypeError(f"{env_id} is not a user dialogue env.")
        self.capture = _CaptureWording()
        self.env: UserDialogueEnv = cls(wording=self.capture, **env_kwargs)
        self.env_id = env_id
        self.guard = Guard()
        self.possible_agents = [ASSISTANT, USER]
        self.agents: list[str] = []
        self.render_mode = None
        self._obs_spaces = {a: observation_space() for a in self.possible_agents}
        self._act_spaces = {a: action_space() for a in self.possible_agents}
        self._turn = ASSISTANT
        self._pending: tuple[Any, ...] | None = None

    @functools.cache  # noqa: B019 - the same object every call (PettingZoo)
    def observation_space(self, agent: str) -> gym.Space:
        return self._obs_spaces[agent]

    @functools.cache  # noqa: B019
    def action_space(self, agent: str) -> gym.Space:
        return self._act_spaces[agent]

    @staticmethod
    def _obs(text: str) -> dict[str, Any]:
        return {"text": text, "images": ()}

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        self.agents = list(self.possible_agents)
        self._turn = ASSISTANT
        self._pending = None
        assert self.env.dialogue is not None
        profile = self.env.dialogue.user_profile()
        user_text = (
            "You play the user in this conversation. Your hidden profile:\n"
            f"{profile}\nYou opened with: {obs['text'].removeprefix('User: ')}\n"
            "Reveal a fact only when the assistant asks about it. " + _WAIT
        )
        infos = {
            ASSISTANT: {**info, "turn": ASSISTANT},
            USER: {"turn": ASSISTANT, "profile": profile, "task_id": info["task_id"]},
        }
        return {ASSISTANT: obs, USER: self._obs(user_text)}, infos

    def step(
        self, actions: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict]:
        if not self.agents:
            raise gym.error.ResetNeeded("Call reset() before step(): the episode has ended.")
        if self._turn == USER and self._pending is not None:
            return self._user_step(actions.get(USER, ""))
        return self._assistant_step(actions.get(ASSISTANT, ""))

    def _assistant_step(self, action: Any) -> tuple[dict, dict, dict, dict, dict]:
        self.capture.last = None
        obs, reward, term, trunc, info = self.env.step(action)
        request = self.capture.last
        if request is not None:
            self._pending = (obs, term, trunc, info, request)
            self._turn = USER
            user_text = (
                f"Assistant: {request.message}\n"
                f"Reply as the user. What your reply may say: {request.template}"
            )
            observations = {ASSISTANT: self._obs(_WAIT), USER: self._obs(user_text)}
            infos = {
                ASSISTANT: {**info, "turn": USER},
                USER: {
                    "turn": USER,
                    "reference_reply": request.template,
                    "assistant_message": request.message,
                },
            }
            return (
                observations,
                {ASSISTANT: float(reward), USER: 0.0},
                {ASSISTANT: False, USER: False},
                {ASSISTANT: False, USER: False},
                infos,
            )
        observations = {ASSISTANT: obs, USER: self._obs(_WAIT)}
        infos = {ASSISTANT: {**info, "turn": ASSISTANT}, USER: {"turn": ASSISTANT}}
        return self._emit(observations, {ASSISTANT: float(reward), USER: 0.0}, term, trunc, infos)

    def _user_step(self, reply: Any) -> tuple[dict, dict, dict, dict, dict]:
        assert self._pending is not None
        obs, term, trunc, info, request = self._pending
        self._pending = None
        self._turn = ASSISTANT
        verdict = self.guard.check(reply, request)
        text = obs["text"].replace(request.template, verdict.text, 1)
        user_reward = 1.0 if verdict.ok else -1.0
        observations = {ASSISTANT: self._obs(text), USER: self._obs(_WAIT)}
        infos = {
            ASSISTANT: {**info, "turn": ASSISTANT, "user_reply_guarded": not verdict.ok},
            USER: {
                "turn": ASSISTANT,
                "reward_components": {"guard": user_reward},
                "guard": verdict.reason,
                "action_valid": verdict.ok,
            },
        }
        return self._emit(observations, {ASSISTANT: 0.0, USER: user_reward}, term, trunc, infos)

    def _emit(
        self, observations: dict, rewards: dict, term: bool, trunc: bool, infos: dict
    ) -> tuple[dict, dict, dict, dict, dict]:
        terms = {a: bool(term) for a in self.possible_agents}
        truncs = {a: bool(trunc) for a in self.possible_agents}
        if term or trunc:
            self.agents = []
        return observations, rewards, terms, truncs, infos

    def oracle_assistant_policy(self, obs: Mapping[str, Any], info: Mapping[str, Any]) -> str:
        """The inner env's privileged oracle, as a seat policy for the assistant."""
        return self.env.oracle_action()

    def close(self) -> None:
        self.env.close()
