"""Stateful sessions: a confined Python process whose variables persist across cells.

A session lives in one worker. ``fork()`` asks the session process to ``fork()`` itself,
so the copy shares memory copy-on-write and costs a few milliseconds, whatever the state
holds (Tree-GRPO branching). Every cell that ran is kept in ``history``; when a session is
lost (its cell timed out, or the worker was restarted) the next call rebuilds it by
replaying that history into a fresh session.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

from agentgym.simulators.sandbox.worker import JailedWorker, Limits, WorkerCrashedError

if TYPE_CHECKING:
    from agentgym.simulators.sandbox.pool import ExecResult, SandboxPool


def _close_remote(worker: JailedWorker, sid: str, generation: int) -> None:
    """Finalizer: close a session without taking the worker lock (may run inside GC)."""
    if worker.generation == generation:
        worker.pending_closes.append(sid)


class Session:
    """A live session handle. Not thread-safe: one episode drives one session."""

    def __init__(
        self,
        pool: SandboxPool,
        worker: JailedWorker,
        sid: str | None,
        limits: dict[str, Any],
        history: list[str],
    ):
        self.pool = pool
        self.worker = worker
        self.limits = limits
        self.history: list[str] = history
        self.rebuilds = 0
        self._sid: str | None = None
        self._generation = -1
        self._finalizer: weakref.finalize | None = None
        self._lock = threading.Lock()
        self._attach(sid)

    @classmethod
    def open(
        cls, pool: SandboxPool, *, timeout: float | None = None, limits: Limits | None = None
    ) -> Session:
        lim = limits or pool.config.limits
        if timeout is not None:
            lim = replace(lim, timeout=float(timeout))
        session = cls(pool, pool._pick_worker(), None, asdict(lim), [])
        session._ensure()
        return session

    def _attach(self, sid: str | None) -> None:
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        self._sid = sid
        self._generation = self.worker.generation
        if sid is not None:
            self._finalizer = weakref.finalize(
                self, _close_remote, self.worker, sid, self._generation
            )

    @property
    def alive(self) -> bool:
        return self._sid is not None and self.worker.generation == self._generation

    def _ensure(self) -> None:
        """(Re)create the remote session and replay the history if it is gone."""
        if self.alive:
            return
        reply = self.worker.call({"op": "session_new", "limits": self.limits}, 30.0)
        self._attach(reply["sid"])
        if self.history:
            self.rebuilds += 1
            for code in self.history:
                with self.worker.lock:
                    self.worker.request(
                        {"op": "session_run", "sid": self._sid, "code": code,
                         "timeout": self.limits["timeout"]},
                        self.limits["timeout"],
                    )  # fmt: skip

    def run(self, code: str, *, timeout: float | None = None) -> ExecResult:
        """Run one cell; a final bare expression's repr is printed, like a notebook."""
        from agentgym.simulators.sandbox.pool import ExecResult

        t = float(timeout if timeout is not None else self.limits["timeout"])
        try:
            self._ensure()
            reply = self.worker.call(
                {"op": "session_run", "sid": self._sid, "code": str(code), "timeout": t}, t
            )
        except WorkerCrashedError as exc:
            self._attach(None)
            return ExecResult(status="crashed", stderr=f"sandbox worker restarted: {exc}")
        result = ExecResult.from_reply(reply)
        if result.status in ("ok", "error"):
            self.history.append(str(code))
        else:  # timeout / output flood / died: the process is gone; rebuild lazily
            self._attach(None)
        return result

    def digest(self) -> str:
        """A digest of the session's variables (names, types, small values)."""
        try:
            self._ensure()
            reply = self.worker.call({"op": "session_digest", "sid": self._sid}, 5.0)
        except WorkerCrashedError:
            self._attach(None)
            return ""
        if reply.get("status") != "ok":
            self._attach(None)
            return ""
        return str(reply.get("digest") or "")

    def fork(self) -> Session:
        """A copy of this session (copy-on-write fork); both continue independently."""
        try:
            self._ensure()
            reply = self.worker.call({"op": "session_fork", "sid": self._sid}, 10.0)
        except WorkerCrashedError:
            reply = {"status": "dead"}
        sid = reply.get("sid") if reply.get("status") == "ok" else None
        if sid is None:
            self._attach(None)
        return Session(self.pool, self.worker, sid, dict(self.limits), list(self.history))

    def close(self) -> None:
        """End the session and kill its processes. Idempotent."""
        sid, self._sid = self._sid, None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if sid is not None and self.worker.generation == self._generation:
            try:  # noqa: SIM105
                self.worker.call({"op": "session_close", "sid": sid}, 10.0)
            except WorkerCrashedError:
                pass

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
