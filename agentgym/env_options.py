"""The options every env takes, whatever its id: one typed object, :class:`EnvOptions`.

``gym.make(id, split=..., reward_weights=..., max_turns=..., render_mode=...,
max_text_length=..., answer_tool=...)`` works on every single-agent id and means the same on
each, because :class:`agentgym.core.AgentEnv` alone takes these six keywords and applies
them. An env's constructor declares only its own keywords and passes the rest through::

    def __init__(self, *, size: int = 4, **base: Unpack[BaseOptions]):
        super().__init__(**base)

:data:`BaseOptions` types that ``**base`` (so a type checker flags ``SokobanEnv(hieght=5)``);
at run time ``AgentEnv`` refuses a keyword no class of the env takes with
:class:`~agentgym.error.UnknownOptionError`. The rules, and what each option does on envs
where it has no use, are on docs/contract.md ("Env options").
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, TypedDict

from agentgym.error import InvalidConfigError


class BaseOptions(TypedDict, total=False):
    """The keyword arguments every env takes (see :class:`EnvOptions` for each): the type of
    the ``**base`` an env's constructor passes on to ``AgentEnv``."""

    split: str
    reward_weights: Mapping[str, float] | None
    max_turns: int | None
    render_mode: str | None
    max_text_length: int
    answer_tool: bool


@dataclass(frozen=True)
class EnvOptions:
    """The base options an env was built with, checked; ``env.unwrapped.env_options``.

    Each field holds what the caller asked for (``None``: the env's own default). The env
    applies them the same way on every id (``AgentEnv``), checking what depends on the env:
    a split it has, component names it reports, a render mode it lists, and ``answer_tool``
    only where the episode ends with an ``<answer>``.

    Attributes:
        split: The task set: ``"train"`` or ``"test"`` on every env, more where the env lists
            them in ``splits`` (``"valid"`` on SearchQA). Splits are disjoint.
        reward_weights: Weights to change, by reward component (the others keep the env's
            defaults); a name the env does not report is an error.
        max_turns: The turn budget, replacing the env's own (its registered one included);
            the episode is truncated after that many steps. ``None``: the env's budget.
        render_mode: Gymnasium's; ``"ansi"`` (the last observation's text) on every env.
        max_text_length: The most characters of observation text one step returns; longer
            text is cut, ending with a mark that says how much was left out.
        answer_tool: Offer the ``answer`` tool next to ``<answer>`` text, on envs that end
            with an answer (``answers_in_text``); ``True`` on any other env is an error.

    Example:
        >>> EnvOptions(max_turns=5).max_turns
        5
        >>> EnvOptions(max_turns=-1)
        Traceback (most recent call last):
        ...
        agentgym.error.InvalidConfigError: max_turns must be None or a whole number >= 0, got -1.
    """

    split: str = "train"
    reward_weights: Mapping[str, float] | None = None
    max_turns: int | None = None
    render_mode: str | None = None
    max_text_length: int = 1 << 20
    answer_tool: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.split, str):
            raise InvalidConfigError(f"split must be a str, got {self.split!r}.")
        if self.reward_weights is not None:
            object.__setattr__(self, "reward_weights", _weights(self.reward_weights))
        if self.max_turns is not None:
            object.__setattr__(self, "max_turns", _whole(self.max_turns, "max_turns", 0, True))
        if self.render_mode is not None and not isinstance(self.render_mode, str):
            raise InvalidConfigError(
                f"render_mode must be None or a str, got {self.render_mode!r}."
            )
        length = _whole(self.max_text_length, "max_text_length", 1, False)
        object.__setattr__(self, "max_text_length", length)
        if not isinstance(self.answer_tool, bool):
            raise InvalidConfigError(
                f"answer_tool must be True or False, got {self.answer_tool!r}."
            )


#: The base options' names, in :class:`EnvOptions`' order.
BASE_OPTION_NAMES: tuple[str, ...] = tuple(f.name for f in fields(EnvOptions))


def _whole(value: Any, name: str, least: int, none_ok: bool) -> int:
    """``value`` as an int, if it is a whole number (not a bool) of at least ``least``."""
    whole = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if whole and int(value) >= least:
        return int(value)
    allowed = f"None or a whole number >= {least}" if none_ok else f"a whole number >= {least}"
    raise InvalidConfigError(f"{name} must be {allowed}, got {value!r}.")


def _weights(weights: Any) -> dict[str, float]:
    """A copy of ``weights`` as ``{component: float}``; finite real numbers only."""
    if not isinstance(weights, Mapping):
        raise InvalidConfigError(
            f"reward_weights must be a mapping of component name to weight, got {weights!r}."
        )
    out: dict[str, float] = {}
    for name, value in weights.items():
        number = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if not isinstance(name, str) or not number or not math.isfinite(float(value)):
            raise InvalidConfigError(
                f"reward_weights maps a component name to a finite number; got {name!r}: {value!r}."
            )
        out[name] = float(value)
    return out
