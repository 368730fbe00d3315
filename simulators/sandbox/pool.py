"""A pool of jailed workers: one-shot runs (sync, futures, asyncio), sessions and grading.

Example (needs a host where the sandbox can isolate; see ``agentgym doctor``):

    >>> from agentgym.simulators.sandbox import SandboxPool
    >>> with SandboxPool(workers=1) as pool:                       # doctest: +SKIP
    ...     pool.run("print(6 * 7)").stdout
    '42\\n'

Jobs wait in one queue served by one thread per worker. ``submit`` blocks once
``max_pending`` jobs are waiting (backpressure). A worker that dies is restarted on its next
job; one without sessions is recycled after ``recycle_after`` runs or when its memory grows
past ``recycle_rss``.
"""

from __future__ import annotations

import asyncio
import atexit
import itertools
import os
import queue
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import asdict, dataclass, replace
from typing import Any

from agentgym.simulators.sandbox.cgroups import sweep_stale
from agentgym.simulators.sandbox.layers import check_isolation
from agentgym.simulators.sandbox.worker import (
    JailedWorker,
    Limits,
    SandboxConfig,
    WorkerCrashedError,
)

_TRUNC = "\n[... {n} more bytes of {stream} dropped]"


@dataclass(frozen=True)
class ExecResult:
    """What one run or one session cell did, learnt out of band (never from its output).

    ``status`` is ``"ok"`` (exit 0), ``"error"`` (nonzero exit or an exception),
    ``"timeout"``, ``"killed"`` (a signal, e.g. the memory limit), ``"output_limit"`` (far
    more output than kept), ``"dead"`` (the session is gone) or ``"crashed"`` (the worker died
    and was restarted).
    """

    status: str
    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    signal: int | None = None
    duration: float = 0.0
    stdout_dropped: int = 0
    stderr_dropped: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def truncated(self) -> bool:
        return bool(self.stdout_dropped or self.stderr_dropped)

    def text(self) -> str:
        """stdout, then stderr, with truncation notes: what an observation shows."""
        out = self.stdout
        if self.stdout_dropped:
            out += _TRUNC.format(n=self.stdout_dropped, stream="stdout")
        err = self.stderr
        if self.stderr_dropped:
            err += _TRUNC.format(n=self.stderr_dropped, stream="stderr")
        return out + (("\n" if out and not out.endswith("\n") else "") + err if err else "")

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any]) -> ExecResult:
        return cls(
            status=str(reply.get("status", "crashed")),
            stdout=str(reply.get("stdout", "")),
            stderr=str(reply.get("stderr", "")),
            exit_code=reply.get("exit_code"),
            signal=reply.get("signal"),
            duration=float(reply.get("duration", 0.0)),
            stdout_dropped=int(reply.get("stdout_dropped", 0)),
            stderr_dropped=int(reply.get("stderr_dropped", 0)),
        )


class SandboxPool:
    """``workers`` jailed workers (default: one per CPU) behind one job queue."""

    def __init__(
        self,
        workers: int | None = None,
        config: SandboxConfig | None = None,
        *,
        max_pending: int = 1024,
    ):
        self._pid = os.getpid()
        self.config = config or SandboxConfig()
        self.layers = check_isolation(self.config.allow_unisolated)
        if self.layers.get("cgroup_memory") or self.layers.get("cgroup_pids"):
            sweep_stale()
        n = workers or os.cpu_count() or 1
        self._workers = [JailedWorker(self.config, self.layers) for _ in range(n)]
        self._queue: queue.Queue[tuple[dict[str, Any], Future[dict[str, Any]], float] | None]
        self._queue = queue.Queue()
        self._slots = threading.BoundedSemaphore(max_pending)
        self._closed = False
        self._close_lock = threading.Lock()
        self._rr = itertools.count()
        self._start_all()
        self._threads = [
            threading.Thread(target=self._serve, args=(w,), daemon=True, name=f"sandbox-{w.name}")
            for w in self._workers
        ]
        for t in self._threads:
            t.start()
        _live_pools.add(self)

    def _start_all(self) -> None:
        """Start every worker at once (each spends most of its start importing numpy/sympy)."""
        errors: list[BaseException] = []

        def start(w: JailedWorker) -> None:
            try:
                with w.lock:
                    w.start()
            except BaseException as exc:
                errors.append(exc)

        starters = [threading.Thread(target=start, args=(w,)) for w in self._workers]
        for t in starters:
            t.start()
        for t in starters:
            t.join()
        if errors:
            for w in self._workers:
                with w.lock:
                    w.stop()
                    w.release()
            raise errors[0]

    # ---- one-shot runs ------------------------------------------------------------------

    def _limits(self, timeout: float | None, limits: Limits | None) -> tuple[dict, float]:
        lim = limits or self.config.limits
        if timeout is not None:
            lim = replace(lim, timeout=float(timeout))
        return asdict(lim), lim.timeout

    def submit_raw(self, msg: dict[str, Any], timeout: float) -> Future[dict[str, Any]]:
        """Queue one request for any worker (blocks while ``max_pending`` are waiting)."""
        if self._closed:
            raise RuntimeError("SandboxPool is closed")
        self._slots.acquire()
        fut: Future[dict[str, Any]] = Future()
        fut.add_done_callback(lambda _: self._slots.release())
        self._queue.put((msg, fut, timeout))
        return fut

    def submit(
        self,
        code: str,
        *,
        timeout: float | None = None,
        limits: Limits | None = None,
        files: Mapping[str, str] | None = None,
    ) -> Future[ExecResult]:
        """Run ``code`` once in a fresh confined process; a future of its :class:`ExecResult`."""
        lim, t = self._limits(timeout, limits)
        msg = {"op": "exec", "code": str(code), "limits": lim, "timeout": t}
        if files:
            msg["files"] = dict(files)
        raw = self.submit_raw(msg, t)
        out: Future[ExecResult] = Future()

        def done(f: Future[dict[str, Any]]) -> None:
            exc = f.exception()
            if exc is not None:
                out.set_result(ExecResult(status="crashed", stderr=str(exc)))
            else:
                out.set_result(ExecResult.from_reply(f.result()))

        raw.add_done_callback(done)
        return out

    def run(
        self,
        code: str,
        *,
        timeout: float | None = None,
        limits: Limits | None = None,
        files: Mapping[str, str] | None = None,
    ) -> ExecResult:
        """Run ``code`` and wait for its result (same as ``submit(...).result()``).

        When a worker is idle the call uses it from this thread, skipping the queue's two
        thread hand-offs, which matter on a loaded machine.
        """
        lim, t = self._limits(timeout, limits)
        msg = {"op": "exec", "code": str(code), "limits": lim, "timeout": t}
        if files:
            msg["files"] = dict(files)
        try:
            reply = self._direct(msg, t)
        except WorkerCrashedError as exc:
            return ExecResult(status="crashed", stderr=str(exc))
        if reply is None:
            return self.submit(code, timeout=timeout, limits=limits, files=files).result()
        return ExecResult.from_reply(reply)

    def _direct(self, msg: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        """Serve ``msg`` on an idle worker from the calling thread; None if all are busy."""
        if self._closed:
            raise RuntimeError("SandboxPool is closed")
        if not self._queue.empty():
            return None  # queued jobs first
        for worker in self._workers:
            if worker.lock.acquire(blocking=False):
                try:
                    if not worker.alive:
                        worker.start()
                    reply = worker.request(msg, timeout)
                    worker.runs += 1
                    self._maybe_recycle(worker)
                    return reply
                finally:
                    worker.lock.release()
        return None

    def run_many(self, codes: Iterable[str], **kwargs: Any) -> list[ExecResult]:
        """Run many snippets concurrently over all workers; results in input order."""
        futures = [self.submit(c, **kwargs) for c in codes]
        return [f.result() for f in futures]

    async def arun(self, code: str, **kwargs: Any) -> ExecResult:
        """``await pool.arun(code)`` from asyncio code."""
        return await asyncio.wrap_future(self.submit(code, **kwargs))

    def grade_raw(
        self,
        code: str,
        fn: str,
        calls: Sequence[Sequence[Any]],
        *,
        timeout: float | None = None,
    ) -> tuple[ExecResult, list[dict[str, Any] | None]]:
        """Run ``code`` then ``fn(*args)`` per call; return values come back on a private pipe.

        The comparison with expected values is the caller's job (see
        :mod:`agentgym.simulators.sandbox.grading`), outside the jail.
        """
        lim, t = self._limits(timeout, None)
        msg = {"op": "exec", "code": str(code), "limits": lim, "timeout": t,
               "grade": {"fn": fn, "calls": [list(c) for c in calls]}}  # fmt: skip
        try:
            reply = self._direct(msg, t) or self.submit_raw(msg, t).result()
        except WorkerCrashedError as exc:
            return ExecResult(status="crashed", stderr=str(exc)), [None] * len(calls)
        results = reply.get("results") or [None] * len(calls)
        return ExecResult.from_reply(reply), list(results)

    # ---- sessions -----------------------------------------------------------------------

    def session(self, *, timeout: float | None = None, limits: Limits | None = None) -> Any:
        """A new stateful :class:`~agentgym.simulators.sandbox.session.Session`."""
        from agentgym.simulators.sandbox.session import Session

        return Session.open(self, timeout=timeout, limits=limits)

    def _pick_worker(self) -> JailedWorker:
        """Where a new session lives: round-robin, so sessions spread over the workers."""
        return self._workers[next(self._rr) % len(self._workers)]

    # ---- plumbing -----------------------------------------------------------------------

    def _serve(self, worker: JailedWorker) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            msg, fut, timeout = item
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                with worker.lock:
                    if not worker.alive:
                        worker.start()
                    reply = worker.request(msg, timeout)
                    worker.runs += 1
                    self._maybe_recycle(worker)
                fut.set_result(reply)
            except BaseException as exc:
                fut.set_exception(exc)

    def _maybe_recycle(self, worker: JailedWorker) -> None:
        if worker.runs % 256 and worker.runs < self.config.recycle_after:
            return
        try:
            info = worker.request({"op": "ping"}, 5.0)
        except WorkerCrashedError:
            return
        if info.get("sessions"):
            return
        if worker.runs >= self.config.recycle_after or info.get("rss", 0) > self.config.recycle_rss:
            worker.start()

    @property
    def workers(self) -> list[JailedWorker]:
        return list(self._workers)

    def close(self) -> None:
        """Stop every worker and remove its processes and cgroups. Idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        if os.getpid() != self._pid:  # inherited through fork(): the workers are not ours
            return
        for _ in self._threads:
            self._queue.put(None)
        for t in self._threads:
            t.join(timeout=30)
        for w in self._workers:
            with w.lock:
                w.stop()
                w.release()
        _live_pools.discard(self)

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_live_pools: weakref.WeakSet[SandboxPool] = weakref.WeakSet()
_default: SandboxPool | None = None
_default_lock = threading.Lock()


def default_pool() -> SandboxPool:
    """The process-wide pool envs share (started on first use, closed at exit).

    It has one worker per CPU, at most 8; set ``AGENTGYM_SANDBOX_WORKERS`` to choose.
    """
    global _default
    with _default_lock:
        if _default is None or _default._closed or _default._pid != os.getpid():
            env = os.environ.get("AGENTGYM_SANDBOX_WORKERS", "")
            n = int(env) if env.isdigit() and int(env) > 0 else min(os.cpu_count() or 1, 8)
            _default = SandboxPool(workers=n)
        return _default


@atexit.register
def _close_all() -> None:
    for pool in list(_live_pools):
        pool.close()
