"""Where the rollout engine gets its envs: one :class:`EnvSlot` per episode in flight.

A slot is one env the engine resets and steps from a worker thread (the engine bounds each
call with a timeout). A source lends slots and takes them back; a slot whose env failed or
timed out comes back ``healthy=False`` and is never lent again (its env may still be stuck
in a thread, or dead).

* :class:`LocalEnvSource` — ``gym.make(env_id)`` on demand, envs reused across episodes.
* :class:`PoolEnvSource` — the envs of an existing :class:`~agentgym.vector.EnvPool` (any
  backend) or :class:`~agentgym.distributed.RayEnvPool`, one index per slot.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import gymnasium as gym

from agentgym.error import InvalidConfigError
from agentgym.vector import StepResult


class EnvSlot(Protocol):
    """One env lent to one episode."""

    @property
    def env(self) -> Any:
        """The unwrapped env for privileged scripted policies (None when it is remote)."""

    def reset(self, seed: int) -> tuple[dict[str, Any], dict[str, Any]]: ...

    def step(self, action: str) -> StepResult: ...


class EnvSource(Protocol):
    """Lends env slots; ``capacity`` is how many can be out at once (None: unbounded)."""

    capacity: int | None

    def acquire(self) -> EnvSlot: ...

    def release(self, slot: EnvSlot, *, healthy: bool) -> None: ...

    def close(self) -> None: ...


def _close_quietly(env: gym.Env) -> None:
    with contextlib.suppress(Exception):  # a broken env must not break the run retiring it
        env.close()


class _LocalSlot:
    def __init__(self, env: gym.Env):
        self._env = env

    @property
    def env(self) -> Any:
        return self._env.unwrapped

    def reset(self, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
        obs, info = self._env.reset(seed=seed)
        return obs, dict(info)

    def step(self, action: str) -> StepResult:
        obs, reward, terminated, truncated, info = self._env.step(action)
        return StepResult(obs, float(reward), bool(terminated), bool(truncated), dict(info))


class LocalEnvSource:
    """Envs of one id made in this process (``factory`` overrides ``gym.make``).

    Healthy envs are kept and reused by later episodes; a failed one is closed in a
    background thread (its step may still be running) and replaced by a new one.
    """

    def __init__(
        self,
        env_id: str,
        env_kwargs: Mapping[str, Any] | None = None,
        *,
        factory: Callable[[], gym.Env] | None = None,
    ):
        self.env_id = env_id
        self.capacity: int | None = None
        self._factory = factory or (lambda: gym.make(env_id, **dict(env_kwargs or {})))
        self._free: list[_LocalSlot] = []
        self._lock = threading.Lock()
        self._all: list[_LocalSlot] = []
        self.made = 0
        """Envs made so far (replacements of failed envs included)."""

    def acquire(self) -> EnvSlot:
        with self._lock:
            if self._free:
                return self._free.pop()
        slot = _LocalSlot(self._factory())
        with self._lock:
            self._all.append(slot)
            self.made += 1
        return slot

    def release(self, slot: EnvSlot, *, healthy: bool) -> None:
        assert isinstance(slot, _LocalSlot)
        with self._lock:
            if healthy:
                self._free.append(slot)
                return
            self._all.remove(slot)
        threading.Thread(target=_close_quietly, args=(slot._env,), daemon=True).start()

    def close(self) -> None:
        with self._lock:
            slots, self._all, self._free = self._all, [], []
        for slot in slots:
            _close_quietly(slot._env)


class _PoolSlot:
    def __init__(self, pool: Any, index: int):
        self.pool = pool
        self.index = index

    @property
    def env(self) -> Any:
        envs = getattr(self.pool, "envs", None)
        return envs[self.index].unwrapped if envs else None

    def reset(self, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
        obs, info = self.pool.reset([self.index], seeds=[seed])[0]
        return obs, dict(info)

    def step(self, action: str) -> StepResult:
        return self.pool.step({self.index: action})[self.index]


class PoolEnvSource:
    """The envs of an ``EnvPool`` or ``RayEnvPool``; each slot drives one index.

    The pool's own crash handling (a truncated result with ``info["env_error"]``) reaches
    the engine, which marks the episode ``infra_failure``; a failed index is retired.
    """

    def __init__(self, pool: Any):
        self.pool = pool
        self.capacity: int | None = int(pool.num_envs)
        self._free = list(range(pool.num_envs))[::-1]
        self._lock = threading.Lock()

    def acquire(self) -> EnvSlot:
        with self._lock:
            if not self._free:
                raise InvalidConfigError(
                    f"all {self.pool.num_envs} envs of the pool are lent or retired after "
                    "failures; give the engine fewer episodes in flight or a bigger pool."
                )
            return _PoolSlot(self.pool, self._free.pop())

    def release(self, slot: EnvSlot, *, healthy: bool) -> None:
        assert isinstance(slot, _PoolSlot)
        if healthy:
            with self._lock:
                self._free.append(slot.index)
        elif self.capacity is not None:
            self.capacity -= 1

    def close(self) -> None:
        """The pool belongs to the caller, who closes it."""
