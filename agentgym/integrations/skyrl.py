"""SkyRL-gym: a ``BaseTextEnv`` over any agentgym env, and its registration.

SkyRL builds envs with ``skyrl_gym.make(name, env_config=..., extras=...)``, where
``extras`` is the dataset row's ``env_extras``; ``init(prompt)`` returns the first chat and
metadata, ``step(action_text)`` returns ``{"observations": [messages], "reward", "done",
"metadata"}``. :class:`AgentGymTextEnv` reads ``env_id``, ``seed`` / ``task_id``,
``env_kwargs`` and the options below from ``extras`` (falling back to ``env_config``), and
replaces the dataset prompt by the env's opening chat. :func:`register` adds it to
SkyRL-gym's registry under ``"agentgym"``.

What SkyRL's generator does with it decides the shape of that chat. Its agent loop keeps
only the messages of ``init()`` (the metadata is dropped) and tokenises them with
``tokenizer.apply_chat_template(chat, add_generation_prompt=True)``: no ``tools=``, and a
text-only template. So by default:

* ``tools_in_prompt=True``: the tools' JSON schemas are written into the system message
  (:func:`agentgym.integrations.tokens.with_tools_in_system`), so they reach the model;
* ``text_only=True``: image parts (Visual ids) become the task's text plus a note that
  images were left out; a text template would otherwise drop the question or print the
  part list. Set ``text_only=False`` for a generator that feeds images to a VLM.

Step rewards are returned per turn (SkyRL places each at the end of its turn's tokens);
``done`` is set when the env terminates or truncates, or after ``max_turns`` turns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentgym.error import DependencyMissingError, InvalidConfigError
from agentgym.integrations.session import TextSession
from agentgym.integrations.tokens import (
    answer_tool_option,
    text_only_messages,
    with_tools_in_system,
)

__all__ = ["ENV_NAME", "AgentGymTextEnv", "register"]

ENV_NAME = "agentgym"

try:
    from skyrl_gym.envs.base_text_env import BaseTextEnv as _Base
    from skyrl_gym.envs.base_text_env import BaseTextEnvStepOutput
except ImportError:  # the adapter still works as a plain class with the same methods
    _Base = object  # type: ignore[assignment, misc]
    BaseTextEnvStepOutput = dict  # type: ignore[assignment, misc]


def _flag(extras: Mapping[str, Any], cfg: Any, key: str, default: bool) -> bool:
    value = extras.get(key, _get(cfg, key, None))
    return default if value is None else bool(value)


def _get(cfg: Any, key: str, default: Any = None) -> Any:
    if cfg is None:
        return default
    if isinstance(cfg, Mapping):
        return cfg.get(key, default)
    return getattr(cfg, key, default)


class AgentGymTextEnv(_Base):  # type: ignore[misc, valid-type]
    """SkyRL-gym text env over an agentgym env id (see the module docstring)."""

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None):
        if _Base is not object:
            super().__init__()
        extras = dict(extras or {})
        env_id = extras.get("env_id") or _get(env_config, "env_id")
        if not env_id:
            raise InvalidConfigError(
                "AgentGymTextEnv needs 'env_id' in the row's env_extras or in env_config."
            )
        env_kwargs = dict(extras.get("env_kwargs") or _get(env_config, "env_kwargs", {}) or {})
        answer_tool = answer_tool_option(extras.get("answer_tool", _get(env_config, "answer_tool")))
        self.session = TextSession(str(env_id), env_kwargs=env_kwargs, answer_tool=answer_tool)
        seed = extras.get("seed")
        self.seed = None if seed is None else int(seed)
        self.task_id = extras.get("task_id")
        self.max_turns = int(extras.get("max_turns") or _get(env_config, "max_turns", 0) or 10**9)
        self.tools_in_prompt = _flag(extras, env_config, "tools_in_prompt", True)
        self.text_only = _flag(extras, env_config, "text_only", True)
        self.turns = 0
        self._closed = False

    def init(self, prompt: Any = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The env's opening chat (the dataset prompt is replaced) and its metadata."""
        start = self.session.reset(self.seed, {"task_id": self.task_id} if self.task_id else None)
        self.turns = 0
        messages = self._render(start.messages)
        if self.tools_in_prompt:
            messages = with_tools_in_system(messages, start.tools)
        return messages, {"tools": start.tools, "task_id": start.info.get("task_id")}

    def step(self, action: str) -> Any:
        turn = self.session.step(action)
        self.turns += 1
        done = turn.done or self.turns >= self.max_turns
        return BaseTextEnvStepOutput(
            observations=[] if done else self._render(turn.messages),
            reward=turn.reward,
            done=done,
            metadata=turn.info,
            postprocessed_action=None,
        )

    def get_metrics(self) -> dict[str, Any]:
        return {
            "success": float(self.session.success),
            "turns": self.turns,
            "total_reward": self.session.total_reward,
        }

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.session.close()

    def _render(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return text_only_messages(messages) if self.text_only else list(messages)


def register(name: str = ENV_NAME) -> None:
    """Register :class:`AgentGymTextEnv` with SkyRL-gym as ``name``."""
    try:
        import skyrl_gym
    except ImportError as exc:
        raise DependencyMissingError("skyrl-gym", "pip install skyrl-gym") from exc
    if name not in skyrl_gym.envs.registration.registry:
        skyrl_gym.register(id=name, entry_point=f"{__name__}:AgentGymTextEnv")
