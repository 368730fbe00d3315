"""verl-agent: an environment manager for GiGPO-style training over any agentgym env.

verl-agent drives a batch of envs with text actions and needs, per env and step, the
prompt text, an *anchor* observation (GiGPO groups steps whose anchors are equal), the
reward, ``done``, and in the infos ``is_action_valid`` and ``won``.
:class:`AgentGymEnvironmentManager` gives exactly that, with the envs in groups of
``group_n`` sharing a seed (one GRPO/GiGPO group per task):

* ``reset() -> (observations, infos)`` where ``observations = {"text": [...], "image":
  None, "anchor": [...]}``; the anchor is the env's ``state_key`` (a canonical digest of the
  world state: equal states give equal anchors, whatever the history);
* ``step(text_actions) -> (observations, rewards, dones, infos)``; envs already done are
  not stepped again (their reward is 0 and ``done`` stays true).

The prompts are text (``"image": None``): an observation's images are replaced by a note
saying they were left out.

The envs live in any pool with the :class:`agentgym.pools.EnvPool` API, so passing a
:class:`agentgym.pools.RayEnvPool` puts them on Ray actors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from agentgym.error import InvalidConfigError
from agentgym.pools import EnvPool
from agentgym.wrappers.chat import observation_message

__all__ = ["AgentGymEnvironmentManager"]


def _text(obs: dict[str, Any]) -> str:
    """An observation as prompt text; images (Visual, web screenshots) become a note."""
    return str(observation_message(obs, "user", "none")["content"])


class AgentGymEnvironmentManager:
    """Batched text envs for verl-agent's rollout loop.

    Args:
        env_id: A registered id.
        env_num: Number of groups (distinct tasks per batch).
        group_n: Envs per group (rollouts per task).
        seed: Seed of group 0; group ``g`` uses ``seed + g`` (advanced at every reset).
        history_length: How many past (action, observation) pairs the prompt text keeps.
        pool: A pool with the EnvPool API; default a thread :class:`EnvPool`.
        env_kwargs: Keyword arguments for ``gym.make``.
    """

    def __init__(
        self,
        env_id: str,
        env_num: int,
        group_n: int = 1,
        *,
        seed: int = 0,
        history_length: int = 2,
        pool: Any = None,
        env_kwargs: dict[str, Any] | None = None,
    ):
        if env_num < 1 or group_n < 1:
            raise InvalidConfigError(f"env_num and group_n must be >= 1, got {env_num}, {group_n}.")
        import agentgym  # noqa: F401

        self.env_id = env_id
        self.env_num = env_num
        self.group_n = group_n
        self.batch_size = env_num * group_n
        self.seed = seed
        self.history_length = history_length
        kwargs = dict(env_kwargs or {})
        make: Callable[[], gym.Env] = lambda: gym.make(env_id, **kwargs)  # noqa: E731
        self.pool = pool if pool is not None else EnvPool([make] * self.batch_size)
        if self.pool.num_envs != self.batch_size:
            raise InvalidConfigError(
                f"the pool holds {self.pool.num_envs} envs; env_num*group_n is {self.batch_size}."
            )
        self._task: list[str] = [""] * self.batch_size
        self._history: list[list[tuple[str, str]]] = [[] for _ in range(self.batch_size)]
        self._last_obs: list[str] = [""] * self.batch_size
        self._done = np.zeros(self.batch_size, dtype=bool)
        self._won = np.zeros(self.batch_size, dtype=bool)
        self._episode = 0

    # ---- verl-agent's interface -------------------------------------------------------------

    def reset(self, kwargs: Any = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        seeds = [
            self.seed + self._episode * self.env_num + i // self.group_n
            for i in range(self.batch_size)
        ]
        self._episode += 1
        results = self.pool.reset(seeds=seeds)
        infos = []
        anchors = []
        for i, (obs, info) in enumerate(results):
            self._task[i] = info.get("instruction") or obs["text"]
            self._history[i] = []
            self._last_obs[i] = _text(obs)
            anchors.append(info.get("state_key", obs["text"]))
            infos.append(
                {**info, "group_id": i // self.group_n, "is_action_valid": True, "won": False}
            )
        self._done[:] = False
        self._won[:] = False
        obs_batch = {
            "text": [self._prompt(i) for i in range(self.batch_size)],
            "image": None,
            "anchor": anchors,
        }
        return obs_batch, infos

    def step(
        self, text_actions: Sequence[str]
    ) -> tuple[dict[str, Any], np.ndarray, np.ndarray, list[dict[str, Any]]]:
        if len(text_actions) != self.batch_size:
            raise InvalidConfigError(
                f"step needs {self.batch_size} actions (one per env), got {len(text_actions)}."
            )
        active = {i: text_actions[i] for i in range(self.batch_size) if not self._done[i]}
        results = self.pool.step(active) if active else {}
        rewards = np.zeros(self.batch_size, dtype=np.float32)
        infos: list[dict[str, Any]] = []
        anchors: list[str] = []
        for i in range(self.batch_size):
            if i in results:
                r = results[i]
                self._history[i].append((text_actions[i], _text(r.obs)))
                self._last_obs[i] = _text(r.obs)
                rewards[i] = r.reward
                done = r.terminated or r.truncated
                self._done[i] = done
                info = dict(r.info)
                info["is_action_valid"] = bool(info.get("action_valid", False))
                info["won"] = bool(info.get("success", False))
                self._won[i] = info["won"]
                anchors.append(info.get("state_key", r.obs["text"]))
            else:
                info = {"is_action_valid": True, "won": bool(self._won[i]), "already_done": True}
                anchors.append("")
            info["group_id"] = i // self.group_n
            infos.append(info)
        obs_batch = {
            "text": [self._prompt(i) for i in range(self.batch_size)],
            "image": None,
            "anchor": anchors,
        }
        return obs_batch, rewards, self._done.copy(), infos

    def close(self) -> None:
        self.pool.close()

    def success_evaluator(self, *args: Any, **kwargs: Any) -> dict[str, np.ndarray]:
        """Per-env success (``won``) of the current episodes, as verl-agent's metrics expect."""
        return {"success_rate": self._won.astype(np.float64)}

    # ---- prompt text ------------------------------------------------------------------------

    def _prompt(self, i: int) -> str:
        history = self._history[i][-self.history_length :] if self.history_length else []
        parts = [self._task[i]]
        if history:
            parts.append(f"Your last {len(history)} actions and what followed:")
            for action, obs in history:
                parts.append(f"Action: {action}\nResult: {obs}")
        parts.append(f"Current observation:\n{self._last_obs[i]}")
        return "\n\n".join(parts)
