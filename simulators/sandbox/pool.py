"""A pool of jailed workers: one-shot runs (sync, futures, asyncio), sessions and grading.

Example (needs a host where the sandbox can isolate; see ``agentgym doctor``):

    >>> from agentgym.simulators.sandbox import SandboxPool
    >>> with SandboxPool(workers=1) as pool:                       # doctest: +SKIP
    ...     pool.run("print(6 * 7)").stdout
    '42\\n'

Every job goes straight to a worker, and a worker runs all its jobs and session cells at
once: the kernel shares the CPU between them, and the worker's memory and process limits (not
the number of workers) bound how many run together. ``submit`` blocks once ``max_pending``
jobs are unfinished (backpressure). A worker that dies is restarted on its next job; one
without sessions is recycled after ``recycle_after`` runs or when its memory grows past
``recycle_rss``.
"""

from __future__ import annotations

import asyncio
import atexit
import itertools
import os
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import asdict, replace
from typing import Any

from agentgym.simulators.sandbox.cgroups import sweep_stale
from agentgym.simulators.sandbox.layers import check_isolation
from agentgym.simulators.sandbox.results import ExecResult
from agentgym.simulators.sandbox.worker import (
    JailedWorker,
    Limits,
    SandboxConfig,
    WorkerCrashedError,
    host_memory,
)


class SandboxPool:
    """``workers`` jailed workers (default: one per CPU), each running many jobs at once."""

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
        if any(self.layers.get(f"cgroup_{c}") for c in ("memory", "pids", "cpu")):
            sweep_stale()
        n = workers or os.cpu_count() or 1
        memory = self.config.worker_memory or max(1 << 30, int(0.6 * host_memory()) // n)
        self._workers = [JailedWorker(self.config, self.layers, memory=memory) for _ in range(n)]
        self._slots = threading.BoundedSemaphore(max_pending)
        self._closed = False
        self._close_lock = threading.Lock()
        self._rr = itertools.count()
        self._start_all()
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

    def _exec_msg(
        self,
        code: str,
        timeout: float | None,
        limits: Limits | None,
        files: Mapping[str, str] | None,
    ) -> tuple[dict[str, Any], float]:
        lim, t = self._limits(timeout, limits)
        msg = {"op": "exec", "code": str(code), "limits": lim, "timeout": t}
        if files:
            msg["files"] = dict(files)
        return msg, t

    def _job_worker(self) -> JailedWorker:
        """The worker for a one-shot job: the one with the fewest requests in flight, started
        (or recycled) if needed."""
        if self._closed:
            raise RuntimeError("SandboxPool is closed")
        start = next(self._rr)
        n = len(self._workers)
        worker = min((self._workers[(start + i) % n] for i in range(n)), key=lambda w: w.in_flight)
        with worker.lock:
            if not worker.alive:
                worker.start()
            else:
                self._maybe_recycle(worker)
        return worker

    def submit_raw(self, msg: dict[str, Any], timeout: float) -> Future[dict[str, Any]]:
        """Send one request to a worker (blocks while ``max_pending`` are unfinished)."""
        self._slots.acquire()
        try:
            worker = self._job_worker()
            fut = worker.submit(msg)
        except BaseException as exc:
            self._slots.release()
            if not isinstance(exc, WorkerCrashedError):
                raise
            fut = Future()
            fut.set_exception(exc)
            return fut

        def finished(_: Future[dict[str, Any]]) -> None:
            worker.runs += 1
            self._slots.release()

        fut.add_done_callback(finished)
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
        msg, t = self._exec_msg(code, timeout, limits, files)
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
        """Run ``code`` and wait for its result (same as ``submit(...).result()``)."""
        msg, t = self._exec_msg(code, timeout, limits, files)
        try:
            return ExecResult.from_reply(self._request(msg, t))
        except WorkerCrashedError as exc:
            return ExecResult(status="crashed", stderr=str(exc))

    def _request(self, msg: dict[str, Any], timeout: float) -> dict[str, Any]:
        """One job from this thread, waiting for its reply (no pending-job slot needed)."""
        worker = self._job_worker()
        try:
            return worker.request(msg, timeout)
        finally:
            worker.runs += 1

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
            reply = self._request(msg, t)
        except WorkerCrashedError as exc:
            return ExecResult(status="crashed", stderr=str(exc)), [None] * len(calls)
        results = reply.get("results") or [None] * len(calls)
        return ExecResult.from_reply(reply), list(results)

    # ---- sessions -----------------------------------------------------------------------

    def session(self, *, timeout: float | None = None, limits: Limits | None = None) -> Any:
        """A new stateful :class:`~agentgym.simulators.sandbox.session.Session`."""
        from agentgym.simulators.sandbox.session import Session

        if self._closed:
            raise RuntimeError("SandboxPool is closed")
        return Session.open(self, timeout=timeout, limits=limits)

    def _pick_worker(self) -> JailedWorker:
        """Where a new session lives: round-robin, so sessions spread over the workers."""
        return self._workers[next(self._rr) % len(self._workers)]

    # ---- plumbing -----------------------------------------------------------------------

    def _maybe_recycle(self, worker: JailedWorker) -> None:
        """Restart an idle worker without sessions that ran ``recycle_after`` jobs or grew past
        ``recycle_rss`` (checked every 256 jobs). The caller holds ``worker.lock``."""
        due = worker.runs >= self.config.recycle_after
        if not due and (worker.runs == 0 or worker.runs % 256):
            return
        if worker.in_flight:
            return
        try:
            info = worker.request({"op": "ping"}, 5.0)
        except WorkerCrashedError:
            return
        if info.get("sessions") or worker.in_flight:
            return
        if due or info.get("rss", 0) > self.config.recycle_rss:
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
