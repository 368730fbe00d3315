"""Where the rollout engine gets its envs: one :class:`EnvSlot` per episode in flight.

A slot is one env the engine resets and steps from a worker thread (the engine bounds each
call with a timeout). A source lends slots and takes them back (the engine gives them back
from a worker thread too); a slot whose env failed or timed out comes back
``healthy=False`` and its env is never used again (it may still be stuck in a thread, or
dead): the source replaces it or retires it, and ``capacity`` counts the envs it can still
lend. ``close()`` frees everything the source holds.

* :class:`LocalEnvSource` — ``gym.make(env_id)`` on demand, envs reused across episodes.
* :class:`PoolEnvSource` — the envs of an existing :class:`~agentgym.pools.EnvPool` (any
  backend; a failed env is replaced by a fresh one) or
  :class:`~agentgym.pools.RayEnvPool`, one index per slot.
* :class:`ServeEnvSource` — sessions of an ``agentgym serve`` server over its HTTP
  protocol, one private session (``episode_id``) per slot.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

import gymnasium as gym

from agentgym.error import AgentGymError, DependencyMissingError, InvalidConfigError
from agentgym.pools import StepResult


class EnvSlot(Protocol):
    """One env lent to one episode."""

    @property
    def env(self) -> Any:
        """The unwrapped env for privileged scripted policies (None when it is remote)."""

    def reset(
        self, seed: int, options: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]: ...

    def step(self, action: str) -> StepResult: ...

    def snapshot(self) -> Any:
        """The env's state, for :meth:`restore` (a search's branch point)."""

    def restore(self, snapshot: Any) -> None: ...


class EnvSource(Protocol):
    """Lends env slots; ``capacity`` is how many can be out at once (None: unbounded)."""

    @property
    def capacity(self) -> int | None:
        """Slots that can be out at once now; it shrinks when failed envs are retired."""

    def acquire(self) -> EnvSlot: ...

    def release(self, slot: EnvSlot, *, healthy: bool) -> None: ...

    def close(self) -> None: ...


def _close_quietly(env: gym.Env) -> None:
    with contextlib.suppress(Exception):  # a broken env must not break the run retiring it
        env.close()


def _snapshotting(env: Any) -> Any:
    """``env`` when it can snapshot and restore its state, else a clear error."""
    if not (callable(getattr(env, "snapshot", None)) and callable(getattr(env, "restore", None))):
        raise InvalidConfigError(
            f"{type(env).__name__} cannot snapshot and restore its state, which branching "
            "(keep_branch_points, restored EpisodeStarts) needs."
        )
    return env


def _foreign(slot: object, source: object) -> InvalidConfigError:
    return InvalidConfigError(
        f"{type(source).__name__} was given back a slot it did not lend: {slot!r}."
    )


class _LocalSlot:
    def __init__(self, env: gym.Env):
        self._env = env
        self._was_reset = False
        self._closing = threading.Lock()

    def close(self) -> None:
        """Close the env once, whoever asks first (a late release racing the source's close):
        only the caller that takes the lock closes it, and nobody ever gives it back."""
        if self._closing.acquire(blocking=False):
            _close_quietly(self._env)

    @property
    def env(self) -> Any:
        return self._env.unwrapped

    def reset(
        self, seed: int, options: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        obs, info = self._env.reset(seed=seed, options=None if options is None else dict(options))
        self._was_reset = True
        return obs, dict(info)

    def step(self, action: str) -> StepResult:
        obs, reward, terminated, truncated, info = self._env.step(action)
        return StepResult(obs, float(reward), bool(terminated), bool(truncated), dict(info))

    def snapshot(self) -> Any:
        return _snapshotting(self._env.unwrapped).snapshot()

    def restore(self, snapshot: Any) -> None:
        core = _snapshotting(self._env.unwrapped)
        if not self._was_reset:  # the wrappers refuse a step before their first reset
            self._env.reset()
            self._was_reset = True
        core.restore(snapshot)


class LocalEnvSource:
    """Envs of one id made in this process (``factory`` overrides ``gym.make``).

    Healthy envs are kept and reused by later episodes; a failed one is closed in a
    background thread (its step may still be running) and replaced by a new one.
    :meth:`close` closes every env it made, lent or not, and waits (at most
    ``close_timeout_s``) for those being closed in the background.
    """

    takes_back_inline = True
    """A healthy env comes back with a lock and a list append, so the engine does it on its
    event loop: the env is free again before the next episode asks for one (lending may
    make an env, which can be slow, so that stays in a worker thread)."""

    def __init__(
        self,
        env_id: str,
        env_kwargs: Mapping[str, Any] | None = None,
        *,
        factory: Callable[[], gym.Env] | None = None,
        close_timeout_s: float = 60.0,
    ):
        self.env_id = env_id
        self.capacity: int | None = None
        self._factory = factory or (lambda: gym.make(env_id, **dict(env_kwargs or {})))
        self._free: list[_LocalSlot] = []
        self._lock = threading.Lock()
        self._all: list[_LocalSlot] = []
        self._closing: list[threading.Thread] = []
        self._closed = False
        self.close_timeout_s = close_timeout_s
        self.made = 0
        """Envs made so far (replacements of failed envs included)."""

    def acquire(self) -> EnvSlot:
        """A free env, or a new one. Raises :class:`SourceClosedError` once :meth:`close`
        has begun (an env whose making was under way then is closed, not lent)."""
        with self._lock:
            if self._closed:
                raise SourceClosedError(f"the {self.env_id} source is closed")
            if self._free:
                return self._free.pop()
        slot = _LocalSlot(self._factory())
        with self._lock:
            closed = self._closed
            if not closed:
                self._all.append(slot)
                self.made += 1
        if closed:  # close() ran while this env was being made: nobody else would close it
            slot.close()
            raise SourceClosedError(f"the {self.env_id} source was closed while an env was made")
        return slot

    def release(self, slot: EnvSlot, *, healthy: bool) -> None:
        """Take an env back: kept when ``healthy``, else closed in the background (its step
        may still be running). After :meth:`close`, closed here before this returns."""
        if not isinstance(slot, _LocalSlot):
            raise _foreign(slot, self)
        with self._lock:
            if healthy and not self._closed:
                self._free.append(slot)
                return
            if slot in self._all:
                self._all.remove(slot)
            late = self._closed
            if not late:
                closer = threading.Thread(target=slot.close, daemon=True)
                self._closing.append(closer)
        if late:  # nobody joins a background closer any more
            slot.close()
        else:
            closer.start()

    def close(self) -> None:
        """Close every env made here; wait for those closing in the background."""
        with self._lock:
            self._closed = True
            slots, self._all, self._free = self._all, [], []
            closing, self._closing = self._closing, []
        for slot in slots:
            slot.close()
        deadline = time.monotonic() + self.close_timeout_s
        for closer in closing:
            closer.join(max(0.0, deadline - time.monotonic()))


class SourceClosedError(AgentGymError, RuntimeError):
    """An env was asked of a source that is closed (or closing)."""


class _PoolSlot:
    """Index ``index`` of the pool: one slot per index, lent again and again, and a new
    one when the index gets a fresh env (which must be reset before a restore)."""

    def __init__(self, pool: Any, index: int):
        self.pool = pool
        self.index = index
        self._was_reset = False
        self._step_one = getattr(pool, "step_one", None)
        self._wrapped: Any = None
        self._core: Any = None

    @property
    def env(self) -> Any:
        envs = getattr(self.pool, "envs", None)
        if not envs:
            return None
        wrapped = envs[self.index]
        if wrapped is not self._wrapped:  # looked up once per env, not once per step
            self._wrapped, self._core = wrapped, wrapped.unwrapped
        return self._core

    def reset(
        self, seed: int, options: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        if options is None:  # pool-likes without reset options keep working
            obs, info = self.pool.reset([self.index], seeds=[seed])[0]
        else:
            obs, info = self.pool.reset([self.index], seeds=[seed], options=[options])[0]
        self._was_reset = True
        return obs, dict(info)

    def step(self, action: str) -> StepResult:
        if self._step_one is not None:
            return self._step_one(self.index, action)  # type: ignore[no-any-return]
        return self.pool.step({self.index: action})[self.index]

    def snapshot(self) -> Any:
        return self.pool.call("snapshot", indices=[self.index])[0]

    def restore(self, snapshot: Any) -> None:
        if not self._was_reset:  # the wrappers refuse a step before their first reset
            self.pool.reset([self.index])
            self._was_reset = True
        self.pool.call("restore", snapshot, indices=[self.index])


class PoolEnvSource:
    """The envs of an ``EnvPool`` or ``RayEnvPool``; each slot drives one index.

    The pool's own crash handling (a truncated result with ``info["env_error"]``) reaches
    the engine, which marks the episode ``infra_failure``. A failed index gets a fresh env
    when the pool can make one (``pool.restart([index])``: :meth:`EnvPool.restart
    <agentgym.pools.EnvPool.restart>`, a new worker process for ``backend="process"``);
    a restart that fails (the new worker was killed or crashed while starting) is tried
    again, up to ``restart_attempts`` times in all, since one lost start is no reason to
    lose the env for good. An index the pool cannot restart, or whose every attempt failed,
    is retired. ``capacity`` counts the live indices.
    """

    lends_inline = True
    """Lending an index and taking a healthy one back are a lock and a list operation, so
    the engine does both on its event loop (no worker-thread hop per episode); a failed
    index goes back in a worker thread, as its restart may take a while."""

    def __init__(self, pool: Any, *, restart_attempts: int = 3):
        if restart_attempts < 1:
            raise InvalidConfigError(
                f"restart_attempts must be at least 1, got {restart_attempts}."
            )
        self.pool = pool
        self.restart_attempts = restart_attempts
        self._live = int(pool.num_envs)
        self._free = list(range(pool.num_envs))[::-1]
        self._lent: set[int] = set()
        self._slots = [_PoolSlot(pool, index) for index in range(pool.num_envs)]
        self._lock = threading.Lock()
        self.restarted = 0
        """Failed envs replaced by fresh ones."""
        self.retired: list[int] = []
        """Indices given up for good (the pool could not replace their env)."""
        self.restart_errors: list[BaseException] = []
        """Why restarts failed (each failed attempt, retried or not)."""

    @property
    def capacity(self) -> int | None:
        return self._live

    def acquire(self) -> EnvSlot:
        with self._lock:
            if not self._free:
                raise InvalidConfigError(
                    f"all {self._live} live envs of the pool are lent ({len(self.retired)} "
                    "retired after failures); give the engine fewer episodes in flight or a "
                    "bigger pool."
                )
            index = self._free.pop()
            self._lent.add(index)
            return self._slots[index]

    def release(self, slot: EnvSlot, *, healthy: bool) -> None:
        """Take an index back; a failed one is replaced (blocking: call it off the event
        loop, as the engine does) or retired."""
        if not isinstance(slot, _PoolSlot) or slot.pool is not self.pool:
            raise _foreign(slot, self)
        with self._lock:
            if slot.index not in self._lent or slot is not self._slots[slot.index]:
                raise _foreign(slot, self)
        if not healthy:
            healthy = self._replace(slot.index)
        with self._lock:
            self._lent.discard(slot.index)
            if healthy:
                self._free.append(slot.index)
            else:
                self._live -= 1
                self.retired.append(slot.index)

    def _replace(self, index: int) -> bool:
        """A fresh env at ``index``: True once a restart succeeded (within
        ``restart_attempts``), False when the pool cannot restart it."""
        restart = getattr(self.pool, "restart", None)
        if not callable(restart):
            return False
        for _ in range(self.restart_attempts):
            try:
                restart([index])
            except Exception as exc:
                self.restart_errors.append(exc)
                continue
            with self._lock:
                self.restarted += 1
                self._slots[index] = _PoolSlot(self.pool, index)  # a fresh env: not reset
            return True
        return False

    def close(self) -> None:
        """Nothing to free here: the pool belongs to the caller, who closes it."""


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
            with self.source.call_under_way(self):
                resp = self.source.client.post(self.source.url + path, json=body)
        except Exception as exc:
            raise ServeSessionError(f"{path} on {self.source.url} failed: {exc}") from exc
        if resp.status_code != 200:
            raise ServeSessionError(
                f"{path} of session {self.episode_id} answered HTTP {resp.status_code}: "
                + " ".join(resp.text.split())[:300]
            )
        return dict(resp.json())

    def reset(
        self, seed: int, options: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        body: dict[str, Any] = {"seed": seed}
        if options is not None:
            body["options"] = dict(options)
        obs = self._post("/reset", body)["observation"]
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

    def snapshot(self) -> Any:
        raise InvalidConfigError(
            "a served env cannot be snapshotted through the HTTP protocol; branch "
            "(keep_branch_points, restored EpisodeStarts) over local or pooled envs."
        )

    def restore(self, snapshot: Any) -> None:
        self.snapshot()


class ServeEnvSource:
    """Sessions of an ``agentgym serve`` server (``url``: its root, e.g.
    ``http://127.0.0.1:8000``), one private HTTP session per slot.

    ``capacity`` is the server's ``max_sessions`` (read from ``/health``). A call the
    server refuses (a lost session: it timed out or the server restarted) or that cannot
    reach it raises :class:`ServeSessionError`, which ends the episode as an
    infrastructure failure; the session is dropped and the retry gets a new one.
    Observations carry their text (images are not fetched).

    Sessions are ended on the server with ``POST /close``: a slot released unhealthy is
    closed from a background thread once its own call under way has ended (a ``/reset``
    the engine stopped waiting for may still be on its way to the server, and would
    otherwise open the session after its ``/close``: a session nobody closes), and
    :meth:`close` closes every session the source opened, lent or not, so that the next
    engine (a restarted trainer) finds the server's slots free.
    """

    CLOSE_TIMEOUT_S = 10.0
    """How long one ``POST /close`` may take (the server waits for a call in flight)."""

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
        self.timeout_s = timeout
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
        self._held: set[str] = set()  # sessions this source may hold on the server
        self._lock = threading.Lock()
        self._busy: set[_ServeSlot] = set()
        """Slots with a call under way (from the engine's worker threads; one at a time
        each: a slot whose call was cut short comes back unhealthy, never to be lent)."""
        self._call_ended = threading.Condition(self._lock)

    def acquire(self) -> EnvSlot:
        with self._lock:
            if self._free:
                return self._free.pop()
            slot = _ServeSlot(self, f"{self._prefix}{next(self._ids)}")
            self._held.add(slot.episode_id)
            return slot

    def release(self, slot: EnvSlot, *, healthy: bool) -> None:
        assert isinstance(slot, _ServeSlot)
        if healthy:
            with self._lock:
                self._free.append(slot)
            return
        threading.Thread(target=self._close_when_idle, args=(slot,), daemon=True).start()

    def _close_when_idle(self, slot: _ServeSlot) -> None:
        """Close ``slot``'s session once its call under way (if any) has ended: at most the
        client's timeout for each of the call's phases (connect, write, read, pool)."""
        with self._lock:
            self._call_ended.wait_for(lambda: slot not in self._busy, 4 * self.timeout_s)
        self._close_sessions([slot.episode_id])

    @contextlib.contextmanager
    def call_under_way(self, slot: _ServeSlot) -> Iterator[None]:
        """Mark ``slot``'s call to the server as under way while it runs (see
        :meth:`release` and :meth:`close`)."""
        with self._lock:
            self._busy.add(slot)
        try:
            yield
        finally:
            with self._lock:
                self._busy.discard(slot)
                self._call_ended.notify_all()

    def close(self) -> None:
        """Close every server session this source opened (those a background close of a
        failed slot has not finished with included), then its HTTP client.

        Calls of its slots still under way (an engine's worker thread outlives an episode
        whose call was cut short) are waited for first, at most ``CLOSE_TIMEOUT_S``: a
        ``/reset`` still on its way could otherwise reach the server after this method's
        ``/close`` for its session, and open a session nobody closes."""
        with self._lock:
            self._call_ended.wait_for(lambda: not self._busy, self.CLOSE_TIMEOUT_S)
            ids, self._free = sorted(self._held), []
        try:
            self._close_sessions(ids)
        finally:
            self.client.close()

    def _close_sessions(self, ids: list[str]) -> int:
        """``POST /close`` each of ``ids``, forgetting each once the server has answered;
        stops at the first one the server cannot be reached for (it is down or restarted:
        its sessions are gone). How many it closed."""
        closed = 0
        for episode_id in ids:
            try:
                resp = self.client.post(
                    self.url + "/close",
                    json={"episode_id": episode_id},
                    timeout=self.CLOSE_TIMEOUT_S,
                )
            except Exception:  # unreachable, or this source's client is already closed
                return closed
            with self._lock:
                self._held.discard(episode_id)
            with contextlib.suppress(ValueError):  # a server without /close: nothing to do
                closed += resp.status_code == 200 and bool(resp.json().get("closed"))
        return closed
