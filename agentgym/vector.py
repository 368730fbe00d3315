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
``agentgym.distributed`` offers the same API on Ray actors.

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

    def close(self) -> None:
        if self._proc.is_alive():
            with contextlib.suppress(EOFError, OSError, BrokenPipeError):
                self.request("close", None)
        self._proc.join(timeout=5)
        if self._proc.is_alive():
            self._proc.kill()


def _pipelined(
    remotes: Sequence[_ProcessEnv], cmd: str, payloads: Mapping[int, Any]
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
        if backend == "process":
            ctx = mp.get_context("spawn")
            cpus = worker_cpus(len(env_fns)) if pin_cpus else [None] * len(env_fns)
            self._remote = [_ProcessEnv(fn, ctx, cpu) for fn, cpu in zip(env_fns, cpus)]
            self.envs: list[gym.Env] = []
        else:
            self.envs = [fn() for fn in env_fns]
            if backend == "thread":
                self._executor = ThreadPoolExecutor(
                    max_workers=max_workers or min(32, self.num_envs)
                )
        self._closed = False

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
            return _values(_pipelined(self._remote, "reset", payloads))

        def one(i: int) -> Any:
            return self.envs[i].reset(**payloads[i])

        return self._map(one, idx)

    def step(self, actions: Mapping[int, str]) -> dict[int, StepResult]:
        """Step only the envs named in ``actions``; returns their results by index."""
        idx = list(actions)
        self._check(idx)

        if self.backend == "process":
            replies = _pipelined(self._remote, "step", {i: actions[i] for i in idx})
            return {
                i: _crashed(r) if isinstance(r, BaseException) else StepResult(*r)
                for i, r in replies.items()
            }

        def one(i: int) -> StepResult:
            return _safe_step(self.envs[i], actions[i])

        return dict(zip(idx, self._map(one, idx)))

    def call(
        self, name: str, *args: Any, indices: Sequence[int] | None = None, **kwargs: Any
    ) -> list[Any]:
        """Call a method (on the env, else its unwrapped core) of each given env."""
        idx = list(range(self.num_envs)) if indices is None else list(indices)
        self._check(idx)

        if self.backend == "process":
            return _values(
                _pipelined(self._remote, "call", dict.fromkeys(idx, (name, args, kwargs)))
            )

        def one(i: int) -> Any:
            return _call(self.envs[i], name, args, kwargs)

        return self._map(one, idx)

    def close(self) -> None:
        """Close every env and worker. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self.backend == "process":
            for remote in self._remote:
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
