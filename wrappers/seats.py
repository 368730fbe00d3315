"""Seats: single-agent envs and PettingZoo seats, each viewed as the other.

* ``AsParallelEnv(env)`` — a single-agent env as a PettingZoo ``ParallelEnv`` with one seat,
  so multi-agent tooling (RLlib's PettingZoo wrappers, ``parallel_api_test``) takes it.
* ``SeatAsEnv(parallel_env, seat, others)`` — one seat of a multi-agent env as a Gymnasium
  env, the other seats played by given policies (a simulated user, a fixed opponent).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
from pettingzoo import ParallelEnv

#: A policy for another seat: ``(observation, info) -> action string``.
SeatPolicy = Callable[[dict[str, Any], dict[str, Any]], str]


class AsParallelEnv(ParallelEnv):
    """A single-agent env as a one-seat PettingZoo ``ParallelEnv``.

    Examples:
        >>> import agentgym
        >>> penv = AsParallelEnv(gym.make("agentgym/Sokoban-Tiny-v0"))
        >>> obs, infos = penv.reset(seed=0)
        >>> list(obs), penv.agents
        (['agent'], ['agent'])
    """

    metadata = {"name": "agentgym_single_seat", "render_modes": []}

    def __init__(self, env: gym.Env, agent: str = "agent"):
        self.env = env
        self.agent = agent
        self.possible_agents = [agent]
        self.agents: list[str] = []
        self.render_mode = None

    def observation_space(self, agent: str) -> gym.Space:
        return self.env.observation_space

    def action_space(self, agent: str) -> gym.Space:
        return self.env.action_space

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        obs, info = self.env.reset(seed=seed, options=options)
        self.agents = [self.agent]
        return {self.agent: obs}, {self.agent: info}

    def step(self, actions: Mapping[str, str]) -> tuple[dict, dict, dict, dict, dict]:
        obs, reward, terminated, truncated, info = self.env.step(actions[self.agent])
        a = self.agent
        if terminated or truncated:
            self.agents = []
        return {a: obs}, {a: reward}, {a: terminated}, {a: truncated}, {a: info}

    def close(self) -> None:
        self.env.close()


class SeatAsEnv(gym.Env):
    """One seat of a PettingZoo ``ParallelEnv`` as a Gymnasium env.

    Args:
        parallel_env: The multi-agent env.
        seat: The seat the caller plays.
        others: A policy for every other seat, ``(obs, info) -> action``.
    """

    def __init__(self, parallel_env: ParallelEnv, seat: str, others: Mapping[str, SeatPolicy]):
        missing = sorted(set(parallel_env.possible_agents) - {seat} - set(others))
        if seat not in parallel_env.possible_agents:
            raise ValueError(f"seat {seat!r} not in {parallel_env.possible_agents}")
        if missing:
            raise ValueError(f"no policy given for seats {missing}")
        self.penv = parallel_env
        self.seat = seat
        self.others = dict(others)
        self.observation_space = parallel_env.observation_space(seat)
        self.action_space = parallel_env.action_space(seat)
        self.metadata = dict(getattr(parallel_env, "metadata", {}))
        self._last: dict[str, tuple[dict, dict]] = {}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        obs, infos = self.penv.reset(seed=seed, options=options)
        self._last = {a: (obs[a], infos.get(a, {})) for a in obs}
        return obs[self.seat], infos.get(self.seat, {})

    def step(self, action: str) -> tuple[dict, float, bool, bool, dict]:
        actions = {self.seat: action}
        for agent in self.penv.agents:
            if agent != self.seat and agent in self._last:
                actions[agent] = self.others[agent](*self._last[agent])
        obs, rewards, terms, truncs, infos = self.penv.step(actions)
        self._last = {a: (obs[a], infos.get(a, {})) for a in obs}
        seat = self.seat
        done_all = not self.penv.agents
        terminated = bool(terms.get(seat, False)) or (done_all and not truncs.get(seat, False))
        return (
            obs.get(seat, {"text": "", "images": ()}),
            float(rewards.get(seat, 0.0)),
            terminated,
            bool(truncs.get(seat, False)),
            infos.get(seat, {}),
        )

    def close(self) -> None:
        self.penv.close()
