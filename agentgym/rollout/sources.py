"""Where the rollout engine gets its envs: one :class:`EnvSlot` per episode in flight.

A slot is one env the engine resets and steps from a worker thread (the engine bounds each
call with a timeout). A source lends slots and takes them back; a slot whose env failed or
timed out comes back ``healthy=False`` and is never lent again (its env may still be stuck
in a thread, or dead).

* :class:`LocalEnvSource` — ``gym.make(env_id)`` on demand, envs reused across episodes.
* :class:`PoolEnvSource` — the envs of an existing :class:`~agentgym.vector.EnvPool` (any
  backend) or :class:`~agentgym.distributed.RayEnvPool`, one index per slot.
* :class:`ServeEnvSource` — sessions of an ``agentgym serve`` server over its HTTP
  protocol, one private session (``episode_id``) per slot.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import gymnasium as gym

from agentgym.error import AgentGymError, DependencyMissingError, InvalidConfigError
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


class ServeSessionError(AgentGymError, RuntimeError):
    """An ``agentgym serve`` call failed: the server refused it (e.g. the session was lost:
    timed out, or the server restarted) or could not be reached."""


class _ServeSlot:
    def __init__(self, source: ServeEnvSource, episode_id: str):
        self.source = source
        self.episode_id = episode_id

    @property
    def env(self) -> Any:
        return None  # the env lives in the server

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        body = {**body, "episode_id": self.episode_id}
        try:
            resp = self.source.client.post(self.source.url + path, json=body)
        except Exception as exc:
            raise ServeSessionError(f"{path} on {self.source.url} failed: {exc}") from exc
        if resp.status_code != 200:
            raise ServeSessionError(
                f"{path} of session {self.episode_id} answered HTTP {resp.status_code}: "
                + " ".join(resp.text.split())[:300]
            )
        return dict(resp.json())

    def reset(self, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
        obs = self._post("/reset", {"seed": seed})["observation"]
        info = dict(obs.get("info") or {})
        if obs.get("tools"):
            info["tools"] = obs["tools"]
        return {"text": obs.get("text", "")}, info

    def step(self, action: str) -> StepResult:
        reply = self._post("/step", {"action": {"text": action}})
        info = dict(reply["observation"].get("info") or {})
        terminated, truncated = (
            bool(info.pop("terminated", False)),
            bool(info.pop("truncated", False)),
        )
        if reply.get("done") and not (terminated or truncated):
            terminated = True
        obs = {"text": reply["observation"].get("text", "")}
        return StepResult(obs, float(reply.get("reward") or 0.0), terminated, truncated, info)


class ServeEnvSource:
    """Sessions of an ``agentgym serve`` server (``url``: its root, e.g.
    ``http://127.0.0.1:8000``), one private HTTP session per slot.

    ``capacity`` is the server's ``max_sessions`` (read from ``/health``). A call the
    server refuses (a lost session: it timed out or the server restarted) or that cannot
    reach it raises :class:`ServeSessionError`, which ends the episode as an
    infrastructure failure; the session is dropped and the retry gets a new one.
    Observations carry their text (images are not fetched).
    """

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 120.0):
        try:
            import httpx
        except ImportError as exc:
            raise DependencyMissingError(
                "httpx (needed by ServeEnvSource)", "pip install httpx"
            ) from exc
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.client = httpx.Client(timeout=timeout, headers=headers)
        try:
            health = self.client.get(self.url + "/health").json()
        except Exception as exc:
            self.client.close()
            raise ServeSessionError(f"{self.url}/health did not answer: {exc}") from exc
        self.capacity: int | None = int(health.get("max_sessions") or 0) or None
        self.env_id = str(health.get("env_id", ""))
        self._prefix = f"rollout-{uuid.uuid4().hex[:12]}-"
        self._ids = itertools.count()
        self._free: list[_ServeSlot] = []
        self._lock = threading.Lock()

    def acquire(self) -> EnvSlot:
        with self._lock:
            if self._free:
                return self._free.pop()
            return _ServeSlot(self, f"{self._prefix}{next(self._ids)}")

    def release(self, slot: EnvSlot, *, healthy: bool) -> None:
        assert isinstance(slot, _ServeSlot)
        if healthy:
            with self._lock:
                self._free.append(slot)

    def close(self) -> None:
        """Close the HTTP client; the server closes the sessions once they sit idle."""
        self.client.close()
