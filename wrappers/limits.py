"""``LimitTurns``: ends an episode as *truncated* after a number of turns."""

from __future__ import annotations

from typing import Any

import gymnasium as gym


class LimitTurns(gym.Wrapper):
    """Truncates the episode after ``max_turns`` steps (a budget, not a failure state).

    Unlike Gymnasium's ``TimeLimit`` it also sets ``info["success"] = False`` when it cuts
    an episode short, as the agentgym contract wants at every episode end, and tells the
    model how many turns remain in ``info["turns_left"]``.

    Examples:
        >>> import agentgym
        >>> env = LimitTurns(gym.make("agentgym/Sokoban-Large-v0"), max_turns=1)
        >>> _ = env.reset(seed=0)
        >>> _, _, terminated, truncated, info = env.step("noop")
        >>> terminated, truncated, info["success"], info["turns_left"]
        (False, True, False, 0)
    """

    def __init__(self, env: gym.Env, max_turns: int):
        super().__init__(env)
        if max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {max_turns}")
        self.max_turns = int(max_turns)
        self._turns = 0

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        self._turns = 0
        obs, info = self.env.reset(**kwargs)
        return obs, {**info, "turns_left": self.max_turns}

    def step(self, action: str) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._turns += 1
        info = {**info, "turns_left": max(0, self.max_turns - self._turns)}
        if self._turns >= self.max_turns and not terminated:
            truncated = True
            info.setdefault("success", False)
        return obs, reward, terminated, truncated, info
