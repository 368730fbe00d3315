"""Env pools on Ray: the API of :class:`agentgym.pools.EnvPool`, with envs on Ray actors.

One machine stops being enough when envs are heavy (a browser each, a sandbox each) or a
trainer needs thousands of concurrent episodes. :class:`RayEnvPool` places envs on Ray
actors anywhere in a cluster and drives them with the same calls as the local pool:
``reset(indices, seeds=, options=)``, ``step({index: action})`` (only the envs named),
``call(name, *args, indices=)`` and ``close()``.

Placement
    Each actor holds ``envs_per_actor`` envs ("slots"; pool index ``i`` lives in actor
    ``i // envs_per_actor``). An actor asks Ray for ``num_cpus`` (fractional is fine: 0.25
    puts four actors on a core) and any custom ``resources`` (e.g. ``{"browser": 1}`` on a
    node started with ``--resources='{"browser": 8}'`` places at most eight browser actors
    there). ``placement="spread"`` spreads the actors over the nodes that can host them
    (Ray's ``SPREAD`` strategy: round-robin over the feasible nodes), so the loss of one
    node costs a share of the pool, not all of it; the default packs them where Ray likes.
    :meth:`RayEnvPool.actor_nodes` says where each actor runs.

Async actors
    ``async_actor=True`` makes each actor an asyncio actor whose env calls run in threads,
    so the slots of one actor progress concurrently: right for I/O-bound envs (browsers,
    HTTP users, sandboxes) where one process can keep many episodes waiting at once.

Failure
    Every remote call has a deadline (``timeout_s`` for steps and calls,
    ``start_timeout_s`` for actor start-up and resets). An env that raises fails its episode
    only (as in the local pool). An actor that dies (segfault, OOM kill, ``os._exit``) or
    hangs past the deadline is restarted by Ray (``max_restarts``); the step of each of its
    envs comes back truncated with ``info["env_error"]`` set and those envs must be reset,
    which is what a rollout loop does anyway. The run goes on.

Replacement
    An actor that died *for good* (``max_restarts`` used up, ``ray.kill(..., no_restart=True)``,
    its creation raised, its node gone) is replaced by a new actor built from the same
    factories, and a warning says so. Restarted and replacement actors are placed like the
    first ones, on the nodes alive at that time: when a node dies, its actors come back on
    the surviving nodes (or on a node added since) once Ray has noticed the death (its
    health checks: a median of 12-20 s after the kill with Ray's defaults in the
    benchmark). Replacements of one actor are spaced out with exponential backoff
    (``replace_backoff_s``, doubling up to ``max_replace_backoff_s``;
    back to the start once the new actor answers), so a factory that crashes at start-up
    does not spin. ``reset`` waits out a backoff window (within ``start_timeout_s``);
    ``step`` and ``call`` fail fast for that actor's envs meanwhile.

Start-up
    :func:`ensure_ray` reuses a Ray already initialised in this process, else connects to
    ``address`` / ``$RAY_ADDRESS``, else starts a local Ray.

Examples:
    >>> pool = RayEnvPool.from_id("agentgym/Sokoban-Tiny-v0", 2, num_cpus=0.5)  # doctest: +SKIP
    >>> pool.reset(seeds=[0, 1])                                                  # doctest: +SKIP
    >>> pool.step({0: '<tool_call>{"name": "move", "arguments": {"direction": "up"}}</tool_call>'})  # doctest: +SKIP
    >>> pool.close()                                                              # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym

from agentgym.error import AgentGymError, DependencyMissingError, InvalidConfigError
from agentgym.pools.local import EnvFactory, StepResult, _call, _crashed, _safe_step

logger = logging.getLogger(__name__)

__all__ = ["MakeEnv", "RayEnvPool", "RemoteEnv", "RemoteEnvError", "ensure_ray"]


class RemoteEnvError(AgentGymError, RuntimeError):
    """A reset or call on a remote env failed (actor lost, timed out, or the env raised)."""


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:  # pragma: no cover - ray is in the test environment
        raise DependencyMissingError("ray", "pip install 'agentgym-suite[ray]'") from exc
    return ray


def ensure_ray(address: str | None = None, **init_kwargs: Any) -> Any:
    """Make sure Ray is up; returns the ``ray`` module.

    Order: a Ray already initialised in this process is reused as is; else ``address`` or
    ``$RAY_ADDRESS`` is joined (``"auto"`` finds a cluster started with ``ray start`` on this
    machine); else a new local Ray starts with ``init_kwargs`` (e.g. ``num_cpus=2``).
    """
    ray = _ray()
    if ray.is_initialized():
        return ray
    address = address or os.environ.get("RAY_ADDRESS")
    init_kwargs.setdefault("ignore_reinit_error", True)
    init_kwargs.setdefault("logging_level", logging.WARNING)
    if address:
        ray.init(address=address, **init_kwargs)
    else:
        init_kwargs.setdefault("include_dashboard", False)
        ray.init(address="local", **init_kwargs)
    return ray


class MakeEnv:
    """A picklable factory for a registered id (imports agentgym inside the worker)."""

    def __init__(self, env_id: str, **kwargs: Any):
        self.env_id = env_id
        self.kwargs = kwargs

    def __call__(self) -> gym.Env:
        import agentgym

        return agentgym.make(self.env_id, **self.kwargs)

    def __repr__(self) -> str:
        return f"MakeEnv({self.env_id!r}, **{self.kwargs!r})"


class _EnvHost:
    """What runs inside an actor: a few env slots."""

    def __init__(self, factories: Sequence[EnvFactory]):
        import agentgym  # noqa: F401  (registers ids for factories that use gym.make)

        self.envs = [fn() for fn in factories]

    def pid(self) -> int:
        return os.getpid()

    def node_id(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()

    def reset(self, slot: int, seed: int | None, options: dict | None) -> tuple:
        return self.envs[slot].reset(seed=seed, options=options)

    def step(self, slot: int, action: str) -> tuple:
        return tuple(_safe_step(self.envs[slot], action))

    def call(self, slot: int, name: str, args: tuple, kwargs: dict) -> Any:
        return _call(self.envs[slot], name, args, kwargs)

    def get_attr(self, slot: int, name: str) -> Any:
        env = self.envs[slot]
        return getattr(env, name) if hasattr(env, name) else getattr(env.unwrapped, name)

    def close(self) -> None:
        for env in self.envs:
            env.close()


class _AsyncEnvHost(_EnvHost):
    """The same slots in an asyncio actor: each call runs in a thread, slots overlap."""

    async def reset(self, slot: int, seed: int | None, options: dict | None) -> tuple:  # type: ignore[override]
        return await asyncio.to_thread(_EnvHost.reset, self, slot, seed, options)

    async def step(self, slot: int, action: str) -> tuple:  # type: ignore[override]
        return await asyncio.to_thread(_EnvHost.step, self, slot, action)

    async def call(self, slot: int, name: str, args: tuple, kwargs: dict) -> Any:  # type: ignore[override]
        return await asyncio.to_thread(_EnvHost.call, self, slot, name, args, kwargs)

    async def node_id(self) -> str:  # type: ignore[override]
        return _EnvHost.node_id(self)

    async def get_attr(self, slot: int, name: str) -> Any:  # type: ignore[override]
        return _EnvHost.get_attr(self, slot, name)

    async def close(self) -> None:  # type: ignore[override]
        await asyncio.to_thread(_EnvHost.close, self)


class RayEnvPool:
    """N envs on Ray actors, with the API of :class:`agentgym.pools.EnvPool`.

    Args:
        env_fns: One picklable factory per env (lambdas are fine; use :class:`MakeEnv` or
            :meth:`from_id` for registered ids).
        envs_per_actor: Env slots per actor.
        num_cpus: CPUs Ray reserves per actor (fractional allowed).
        resources: Custom Ray resources per actor, e.g. ``{"browser": 1}``.
        async_actor: Use asyncio actors (slots of one actor run concurrently).
        max_concurrency: Concurrent calls per async actor (default: ``envs_per_actor``).
        timeout_s: Deadline of every step and call, in seconds.
        start_timeout_s: Deadline of actor start-up and of ``reset`` (which may wait for a
            restarted actor to come up: a new process importing the env's libraries); never
            less than ``timeout_s``, which raises a smaller value (see :func:`start_deadline`).
        max_restarts: How often Ray may restart a dead actor (-1: always).
        replace_dead: Replace actors that died for good (Ray will not restart them).
        replace_backoff_s: Wait before the second replacement of the same actor; doubles
            with each further one.
        max_replace_backoff_s: Longest wait between two replacements of one actor.
        address: Ray address to join when Ray is not running yet (see :func:`ensure_ray`).
        ray_init: Keyword arguments for a local ``ray.init`` (e.g. ``{"num_cpus": 2}``).
        actor_options: Extra ``.options(...)`` for the actors (``scheduling_strategy``,
            ``runtime_env``...).
        placement: ``"default"`` (Ray's default scheduling, which packs actors onto few
            nodes) or ``"spread"`` (round-robin over the nodes that have the CPUs and
            ``resources`` asked for). A ``scheduling_strategy`` in ``actor_options`` is the
            finer-grained alternative (placement groups, node affinity); give one or the other.
    """

    def __init__(
        self,
        env_fns: Sequence[EnvFactory],
        *,
        envs_per_actor: int = 1,
        num_cpus: float = 1.0,
        resources: Mapping[str, float] | None = None,
        async_actor: bool = False,
        max_concurrency: int | None = None,
        timeout_s: float = 120.0,
        start_timeout_s: float = 300.0,
        max_restarts: int = -1,
        replace_dead: bool = True,
        replace_backoff_s: float = 1.0,
        max_replace_backoff_s: float = 60.0,
        address: str | None = None,
        ray_init: Mapping[str, Any] | None = None,
        actor_options: Mapping[str, Any] | None = None,
        placement: str = "default",
    ):
        if not env_fns:
            raise InvalidConfigError("RayEnvPool needs at least one env factory.")
        if envs_per_actor < 1:
            raise InvalidConfigError(f"envs_per_actor must be >= 1, got {envs_per_actor}.")
        if timeout_s <= 0:
            raise InvalidConfigError(f"timeout_s must be > 0, got {timeout_s}.")
        strategy = _scheduling_strategy(placement, actor_options or {})
        ray = ensure_ray(address, **dict(ray_init or {}))
        self._ray = ray
        self.num_envs = len(env_fns)
        self.envs_per_actor = envs_per_actor
        self.timeout_s = float(timeout_s)
        self.start_timeout_s, self._start_deadline = start_deadline(start_timeout_s, timeout_s)
        self.backend = "ray"
        host_cls = _AsyncEnvHost if async_actor else _EnvHost
        options: dict[str, Any] = {
            "num_cpus": num_cpus,
            "max_restarts": max_restarts,
            "max_task_retries": 0,
        }
        if resources:
            options["resources"] = dict(resources)
        if async_actor:
            options["max_concurrency"] = max_concurrency or max(envs_per_actor, 1)
        if strategy:
            options["scheduling_strategy"] = strategy
        options.update(actor_options or {})
        remote_cls = ray.remote(host_cls).options(**options)
        self._remote_cls = remote_cls
        self._groups = [
            list(env_fns[i : i + envs_per_actor]) for i in range(0, self.num_envs, envs_per_actor)
        ]
        self.actors = [remote_cls.remote(group) for group in self._groups]
        self.replace_dead = bool(replace_dead)
        self.replace_backoff_s = float(replace_backoff_s)
        self.max_replace_backoff_s = float(max(max_replace_backoff_s, replace_backoff_s))
        #: Replacements of each actor so far (all time), for diagnostics.
        self.replacements = [0] * len(self.actors)
        self._streak = [0] * len(self.actors)  # replacements since the actor last answered
        self._not_before = [0.0] * len(self.actors)  # monotonic time of the next allowed one
        self._closed = False
        started = self._gather(
            [a.pid.remote() for a in self.actors], self.start_timeout_s, self._start_deadline
        )
        failed = [(i, v) for i, (status, v) in enumerate(started) if status != "ok"]
        if failed:
            self.close()
            i, why = failed[0]
            raise RemoteEnvError(
                f"{len(failed)} of {len(self.actors)} env actors did not start (actor {i}: {why}). "
                "Check that the factories build envs on a worker (ray logs) and that the "
                "cluster has the CPUs and resources asked for (ray status)."
            )

    @classmethod
    def from_id(
        cls,
        env_id: str,
        num_envs: int,
        *,
        env_kwargs: Mapping[str, Any] | None = None,
        **pool_kwargs: Any,
    ) -> RayEnvPool:
        """``num_envs`` envs of one registered id."""
        return cls([MakeEnv(env_id, **dict(env_kwargs or {}))] * num_envs, **pool_kwargs)

    # ---- plumbing ---------------------------------------------------------------------------

    def _where(self, i: int) -> tuple[Any, int]:
        return self.actors[i // self.envs_per_actor], i % self.envs_per_actor

    def _check(self, indices: Sequence[int]) -> None:
        if self._closed:
            raise InvalidConfigError("this RayEnvPool is closed; build a new one.")
        bad = [i for i in indices if not 0 <= i < self.num_envs]
        if bad:
            raise InvalidConfigError(f"env indices {bad} out of range 0..{self.num_envs - 1}.")

    def _gather(
        self, refs: Sequence[Any], timeout_s: float | None = None, source: str | None = None
    ) -> list[tuple[str, Any]]:
        """Wait for all refs until the deadline; ``("ok", value)`` or ``("error", message)``.

        ``source`` names the argument that set ``timeout_s``, for the timeout message
        (default: ``timeout_s``, the deadline of steps and calls).
        """
        ray = self._ray
        if timeout_s is None:
            timeout_s, source = self.timeout_s, source or f"timeout_s={self.timeout_s:g}"
        deadline = time.monotonic() + timeout_s
        pending = list(refs)
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=left)
        late = set(pending)
        out: list[tuple[str, Any]] = []
        for ref in refs:
            if ref in late:
                why = f" ({source})" if source else ""
                out.append(("timeout", f"no answer within {timeout_s:g} s{why}"))
                continue
            try:
                out.append(("ok", ray.get(ref)))
            except Exception as exc:  # actor died or the env raised
                out.append(("error", _describe(exc)))
        return out

    def _restart_hung(self, indices: Sequence[int], results: Sequence[tuple[str, Any]]) -> None:
        """Kill the actors of timed-out calls so Ray restarts them fresh."""
        hung = {i // self.envs_per_actor for i, (s, _) in zip(indices, results) if s == "timeout"}
        for a in hung:
            logger.warning("agentgym: env actor %d timed out; restarting it", a)
            self._ray.kill(self.actors[a], no_restart=False)

    def _after_call(self, indices: Sequence[int], results: Sequence[tuple[str, Any]]) -> set[int]:
        """Restart hung actors, replace dead ones; returns the actors still dead (backoff)."""
        self._restart_hung(indices, results)
        lost: set[int] = set()
        died: set[int] = set()  # Ray said the actor died (not "temporarily unavailable")
        for i, (status, value) in zip(indices, results):
            a = i // self.envs_per_actor
            if status == "ok":
                self._streak[a] = 0
            elif _actor_lost(status, value) and status != "timeout":
                lost.add(a)
                if not _actor_restarting(status, value):
                    died.add(a)
        waiting = set()
        for a in sorted(self._dead_for_good(lost, died)):
            if not self._replace(a):
                waiting.add(a)
        return waiting

    def _dead_for_good(self, lost: set[int], died: set[int], wait_s: float = 10.0) -> set[int]:
        """The actors among ``lost`` that Ray's actor table says are DEAD (no restart).

        For the actors in ``died`` (Ray raised ActorDiedError) "ALIVE" is news that has not
        reached the table yet: look again, all of them together, for up to ``wait_s`` (on a
        loaded machine the table took more than 2 s to learn of a killed process). The
        others were only "temporarily unavailable": restarting, or on a node that stopped
        answering, which the table calls ALIVE until Ray's health checks give up on it
        (15 s or more by default). Those are read once, and a later call (a ``reset``, which
        waits for restarts anyway) looks again, so a lost node never holds up a ``step``.
        """
        try:
            from ray._private import state
        except ImportError as exc:  # the table is a Ray internal: if it moves, say so, go on
            logger.warning("agentgym: cannot read Ray's actor table (%s); no replacement", exc)
            return set()
        ids = {a: self.actors[a]._actor_id.hex() for a in lost}
        dead: set[int] = set()
        deadline = time.monotonic() + wait_s
        while ids:
            for a, actor_id in list(ids.items()):
                try:
                    info = state.actors(actor_id=actor_id) or {}
                except Exception as exc:
                    logger.warning("agentgym: cannot read Ray's actor table (%s)", exc)
                    return dead
                if info.get("State") != "ALIVE" or a not in died:
                    del ids[a]
                    if info.get("State") == "DEAD":
                        dead.add(a)
            if not ids or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        return dead

    def _replace(self, a: int) -> bool:
        """Replace dead actor ``a`` unless inside its backoff window; True if replaced."""
        if not self.replace_dead or self._closed:
            return False
        now = time.monotonic()
        if now < self._not_before[a]:
            return False
        with contextlib.suppress(Exception):  # make sure Ray never brings the old one back
            self._ray.kill(self.actors[a], no_restart=True)
        self.actors[a] = self._remote_cls.remote(self._groups[a])
        self.replacements[a] += 1
        self._streak[a] += 1
        wait = min(self.replace_backoff_s * 2 ** (self._streak[a] - 1), self.max_replace_backoff_s)
        self._not_before[a] = now + wait
        first = a * self.envs_per_actor
        last = min(first + self.envs_per_actor, self.num_envs) - 1
        logger.warning(
            "agentgym: env actor %d (envs %d-%d) died for good; replaced it with a new actor "
            "(replacement %d in a row; the next replacement of this actor waits %.1f s). "
            "Its envs must be reset.",
            a,
            first,
            last,
            self._streak[a],
            wait,
        )
        return True

    # ---- the pool API -----------------------------------------------------------------------

    def reset(
        self,
        indices: Sequence[int] | None = None,
        *,
        seeds: Sequence[int | None] | None = None,
        options: Sequence[Mapping[str, Any] | None] | None = None,
        retries: int = 2,
    ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Reset the given envs (all by default); returns ``(obs, info)`` per index.

        A reset that fails because its actor died or hung is retried (on the restarted
        actor) up to ``retries`` times; while Ray reports the actor as restarting, the reset
        waits for it (with backoff, up to ``start_timeout_s``) without using a retry. An env
        that raises in ``reset`` is not retried.
        """
        idx = list(range(self.num_envs)) if indices is None else list(indices)
        self._check(idx)
        seed_list = list(seeds) if seeds is not None else [None] * len(idx)
        opts = list(options) if options is not None else [None] * len(idx)
        if len(seed_list) != len(idx) or len(opts) != len(idx):
            raise InvalidConfigError(
                f"reset got {len(idx)} indices but {len(seed_list)} seeds and {len(opts)} options."
            )
        args = {i: (s, dict(o) if o else None) for i, s, o in zip(idx, seed_list, opts)}
        done: dict[int, Any] = {}
        todo = idx
        deadline = time.monotonic() + self.start_timeout_s
        attempt, pause = 0, 0.1
        while True:
            refs = []
            for i in todo:
                actor, slot = self._where(i)
                refs.append(actor.reset.remote(slot, *args[i]))
            results = self._gather(refs, self.start_timeout_s, self._start_deadline)
            waiting = self._after_call(todo, results)
            again, restarting = [], False
            for i, (status, value) in zip(todo, results):
                a = i // self.envs_per_actor
                if status == "ok":
                    done[i] = value
                elif a in waiting and self._not_before[a] < deadline:
                    # dead for good, its replacement is due after a backoff: wait for it
                    again.append(i)
                    restarting = True
                elif _actor_restarting(status, value) and time.monotonic() < deadline:
                    # Ray is still bringing the actor back (slow on a loaded machine): wait
                    # for it, up to start_timeout_s, without spending a retry
                    again.append(i)
                    restarting = True
                elif _actor_lost(status, value) and attempt < retries:
                    again.append(i)
                else:
                    raise RemoteEnvError(
                        f"reset of env {i} failed: {value}. The env raised in reset(), or its "
                        "actor kept dying; see the actor's log (ray logs) for the cause."
                    )
            if not again:
                break
            if not restarting:
                attempt += 1
            due = [self._not_before[a] for a in waiting]
            time.sleep(max(pause, min(due) - time.monotonic()) if due else pause)
            pause = min(2 * pause, 2.0)
            todo = again
        return [done[i] for i in idx]

    def step(self, actions: Mapping[int, str]) -> dict[int, StepResult]:
        """Step only the envs named in ``actions``; returns their results by index.

        A lost or hung actor gives a truncated result with ``info["env_error"]`` for each of
        its envs in this call (the episode failed, the pool lives on).
        """
        idx = list(actions)
        self._check(idx)
        refs = []
        for i in idx:
            actor, slot = self._where(i)
            refs.append(actor.step.remote(slot, actions[i]))
        results = self._gather(refs)
        self._after_call(idx, results)
        out: dict[int, StepResult] = {}
        for i, (status, value) in zip(idx, results):
            if status == "ok":
                out[i] = StepResult(*value)
            else:
                out[i] = _crashed(RemoteEnvError(f"env {i}: {value}"))
        return out

    def call(
        self, name: str, *args: Any, indices: Sequence[int] | None = None, **kwargs: Any
    ) -> list[Any]:
        """Call a method (on the env, else its unwrapped core) of each given env."""
        idx = list(range(self.num_envs)) if indices is None else list(indices)
        self._check(idx)
        refs = []
        for i in idx:
            actor, slot = self._where(i)
            refs.append(actor.call.remote(slot, name, args, kwargs))
        results = self._gather(refs)
        self._after_call(idx, results)
        return _values_or_raise(
            idx, results, lambda i, value: f"call {name!r} on env {i} failed: {value}"
        )

    def get_attr(self, name: str, *, indices: Sequence[int] | None = None) -> list[Any]:
        """An attribute (of the env, else its unwrapped core) of each given env."""
        idx = list(range(self.num_envs)) if indices is None else list(indices)
        self._check(idx)
        refs = []
        for i in idx:
            actor, slot = self._where(i)
            refs.append(actor.get_attr.remote(slot, name))
        results = self._gather(refs)
        return _values_or_raise(
            idx, results, lambda i, value: f"reading {name!r} of env {i} failed: {value}"
        )

    def actor_pids(self) -> list[int]:
        """The process id of each actor (for diagnostics and crash tests)."""
        return [v for _, v in self._gather([a.pid.remote() for a in self.actors])]

    def actor_nodes(self) -> list[str | None]:
        """The Ray node id (hex) each actor runs on; None for an actor that did not answer.

        Actor ``a`` holds envs ``a * envs_per_actor`` onwards. Compare with
        ``ray.nodes()`` or ``ray.get_runtime_context().get_node_id()``.
        """
        results = self._gather([a.node_id.remote() for a in self.actors])
        return [value if status == "ok" else None for status, value in results]

    def close(self) -> None:
        """Close every env and end the actors. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        refs = [a.close.remote() for a in self.actors]
        self._gather(refs, timeout_s=min(self.timeout_s, 10.0))  # a hung env must not block
        for actor in self.actors:
            with contextlib.suppress(Exception):  # already gone
                self._ray.kill(actor, no_restart=True)

    def __enter__(self) -> RayEnvPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_deadline(start_timeout_s: float, timeout_s: float) -> tuple[float, str]:
    """The deadline of actor start-up and ``reset`` in force, and words naming its source.

    Start-up and resets never get less time than one step, so a ``start_timeout_s`` below
    ``timeout_s`` is raised to it. Error messages quote the returned words, so a user who
    passed ``start_timeout_s=90`` (with the default ``timeout_s=120``) reads why the pool
    waited 120 s rather than a number they never passed.

    Examples:
        >>> start_deadline(300, 120)
        (300.0, 'start_timeout_s=300')
        >>> start_deadline(90, 120)[0]
        120.0
    """
    if start_timeout_s >= timeout_s:
        return float(start_timeout_s), f"start_timeout_s={start_timeout_s:g}"
    return float(timeout_s), (
        f"timeout_s={timeout_s:g}; the start_timeout_s={start_timeout_s:g} passed is raised "
        "to it, as start-up and reset never get less time than a step"
    )


PLACEMENTS = ("default", "spread")


def _scheduling_strategy(placement: str, actor_options: Mapping[str, Any]) -> str | None:
    """The Ray scheduling strategy for ``placement`` (None: leave Ray's default).

    Examples:
        >>> _scheduling_strategy("spread", {})
        'SPREAD'
        >>> _scheduling_strategy("default", {}) is None
        True
    """
    if placement not in PLACEMENTS:
        raise InvalidConfigError(
            f"placement must be one of {PLACEMENTS}, got {placement!r}. Use "
            "actor_options={'scheduling_strategy': ...} for placement groups or node affinity."
        )
    if placement == "default":
        return None
    if "scheduling_strategy" in actor_options:
        raise InvalidConfigError(
            f"placement={placement!r} and actor_options['scheduling_strategy'] both choose "
            "where actors go; pass only one of them."
        )
    return "SPREAD"


def _describe(exc: BaseException) -> str:
    name = type(exc).__name__
    text = str(exc).strip().splitlines()
    return f"{name}: {text[0] if text else ''}"[:500]


def _actor_restarting(status: str, message: str) -> bool:
    """Ray says the actor is temporarily unavailable: it is being restarted."""
    return status != "timeout" and "ActorUnavailableError" in message


def _actor_lost(status: str, message: str) -> bool:
    return status == "timeout" or any(
        k in message for k in ("ActorDiedError", "ActorUnavailableError", "RayActorError")
    )


class RemoteEnv(gym.Env):
    """One env of a :class:`RayEnvPool` as a plain ``gym.Env`` (its work happens remotely).

    ``unwrapped`` is the view itself: ``state_key``, ``snapshot``, ``restore``,
    ``reward_weights``, ``tools`` and ``admissible_actions`` are forwarded to the remote
    env, so :mod:`agentgym.testing` conformance checks run through Ray unchanged.
    """

    def __init__(self, pool: RayEnvPool, index: int):
        self.pool = pool
        self.index = index
        self.observation_space = self._get("observation_space")
        self.action_space = self._get("action_space")
        self.metadata = self._get("metadata")
        self.reward_weights = self._get("reward_weights")

    def _get(self, attr: str) -> Any:
        return self.pool.get_attr(attr, indices=[self.index])[0]

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:
        return self.pool.reset([self.index], seeds=[seed], options=[options])[0]

    def step(self, action: str) -> tuple:
        return tuple(self.pool.step({self.index: action})[self.index])

    def _remote(self, name: str, *args: Any) -> Any:
        return self.pool.call(name, *args, indices=[self.index])[0]

    def state_key(self) -> str:
        return self._remote("state_key")

    def snapshot(self) -> Any:
        return self._remote("snapshot")

    def restore(self, snapshot: Any) -> None:
        self._remote("restore", snapshot)

    def admissible_actions(self) -> list[str] | None:
        return self._remote("admissible_actions")

    @property
    def tools(self) -> Any:
        return self._get("tools")

    def close(self) -> None:
        """Closing the view leaves the pool's env open (the pool owns it)."""


Factory = Callable[[], gym.Env]


def _values_or_raise(
    indices: Sequence[int],
    results: Sequence[tuple[str, Any]],
    message: Callable[[int, Any], str],
) -> list[Any]:
    """The values of gathered ``(status, value)`` results; at the first that failed,
    RemoteEnvError with ``message(env index, value)``."""
    out = []
    for i, (status, value) in zip(indices, results):
        if status != "ok":
            raise RemoteEnvError(message(i, value))
        out.append(value)
    return out
