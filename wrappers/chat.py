"""``ChatHistory``: keeps the conversation as OpenAI-style chat messages.

The contract's observations carry only what is new each turn. LLM policies need the chat:
system prompt, the task, then alternating assistant turns and env feedback. This wrapper
keeps it and exposes it as ``wrapper.messages`` and ``info["messages"]``; observations and
rewards pass through unchanged.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

Message = dict[str, Any]

#: The ways an observation's images can travel in a chat message (see
#: :func:`observation_message`).
IMAGE_FORMATS = ("data_url", "array", "pil", "none")

IMAGES_LEFT_OUT_NOTE = (
    "[{n} image(s) left out: this chat is text-only. Use a vision-language model "
    "(images kept) to see them.]"
)


def image_to_data_url(image: np.ndarray) -> str:
    """A lossless PNG data URL of an HxWx3 uint8 array."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def observation_message(
    obs: dict[str, Any], role: str = "user", image_format: str = "data_url"
) -> Message:
    """One observation as a chat message; images become content parts.

    ``image_format="data_url"`` gives OpenAI ``image_url`` parts; ``"array"`` gives
    ``{"type": "image", "image": ndarray}`` parts for local processors (no encoding cost);
    ``"pil"`` gives the same parts with ``PIL.Image`` objects (what Hugging Face processors
    and TRL take); ``"none"`` gives plain-text content: the text and a note saying how many
    images were left out, for text-only models (never base64 text).
    """
    if image_format not in IMAGE_FORMATS:
        raise ValueError(f"image_format must be one of {IMAGE_FORMATS}, got {image_format!r}")
    images: Sequence[np.ndarray] = obs.get("images", ())
    if not images:
        return {"role": role, "content": obs["text"]}
    if image_format == "none":
        note = IMAGES_LEFT_OUT_NOTE.format(n=len(images))
        return {"role": role, "content": f"{obs['text']}\n{note}" if obs["text"] else note}
    parts: list[dict[str, Any]] = []
    for image in images:
        if image_format == "array":
            parts.append({"type": "image", "image": image})
        elif image_format == "pil":
            from PIL import Image

            parts.append({"type": "image", "image": Image.fromarray(image)})
        else:
            parts.append({"type": "image_url", "image_url": {"url": image_to_data_url(image)}})
    parts.append({"type": "text", "text": obs["text"]})
    return {"role": role, "content": parts}


class ChatHistory(gym.Wrapper):
    """Keeps the episode as chat ``messages`` (system, task, then turn pairs).

    Args:
        env: Any agentgym env.
        history_turns: How many of the latest (assistant, feedback) pairs to keep; ``None``
            keeps all. The system prompt and the first observation (the task) always stay.
        image_format: ``"data_url"`` (OpenAI-compatible), ``"array"``, ``"pil"``, or
            ``"none"`` (text only, with a note where images were left out).
        observation_role: Role of env feedback messages (``"user"`` or ``"tool"``).

    Examples:
        >>> import agentgym
        >>> env = ChatHistory(gym.make("agentgym/Sokoban-Tiny-v0"), history_turns=2)
        >>> _, info = env.reset(seed=0)
        >>> [m["role"] for m in info["messages"]]
        ['system', 'user']
        >>> _, _, _, _, info = env.step("hello")
        >>> [m["role"] for m in info["messages"]]
        ['system', 'user', 'assistant', 'user']
    """

    def __init__(
        self,
        env: gym.Env,
        history_turns: int | None = None,
        image_format: str = "data_url",
        observation_role: str = "user",
    ):
        super().__init__(env)
        if history_turns is not None and history_turns < 0:
            raise ValueError(f"history_turns must be >= 0 or None, got {history_turns}")
        if image_format not in IMAGE_FORMATS:
            raise ValueError(f"image_format must be one of {IMAGE_FORMATS}, got {image_format!r}")
        self.history_turns = history_turns
        self.image_format = image_format
        self.observation_role = observation_role
        self._head: list[Message] = []
        self._turns: list[tuple[Message, Message]] = []
        self.tools: list[dict[str, Any]] = []

    @property
    def messages(self) -> list[Message]:
        """System prompt, the task, and the kept turn pairs, oldest first."""
        turns = (
            self._turns
            if self.history_turns is None
            else self._turns[len(self._turns) - self.history_turns :]
            if self.history_turns
            else []
        )
        out = list(self._head)
        for assistant, feedback in turns:
            out.extend((assistant, feedback))
        return out

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self._head = []
        if info.get("system_prompt"):
            self._head.append({"role": "system", "content": info["system_prompt"]})
        self._head.append(observation_message(obs, "user", self.image_format))
        self._turns = []
        self.tools = list(info.get("tools", []))
        info = {**info, "messages": self.messages}
        return obs, info

    def step(self, action: str) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        assistant = {
            "role": "assistant",
            "content": action if isinstance(action, str) else repr(action),
        }
        feedback = observation_message(obs, self.observation_role, self.image_format)
        self._turns.append((assistant, feedback))
        info = {**info, "messages": self.messages}
        return obs, reward, terminated, truncated, info
