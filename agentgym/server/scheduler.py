"""Where the env server runs blocking env calls: a bounded thread pool with fair queueing.

Env calls (build, reset, step, close) block: a sandbox cell, a browser page, a sleep in
model-written code. The server runs them on worker threads owned by a
:class:`FairScheduler`, never on the event loop and never on asyncio's small default pool
(``min(32, cpus + 4)`` threads, which a few slow sessions used to fill, so every other
session waited behind them).

Rules:

* At most ``workers`` calls run at once (by default one per allowed session, so a session
  always finds a free thread when it has one call in flight, which the server guarantees).
* When more calls wait than threads are free, the next thread goes to the waiting call of
  the session that has used the least thread time lately (its run time, halving every
  ``HALF_LIFE_S`` seconds, counting calls still running), so sessions with slow steps cannot
  push out sessions with quick ones.
* A call that runs past its deadline is *abandoned*: its thread cannot be interrupted, so
  it stops counting against ``workers`` (a spare thread takes over) and its ``on_abandon``
  callback runs on that thread when the call finally returns (the server closes the env
  there, so no env is ever left open).
* Every call reports how long it waited for a thread (``queue_s``) and ran (``run_s``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from agentgym.server.ratelog import RateLimitedLog

logger = logging.getLogger(__name__)

T = TypeVar("T")

HALF_LIFE_S = 10.0
"""How fast a session's past thread time stops counting against it when threads are scarce."""


class CallTimeout(Exception):
    """The call ran past its deadline and was abandoned (its thread still runs)."""


@dataclass
class Timed(Generic[T]):
    """A call's result with the time it waited for a thread and the time it ran."""

    value: T
    queue_s: float
    run_s: float


@dataclass(eq=False)
class _Call:
    key: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    on_abandon: Callable[[Any], None] | None
    future: asyncio.Future
    started: asyncio.Event
    enqueued_at: float = field(default_factory=time.monotonic)
    started_at: float = 0.0  # handed to the pool
    run_started_at: float = 0.0  # its thread began running it
    ended_at: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)
    finished: bool = False
    abandoned: bool = False
    cancelled: bool = False


class FairScheduler:
    """Runs blocking calls for sessions on a bounded, fairly shared thread pool.

    Args:
        workers: Calls that may run at once.
        spare: Extra threads for calls that were abandoned past their deadline and still run.

    Must be used from one event loop (the server's). See the module docstring.

    Examples:
        >>> import asyncio
        >>> async def main():
        ...     sched = FairScheduler(workers=2)
        ...     out = await sched.run("session-1", sum, [1, 2, 3], timeout=5)
        ...     sched.shutdown()
        ...     return out.value, out.queue_s >= 0, out.run_s >= 0
        >>> asyncio.run(main())
        (6, True, True)
    """

    def __init__(self, workers: int, spare: int = 0):
        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.workers = int(workers)
        self._pool = ThreadPoolExecutor(
            max_workers=self.workers + max(0, int(spare)), thread_name_prefix="agentgym-env"
        )
        self._waiting: list[_Call] = []
        self._usage: dict[str, tuple[float, float]] = {}  # key -> (thread seconds, as of)
        self._running_calls: set[_Call] = set()
        self.running = 0
        self.abandoned = 0
        self._log = RateLimitedLog(logger)
        self.calls = 0

    # ---- public -----------------------------------------------------------------------------

    @property
    def waiting(self) -> int:
        return sum(1 for c in self._waiting if not c.cancelled)

    def stats(self) -> dict[str, int]:
        """Counts for ``/health``: threads allowed, calls running, waiting, abandoned."""
        return {
            "workers": self.workers,
            "running": self.running,
            "waiting": self.waiting,
            "abandoned": self.abandoned,
        }

    async def run(
        self,
        key: str,
        fn: Callable[..., T],
        *args: Any,
        timeout: float,
        on_abandon: Callable[[Any], None] | None = None,
    ) -> Timed[T]:
        """Run ``fn(*args)`` on a worker thread for session ``key``.

        ``timeout`` bounds the run, measured from when a thread begins it: neither the wait
        for a thread nor a busy event loop counts. Past it, the call is abandoned,
        :class:`CallTimeout` is raised here, and ``on_abandon(result_or_None)`` runs on the
        worker thread once ``fn`` returns. Exceptions from ``fn`` are re-raised here.
        """
        loop = asyncio.get_running_loop()
        call = _Call(key, fn, args, on_abandon, loop.create_future(), asyncio.Event())
        self._waiting.append(call)
        self._dispatch(loop)
        try:
            await call.started.wait()
        except asyncio.CancelledError:
            call.cancelled = True  # never dispatched: skipped when it reaches the head
            if call.started.is_set():
                self._abandon(call)
            raise
        try:
            while True:  # the deadline counts from when the thread began the call
                begun = call.run_started_at
                left = timeout if not begun else begun + timeout - time.monotonic()
                try:
                    value = await asyncio.wait_for(asyncio.shield(call.future), max(0.0, left))
                    break
                except TimeoutError:
                    begun = call.run_started_at
                    if not begun or time.monotonic() - begun < timeout:
                        continue  # still waiting for its thread, or ran less than timeout
                    if not self._abandon(call):  # it finished at the deadline: take the result
                        value = await call.future
                        break
                    raise CallTimeout(f"the call ran past {timeout:g} s") from None
        except asyncio.CancelledError:
            self._abandon(call)
            raise
        return self._timed(call, value)

    def shutdown(self) -> None:
        """Stop taking calls; threads still running finish on their own (daemon-like)."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    # ---- internals --------------------------------------------------------------------------

    @staticmethod
    def _timed(call: _Call, value: Any) -> Timed[Any]:
        begun = call.run_started_at or call.started_at
        return Timed(value, begun - call.enqueued_at, call.ended_at - begun)

    def _abandon(self, call: _Call) -> bool:
        """Mark a running call abandoned; False when it had already finished."""
        with call.lock:
            if call.finished:
                return False
            call.abandoned = True
        self.running -= 1
        self.abandoned += 1
        self._log.warning(
            "abandoned", "agentgym serve: a call for session %s ran past its deadline", call.key
        )
        self._dispatch(asyncio.get_running_loop())
        return True

    def _used(self, key: str, now: float) -> float:
        """Thread seconds ``key`` used lately (halving every ``HALF_LIFE_S``), running included."""
        spent, as_of = self._usage.get(key, (0.0, now))
        used = spent * 0.5 ** ((now - as_of) / HALF_LIFE_S)
        return used + sum(now - c.started_at for c in self._running_calls if c.key == key)

    def _charge(self, key: str, seconds: float, now: float) -> None:
        spent, as_of = self._usage.get(key, (0.0, now))
        self._usage[key] = (spent * 0.5 ** ((now - as_of) / HALF_LIFE_S) + seconds, now)
        if len(self._usage) > 4 * self.workers + 64:  # forget sessions whose usage decayed
            self._usage = {
                k: (v, t)
                for k, (v, t) in self._usage.items()
                if v * 0.5 ** ((now - t) / HALF_LIFE_S) > 1e-3
            }

    def _next(self) -> _Call:
        """The waiting call whose session used the least thread time lately (FIFO on ties)."""
        now = time.monotonic()
        best = min(
            range(len(self._waiting)), key=lambda i: (self._used(self._waiting[i].key, now), i)
        )
        return self._waiting.pop(best)

    def _dispatch(self, loop: asyncio.AbstractEventLoop) -> None:
        while self.running < self.workers and self._waiting:
            call = self._next()
            if call.cancelled:
                continue
            self._running_calls.add(call)
            self.running += 1
            self.calls += 1
            call.started_at = time.monotonic()
            call.started.set()
            try:
                self._pool.submit(self._work, loop, call)
            except RuntimeError as exc:  # the pool was shut down
                self._running_calls.discard(call)
                self.running -= 1
                call.future.set_exception(exc)

    def _work(self, loop: asyncio.AbstractEventLoop, call: _Call) -> None:
        value: Any = None
        error: BaseException | None = None
        call.run_started_at = time.monotonic()
        try:
            value = call.fn(*call.args)
        except BaseException as exc:
            error = exc
        call.ended_at = time.monotonic()
        with call.lock:
            call.finished = True
            abandoned = call.abandoned
        if abandoned and call.on_abandon is not None:
            try:
                call.on_abandon(value)
            except Exception:
                self._log.error(
                    "cleanup",
                    "agentgym serve: cleanup after an abandoned call failed",
                    exc_info=True,
                )
        with contextlib.suppress(RuntimeError):  # the loop is gone: the server stopped
            loop.call_soon_threadsafe(self._finish, loop, call, value, error, abandoned)

    def _finish(
        self,
        loop: asyncio.AbstractEventLoop,
        call: _Call,
        value: Any,
        error: BaseException | None,
        abandoned: bool,
    ) -> None:
        if abandoned:
            self.abandoned -= 1
        else:
            self.running -= 1
        self._running_calls.discard(call)
        self._charge(call.key, call.ended_at - call.started_at, call.ended_at)
        if not abandoned and not call.future.done():  # nobody awaits an abandoned call
            if error is not None:
                call.future.set_exception(error)
            else:
                call.future.set_result(value)
        self._dispatch(loop)
