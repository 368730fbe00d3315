"""The policy interface: ``act(inputs) -> generations``, one call for a whole batch.

A rollout loop gathers one :class:`PolicyInput` per *active* env (its chat messages, the
latest info with tools and admissible actions, and, for privileged scripted policies only,
the env itself) and makes ONE ``act`` call per turn, so learned policies can batch on a GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np


@dataclass
class PolicyInput:
    """What a policy sees of one env at one turn."""

    messages: list[dict[str, Any]]
    info: dict[str, Any] = field(default_factory=dict)
    env: Any = None
    """The env (unwrapped), for privileged scripted policies only; learned ones ignore it."""


@dataclass
class Generation:
    """One model turn: the text, and for learned policies its tokens and their logprobs."""

    text: str
    token_ids: np.ndarray | None = None
    logprobs: np.ndarray | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Policy(Protocol):
    """Anything with a batched ``act``."""

    def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]: ...
