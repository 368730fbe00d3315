"""Env pools: step many envs at once, each only while its episode is active.

LLM rollouts differ from classic vector envs: episodes end at different turns, and a policy
call batches only the envs still running. ``EnvPool`` therefore takes actions for *some*
envs (a ``{index: action}`` mapping) and returns results for exactly those. Backends:

* ``"thread"`` (default) — a thread per env call; right for I/O-bound envs (browsers,
  sandboxes, HTTP users) whose work happens outside the GIL.
* ``"process"`` — one worker process per env; right for CPU-bound Python envs. With
  ``pin_cpus=True`` each worker (and every process it starts: a browser, a sandbox) is held
  to one CPU of those this process may use, round-robin, so workers do not trade cores and
  throughput grows with the cores given.
* ``"sync"`` — one after another in the caller's thread; for debugging.

An exception inside an env does not take the pool down: that env's result comes back
truncated, with ``info["env_error"]`` set, and the env must be reset before its next step.
A worker process that died (killed, out of memory) fails its own step the same way, and is
replaced by a new one when its index is next reset; :meth:`EnvPool.restart` replaces the env
at an index on demand (a stuck or broken one), on every backend.
``agentgym.pools.ray`` offers the same API on Ray actors.

Examples:
    >>> import gymnasium as gym, agentgym
    >>> pool = EnvPool([lambda: gym.make("agentgym/Sokoban-Tiny-v0")] * 2)
    >>> (_, info_a), (_, info_b) = pool.reset(seeds=[3, 3])
    >>> info_a["task_id"] == info_b["task_id"]
    True
    >>> out = pool.step({1: "not an action"})
    >>> list(out), out[1].info["action_valid"]
    ([1], False)
    >>> pool.close()
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import gymnasium as gym

from agentgym.error import InvalidConfigError

EnvFactory = Callable[[], gym.Env]


class StepResult(NamedTuple):
    """One env's step: the Gymnasium 5-tuple with names."""

    obs: dict[str, Any]
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


def _safe_step(env: gym.Env, action: str) -> StepResult:
    try:
        obs, reward, terminated, truncated, info = env.step(action)
        return StepResult(obs, float(reward), bool(terminated), bool(truncated), info)
    except Exception as exc:  # an env crash fails this episode, not the run
        return _crashed(exc)


def _crashed(exc: BaseException) -> StepResult:
    message = f"{type(exc).__name__}: {exc}"
    return StepResult(
        obs={"text": f"The environment failed: {message}", "images": ()},
        reward=0.0,
        terminated=False,
        truncated=True,
        info={
            "env_error": message,
            "traceback": "".join(traceback.format_exception(exc)),
            "reward_components": {},
            "action_valid": False,
            "error": message,
            "tool_calls": [],
            "state_key": "",
            "success": False,
        },
    )


def _close_env_quietly(env: gym.Env) -> None:
    with contextlib.suppress(Exception):
        env.close()


def _call(env: gym.Env, name: str, args: tuple, kwargs: dict) -> Any:
    target = env.unwrapped if not hasattr(env, name) else env
    return getattr(target, name)(*args, **kwargs)


def _worker(conn: Any, factory: EnvFactory, cpu: int | None = None) -> None:
    if cpu is not None:  # before the env starts anything: its child processes inherit it
        os.sched_setaffinity(0, {cpu})
    # Ctrl-C reaches the whole process group: the parent handles it and closes its workers,
    # which would otherwise each die with a KeyboardInterrupt traceback of their own
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    env = factory()
    try:
        while True:
            try:
                cmd, payload = conn.recv()
            except EOFError:  # the parent is gone without a "close"
                return
            try:
                if cmd == "reset":
                    conn.send(("ok", env.reset(**payload)))
                elif cmd == "step":
                    conn.send(("ok", tuple(_safe_step(env, payload))))
                elif cmd == "call":
                    conn.send(("ok", _call(env, *payload)))
                elif cmd == "ping":  # the env is made and the worker listens
                    conn.send(("ok", None))
                elif cmd == "close":
                    env.close()
                    conn.send(("ok", None))
                    return
            except Exception as exc:
                conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def worker_cpus(workers: int) -> list[int]:
    """The CPU each of ``workers`` pinned workers gets: this process's CPUs, round-robin."""
    allowed = sorted(os.sched_getaffinity(0))
    return [allowed[i % len(allowed)] for i in range(workers)]


class _ProcessEnv:
    """An env living in a worker process, driven over a pipe."""

    def __init__(self, factory: EnvFactory, ctx: Any, cpu: int | None = None):
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_worker, args=(child, factory, cpu), daemon=True)
        self._proc.start()
        child.close()

    def send(self, cmd: str, payload: Any) -> None:
        self._conn.send((cmd, payload))

    def receive(self, cmd: str) -> Any:
        status, value = self._conn.recv()
        if status == "error":
            raise RuntimeError(f"env worker {cmd} failed: {value}")
        return value

    def request(self, cmd: str, payload: Any) -> Any:
        self.send(cmd, payload)
        return self.receive(cmd)

    def wait_ready(self, timeout_s: float) -> None:
        """Block until the worker has made its env and answers (at most ``timeout_s``);
        a worker that does not is killed and RuntimeError raised."""
        try:
            self.send("ping", None)
            if self._conn.poll(timeout_s):
                self.receive("ping")
                return
        except (EOFError, OSError) as exc:
            self.kill()
            raise RuntimeError(f"a new env worker died while starting: {exc}") from exc
        self.kill()
        raise RuntimeError(f"a new env worker did not start within {timeout_s} s")

    def died(self, wait_s: float = 1.0) -> bool:
        """Whether the worker process is gone (waiting up to ``wait_s`` for it to exit:
        its pipe closes just before it does)."""
        self._proc.join(timeout=wait_s)
        return not self._proc.is_alive()

    def kill(self) -> None:
        """Stop the worker at once (it may be stuck in a step) and free its pipe."""
        with contextlib.suppress(Exception):
            self._proc.kill()
        self._proc.join(timeout=5)
        with contextlib.suppress(OSError):
            self._conn.close()

    def close(self) -> None:
        if self._proc.is_alive():
            with contextlib.suppress(EOFError, OSError, BrokenPipeError):
                self.request("close", None)
        self._proc.join(timeout=5)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(timeout=5)
        with contextlib.suppress(OSError):
            self._conn.close()


def _pipelined(
    remotes: Mapping[int, _ProcessEnv], cmd: str, payloads: Mapping[int, Any]
) -> dict[int, Any]:
    """Send every request, then collect every reply: the worker processes run in parallel.

    A failure comes back as the exception in place of the value. Every reply that was asked
    for is read before returning, so a pipe never holds a stale answer for the next call.
    """
    failed: dict[int, BaseException] = {}
    for i, payload in payloads.items():
        try:
            remotes[i].send(cmd, payload)
        except (OSError, EOFError) as exc:  # a dead worker: its pipe is closed
            failed[i] = exc
    results: dict[int, Any] = {}
    for i in payloads:
        if i in failed:
            results[i] = failed[i]
            continue
        try:
            results[i] = remotes[i].receive(cmd)
        except Exception as exc:
            results[i] = exc
    return results


def _values(results: Mapping[int, Any]) -> list[Any]:
    """The values in order, raising the first failure (after all replies were read)."""
    for value in results.values():
        if isinstance(value, BaseException):
            raise value
    return list(results.values())


class EnvPool:
    """N envs stepped concurrently; see the module docstring."""

    def __init__(
        self,
        env_fns: Sequence[EnvFactory],
        *,
        backend: str = "thread",
        max_workers: int | None = None,
        pin_cpus: bool = False,
    ):
        if backend not in ("thread", "process", "sync"):
            raise InvalidConfigError(
                f"backend must be 'thread', 'process' or 'sync', got {backend!r}."
            )
        if not env_fns:
            raise InvalidConfigError("EnvPool needs at least one env factory.")
        if pin_cpus and backend != "process":
            raise InvalidConfigError(
                f"pin_cpus=True needs backend='process' (got {backend!r}): threads share "
                "one process, whose CPUs cannot be split between envs."
            )
        self.backend = backend
        self.num_envs = len(env_fns)
        self._executor: ThreadPoolExecutor | None = None
        self._factories = list(env_fns)
        self._swap = threading.Lock()
        self.restarts = 0
        """Envs replaced so far (dead workers found at a reset, :meth:`restart` calls)."""
        if backend == "process":
            self._ctx = mp.get_context("spawn")
            self._cpus = worker_cpus(len(env_fns)) if pin_cpus else [None] * len(env_fns)
            self._remote = [self._spawn(i) for i in range(self.num_envs)]
            self.envs: list[gym.Env] = []
        else:
            self.envs = [fn() for fn in env_fns]
            if backend == "thread":
                self._executor = ThreadPoolExecutor(
                    max_workers=max_workers or min(32, self.num_envs)
                )
        self._closed = False

    def _spawn(self, i: int) -> _ProcessEnv:
        return _ProcessEnv(self._factories[i], self._ctx, self._cpus[i])

    def _remotes(self, indices: Sequence[int]) -> dict[int, _ProcessEnv]:
        """The workers of ``indices`` as they are now: a call talks to these to the end,
        even if another thread replaces one meanwhile."""
        with self._swap:
            return {i: self._remote[i] for i in indices}

    def _replace(self, i: int, old: Any = None) -> Any:
        """Put a fresh env at ``i`` (a new worker process) and dispose of the old one;
        with ``old`` given, only if ``i`` still holds it (no one replaced it first).
        The new env or worker; None when this call replaced nothing."""
        with self._swap:
            current: Any = self._remote[i] if self.backend == "process" else self.envs[i]
            if self._closed or (old is not None and current is not old):
                return None  # closed meanwhile (no worker may outlive it), or replaced
            new: Any = self._spawn(i) if self.backend == "process" else self._factories[i]()
            if self.backend == "process":
                self._remote[i] = new
            else:
                self.envs[i] = new
            self.restarts += 1
        if self.backend == "process":
            current.kill()
        else:  # its step may still be running in another thread
            threading.Thread(target=_close_env_quietly, args=(current,), daemon=True).start()
        return new

    def restart(self, indices: Sequence[int], *, start_timeout_s: float = 300.0) -> None:
        """Replace the envs at ``indices`` with fresh ones from their factories: a new
        worker process each for ``backend="process"`` (the old one is killed: it may be
        stuck in a step), a new env otherwise (the old one is closed in the background).
        Returns once each new env is made (a worker that does not start within
        ``start_timeout_s`` raises RuntimeError). Each must be reset before its first step."""
        idx = list(indices)
        self._check(idx)
        if self._closed:
            raise InvalidConfigError("restart on a closed EnvPool.")
        made = [self._replace(i) for i in idx]
        if self.backend == "process":
            for remote in made:  # the workers this call made (None: closed meanwhile)
                if remote is not None:
                    remote.wait_ready(start_timeout_s)

    def _map(self, fn: Callable[[int], Any], indices: Sequence[int]) -> list[Any]:
        if self._executor is not None and len(indices) > 1:
            return list(self._executor.map(fn, indices))
        return [fn(i) for i in indices]

    def _check(self, indices: Sequence[int]) -> None:
        bad = [i for i in indices if not 0 <= i < self.num_envs]
        if bad:
            raise InvalidConfigError(f"env indices {bad} out of range 0..{self.num_envs - 1}.")

    def reset(
        self,
        indices: Sequence[int] | None = None,
        *,
        seeds: Sequence[int | None] | None = None,
        options: Sequence[Mapping[str, Any] | None] | None = None,
    ) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Reset the given envs (all by default); returns ``(obs, info)`` per index."""
        idx = list(range(self.num_envs)) if indices is None else list(indices)
        self._check(idx)
        seeds = list(seeds) if seeds is not None else [None] * len(idx)
        opts = list(options) if options is not None else [None] * len(idx)
        if len(seeds) != len(idx) or len(opts) != len(idx):
            raise InvalidConfigError(
                f"reset got {len(idx)} indices but {len(seeds)} seeds and {len(opts)} options."
            )
        payloads: dict[int, dict[str, Any]] = {
            i: {"seed": s, "options": dict(o) if o else None} for i, s, o in zip(idx, seeds, opts)
        }

        if self.backend == "process":
            return _values(self._reset_workers(payloads))

        def one(i: int) -> Any:
            return self.envs[i].reset(**payloads[i])

        return self._map(one, idx)

    def _reset_workers(self, payloads: Mapping[int, Any]) -> dict[int, Any]:
        """Reset on the worker processes; a worker found dead (its pipe broken) is
        replaced and the reset tried once more on the new one. A worker that someone else
        replaced meanwhile (:meth:`restart`, which killed it) is left to them: its reset
        fails, and the new worker gets no request from this call (its owner may be
        talking to it: two callers on one pipe would read each other's replies)."""
        remotes = self._remotes(list(payloads))
        results = _pipelined(remotes, "reset", payloads)
        dead = [
            i
            for i, r in results.items()
            if isinstance(r, (EOFError, OSError)) and remotes[i].died()
        ]
        fresh = {i: new for i in dead if (new := self._replace(i, remotes[i])) is not None}
        if fresh:
            results.update(_pipelined(fresh, "reset", {i: payloads[i] for i in fresh}))
        return results

    def step(self, actions: Mapping[int, str]) -> dict[int, StepResult]:
        """Step only the envs named in ``actions``; returns their results by index."""
        idx = list(actions)
        self._check(idx)

        if self.backend == "process":
            replies = _pipelined(self._remotes(idx), "step", {i: actions[i] for i in idx})
            return {
                i: _crashed(r) if isinstance(r, BaseException) else StepResult(*r)
                for i, r in replies.items()
            }

        def one(i: int) -> StepResult:
            return _safe_step(self.envs[i], actions[i])

        return dict(zip(idx, self._map(one, idx)))

    def step_one(self, index: int, action: str) -> StepResult:
        """Step the env at ``index`` alone: :meth:`step` for one env, without building
        the mappings (what the rollout engine calls, once per episode step)."""
        if self.backend == "process" or not 0 <= index < self.num_envs:
            return self.step({index: action})[index]
        return _safe_step(self.envs[index], action)

    def call(
        self, name: str, *args: Any, indices: Sequence[int] | None = None, **kwargs: Any
    ) -> list[Any]:
        """Call a method (on the env, else its unwrapped core) of each given env."""
        idx = list(range(self.num_envs)) if indices is None else list(indices)
        self._check(idx)

        if self.backend == "process":
            return _values(
                _pipelined(self._remotes(idx), "call", dict.fromkeys(idx, (name, args, kwargs)))
            )

        def one(i: int) -> Any:
            return _call(self.envs[i], name, args, kwargs)

        return self._map(one, idx)

    def close(self) -> None:
        """Close every env and worker. Safe to call twice."""
        with self._swap:
            if self._closed:
                return
            self._closed = True
        if self.backend == "process":
            for remote in self._remotes(range(self.num_envs)).values():
                remote.close()
        else:
            for env in self.envs:
                env.close()
        if self._executor is not None:
            self._executor.shutdown(wait=True)

    def __enter__(self) -> EnvPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
