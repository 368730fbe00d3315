"""``ReweightReward``: recomputes the reward from its named components with new weights."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym


class ReweightReward(gym.Wrapper):
    """Reward = sum of ``weights[name] * component`` over ``info["reward_components"]``.

    Components not named in ``weights`` keep the env's own weight. Use it to try a shaping
    without rebuilding the env (``gym.make(id, reward_weights=...)`` does the same at
    construction). ``info["reward_weights"]`` shows the weights in force.

    Examples:
        >>> import agentgym
        >>> env = ReweightReward(gym.make("agentgym/Sokoban-Tiny-v0"), {"step": 0.0, "format": 5.0})
        >>> _ = env.reset(seed=0)
        >>> env.step("not a move")[1]
        -5.0
    """

    def __init__(self, env: gym.Env, weights: Mapping[str, float]):
        super().__init__(env)
        base = dict(getattr(env.unwrapped, "reward_weights", {}))
        unknown = sorted(set(weights) - set(base))
        if unknown:
            raise ValueError(
                f"no reward components {unknown} in {type(env.unwrapped).__name__}; "
                f"it has {sorted(base)}."
            )
        self.weights = {**base, **{k: float(v) for k, v in weights.items()}}

    def step(self, action: str) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, _, terminated, truncated, info = self.env.step(action)
        comps = info.get("reward_components", {})
        reward = float(sum(self.weights.get(k, 0.0) * float(v) for k, v in comps.items()))
        return obs, reward, terminated, truncated, {**info, "reward_weights": dict(self.weights)}
