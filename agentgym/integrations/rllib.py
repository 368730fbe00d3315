"""RLlib: agentgym envs as RLlib multi-agent envs, through RLlib's PettingZoo wrapper.

RLlib's ``ParallelPettingZooEnv`` takes any PettingZoo ``ParallelEnv``. Multi-agent
agentgym ids already are one (``agentgym.make_multi``); single-agent ids become a
one-seat ``ParallelEnv`` via :class:`agentgym.wrappers.seats.AsParallelEnv`.
:func:`rllib_env` returns the wrapped env; :func:`register` makes an id available to
RLlib configs by name (``config.environment("agentgym-Sokoban-Tiny-v0")``).

Observations are ``{"text": str, "images": Images}``: the text as it is (an RLlib model
needs a text encoder, or a connector that tokenises) and the images, exact, held in one
:class:`Images` value so RLlib's batching sees the same structure at every step. Actions
are strings; for RLlib's stock action heads pass ``actions=[...]``: each agent's action
space becomes ``Discrete(len(actions))`` and action ``k`` sends ``actions[k]`` to the env
(e.g. Sokoban's four move tool calls).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from agentgym.error import DependencyMissingError, InvalidConfigError
from agentgym.spaces import RGBImages

__all__ = ["Images", "ImagesSpace", "RLlibView", "parallel_env", "register", "rllib_env"]


class Images:
    """One observation's images held as a single value (``.arrays``: HxWx3 uint8 arrays).

    RLlib batches episode data with tree utilities that take a tuple apart and require the
    same structure at every step; the number of images changes between steps (0, 1, a
    zoomed crop...). Held in one object, the images are one leaf: kept exactly, batched
    as an object array.
    """

    __slots__ = ("arrays",)

    def __init__(self, arrays: Sequence[np.ndarray]):
        self.arrays = tuple(arrays)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Images)
            and len(other.arrays) == len(self.arrays)
            and all(np.array_equal(a, b) for a, b in zip(self.arrays, other.arrays))
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Images({[a.shape for a in self.arrays]})"


class ImagesSpace(spaces.Space):
    """The space of :class:`Images` values within an :class:`RGBImages` space's bounds."""

    def __init__(self, images: RGBImages):
        self.images = images
        super().__init__(shape=None, dtype=None)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> Images:
        return Images(self.images.sample())

    def contains(self, x: Any) -> bool:
        return isinstance(x, Images) and self.images.contains(x.arrays)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ImagesSpace) and other.images == self.images

    def __repr__(self) -> str:
        return f"ImagesSpace({self.images!r})"


class RLlibView:
    """A PettingZoo ``ParallelEnv`` shaped for RLlib's stock pipeline.

    Observations: ``{"text": str, "images": Images}`` (see :class:`Images`). Actions: with
    ``actions=[...]`` each agent's action space is ``Discrete(len(actions))`` and index
    ``k`` sends ``actions[k]``; a string still goes through as it is, and any other value
    reaches the env as text (an invalid action with its usual explaining observation).
    Everything else (agents, rewards, infos, ``render``) is the wrapped env's.
    """

    def __init__(self, env: Any, actions: Sequence[str] | None = None):
        if actions is not None and (not actions or not all(isinstance(a, str) for a in actions)):
            raise InvalidConfigError(
                f"actions must be a non-empty list of strings, got {actions!r}."
            )
        self.env = env
        self.actions = list(actions) if actions is not None else None

    def __getattr__(self, name: str) -> Any:
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)

    @property
    def unwrapped(self) -> Any:
        return self.env.unwrapped

    def action_space(self, agent: str) -> Any:
        if self.actions is None:
            return self.env.action_space(agent)
        return spaces.Discrete(len(self.actions))

    def observation_space(self, agent: str) -> Any:
        space = self.env.observation_space(agent)
        return spaces.Dict({"text": space["text"], "images": ImagesSpace(space["images"])})

    def to_text(self, action: Any) -> str:
        """The action string for ``action`` (an index, or text passed through)."""
        if isinstance(action, str):
            return action
        try:
            k = int(action)
        except (TypeError, ValueError):
            return str(action)
        if self.actions is not None and 0 <= k < len(self.actions):
            return self.actions[k]
        return str(action)

    @staticmethod
    def _obs(obs: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        return {a: {"text": o["text"], "images": Images(o["images"])} for a, o in obs.items()}

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        obs, infos = self.env.reset(seed=seed, options=options)
        return self._obs(obs), infos

    def step(self, actions: Mapping[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        obs, *rest = self.env.step({agent: self.to_text(a) for agent, a in actions.items()})
        return (self._obs(obs), *rest)  # type: ignore[return-value]

    def close(self) -> None:
        self.env.close()


def parallel_env(env_id: str, **env_kwargs: Any) -> Any:
    """The PettingZoo ``ParallelEnv`` for any id (single-agent ids get one seat)."""
    import agentgym
    from agentgym.registry import get_record
    from agentgym.wrappers.seats import AsParallelEnv

    record = get_record(env_id)
    if record.multi_agent:
        return agentgym.make_multi(record.id, **env_kwargs)
    return AsParallelEnv(agentgym.make(record.id, **env_kwargs))


def rllib_env(env_id: str, actions: Sequence[str] | None = None, **env_kwargs: Any) -> Any:
    """``ray.rllib``'s ``ParallelPettingZooEnv`` around :func:`parallel_env`.

    Observations carry their images as one :class:`Images` value; ``actions``: optional
    fixed action strings the agents pick by index (:class:`RLlibView`).
    """
    try:
        from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv
    except ImportError as exc:
        raise DependencyMissingError("ray[rllib]", "pip install 'ray[rllib]'") from exc
    return ParallelPettingZooEnv(RLlibView(parallel_env(env_id, **env_kwargs), actions))


def register(env_id: str, name: str | None = None, actions: Sequence[str] | None = None) -> str:
    """Register ``env_id`` with Ray Tune's env registry; returns the name to use.

    The RLlib ``env_config`` dict becomes the env's keyword arguments.
    """
    from ray.tune.registry import register_env

    name = name or "agentgym-" + env_id.split("/")[-1]
    fixed = list(actions) if actions is not None else None
    register_env(name, lambda config: rllib_env(env_id, fixed, **dict(config or {})))
    return name
