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

    acts_inline = True
    """``act`` takes microseconds and never waits, so the rollout engine's lockstep mode
    calls it on its event loop instead of handing it to a thread
    (:mod:`agentgym.rollout.lockstep`)."""

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


class NoisyPolicy:
    """With probability ``epsilon`` a random admissible action, else the base policy's.

    Wrapped around the oracle it records *imperfect* demonstrations (``agentgym demos``):
    a clone of a perfect demonstrator never sees a mistake or a recovery from one. The
    random choice comes from its own generator, so a seed fixes which steps are noisy.
    """

    def __init__(self, base: Policy, epsilon: float, seed: int = 0):
        if not 0.0 <= epsilon <= 1.0:
            raise InvalidConfigError(f"epsilon must be in [0, 1], got {epsilon}.")
        self.base = base
        self.epsilon = float(epsilon)
        self.rng = np.random.default_rng(seed)
        self.random = RandomPolicy(seed + 1)

    def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]:
        out = self.base.act(inputs)
        noisy = [i for i in range(len(inputs)) if self.rng.random() < self.epsilon]
        if noisy:
            for i, gen in zip(noisy, self.random.act([inputs[i] for i in noisy])):
                gen.meta["noise"] = True
                out[i] = gen
        return out


POLICIES = {"random": RandomPolicy, "oracle": OraclePolicy}


def make_policy(name: str, seed: int = 0) -> Policy:
    """A scripted policy by name: ``"random"`` or ``"oracle"``."""
    if name == "random":
        return RandomPolicy(seed)
    if name == "oracle":
        return OraclePolicy()
    raise InvalidConfigError(f"unknown policy {name!r}; choose from {sorted(POLICIES)}.")
