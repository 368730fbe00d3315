"""Scripted policies: a uniform random baseline and the env's privileged oracle."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agentgym.agents.base import Generation, Policy, PolicyInput
from agentgym.error import InvalidConfigError
from agentgym.testing import sample_valid_actions


class RandomPolicy:
    """Picks uniformly among ``info["admissible_actions"]``, else a random well-formed call.

    It never sees hidden state: it is the floor any learned agent must beat.
    """

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]:
        out = []
        for item in inputs:
            env = item.env
            action = sample_valid_actions(env, item.info, self.rng, 1)[0] if env is not None else ""
            if env is None and item.info.get("admissible_actions"):
                choices = item.info["admissible_actions"]
                action = choices[int(self.rng.integers(len(choices)))]
            out.append(Generation(text=action))
        return out


class OraclePolicy:
    """Asks each env for its privileged reference action (``env.oracle_action()``).

    This is the upper bound a learned agent aims at, and what ``agentgym demo`` runs.
    """

    def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]:
        out = []
        for item in inputs:
            if item.env is None:
                raise InvalidConfigError("OraclePolicy needs PolicyInput.env (the unwrapped env).")
            out.append(Generation(text=item.env.oracle_action()))
        return out


POLICIES = {"random": RandomPolicy, "oracle": OraclePolicy}


def make_policy(name: str, seed: int = 0) -> Policy:
    """A scripted policy by name: ``"random"`` or ``"oracle"``."""
    if name == "random":
        return RandomPolicy(seed)
    if name == "oracle":
        return OraclePolicy()
    raise InvalidConfigError(f"unknown policy {name!r}; choose from {sorted(POLICIES)}.")
