"""Stateful sessions: a confined Python process whose variables persist across cells.

A session lives in one worker. ``fork()`` asks the session process to ``fork()`` itself,
so the copy shares memory copy-on-write and costs a few milliseconds, whatever the state
holds (Tree-GRPO branching). Every cell that ran is kept in ``history``; when a session is
lost (its cell timed out, or the worker was restarted) the next call rebuilds it by
replaying that history into a fresh session. The replay runs inside the time limit of the call
that needs it, never on top of it: if it does not fit, the session restarts empty and the
observation says so (no time amplification from a long history).
"""

from __future__ import annotations

import hashlib
import threading
import time
import weakref
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any

from agentgym.simulators.sandbox.results import ExecResult
from agentgym.simulators.sandbox.worker import JailedWorker, Limits, WorkerCrashedError

from agentgym.error import AgentGymError

if TYPE_CHECKING:
    from agentgym.simulators.sandbox.pool import SandboxPool


def _close_remote(worker: JailedWorker, sid: str, generation: int) -> None:
    """Finalizer: close a session without taking the worker lock (may run inside GC)."""
    if worker.generation == generation:
        worker.pending_closes.append(sid)


FRESH_DIGEST = hashlib.blake2b(digest_size=16).hexdigest()
"""The digest of a session no cell has run in: the jail's ``_digest`` of a namespace with no
names of its own (a test asks a new session for it)."""


class SandboxFullError(AgentGymError, RuntimeError):
    """Every session uid of the worker is taken (a uid is never shared between sessions)."""


_LOST = (
    "[the session's state was lost (a previous cell was stopped) and replaying its {n} "
    "earlier cells did not fit in this cell's time limit: the session restarted empty and "
    "this cell did not run; define what you need again]"
)


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
        self._known_digest: tuple[str, str] | None = None  # (sid, digest) after its last cell
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
        for attempt in range(len(pool.workers)):  # a full worker: try the next one
            session = cls(pool, pool._pick_worker(), None, asdict(lim), [])
            try:
                session._ensure()
                return session
            except SandboxFullError:
                if attempt == len(pool.workers) - 1:
                    raise
        raise AssertionError("unreachable")

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

    def _new_remote(self) -> None:
        reply = self.worker.call({"op": "session_new", "limits": self.limits}, 30.0)
        if reply.get("status") == "full":
            raise SandboxFullError(str(reply.get("error", "sandbox worker is full")))
        self._attach(reply["sid"])

    def _ensure(self, deadline: float | None = None) -> str:
        """(Re)create the remote session and replay the history if it is gone.

        The replay must finish by ``deadline`` (default: one cell timeout from now). Returns
        "" or, when it could not, a note for the observation (the session is then empty).
        """
        if self.alive:
            return ""
        self._new_remote()
        if not self.history:
            return ""
        self.rebuilds += 1
        if deadline is None:
            deadline = time.monotonic() + float(self.limits["timeout"])
        for code in self.history:
            left = deadline - time.monotonic()
            if left <= 0.0:
                break
            reply = self.worker.call(
                {"op": "session_run", "sid": self._sid, "code": code, "timeout": left}, left
            )
            if reply.get("status") not in ("ok", "error"):
                break
        else:
            return ""
        note = _LOST.format(n=len(self.history))
        self.history.clear()
        sid, self._sid = self._sid, None
        if sid is not None:
            self.worker.call({"op": "session_close", "sid": sid}, 10.0)
        self._new_remote()
        return note

    def run(self, code: str, *, timeout: float | None = None) -> ExecResult:
        """Run one cell; a final bare expression's repr is printed, like a notebook."""
        t = float(timeout if timeout is not None else self.limits["timeout"])
        start = time.monotonic()
        try:
            note = self._ensure(start + t)
            if note:
                return ExecResult(status="dead", stderr=note, duration=time.monotonic() - start)
            left = max(0.001, start + t - time.monotonic())
            sid = self._sid
            self._known_digest = None
            reply = self.worker.call(
                {"op": "session_run", "sid": sid, "code": str(code), "timeout": left,
                 "digest": True}, left,
            )  # fmt: skip
        except WorkerCrashedError as exc:
            self._attach(None)
            return ExecResult(status="crashed", stderr=f"sandbox worker restarted: {exc}")
        result = replace(ExecResult.from_reply(reply), duration=time.monotonic() - start)
        if result.status in ("ok", "error"):
            self.history.append(str(code))
            digest = reply.get("digest")
            if isinstance(digest, str) and sid is not None:
                self._known_digest = (sid, digest)
        else:  # timeout / output flood / died: the process is gone; rebuild lazily
            self._attach(None)
        return result

    def digest(self) -> str:
        """A digest of the session's variables (names, types, small values).

        Asked of the session only when it is not known here: a session no cell has run in
        holds what every new one holds, and a cell's reply carries the digest of what it
        left (an env's ``state_key`` after every step costs no second round trip)."""
        if not self.history:
            return FRESH_DIGEST
        known = self._known_digest
        if known is not None and self.alive and known[0] == self._sid:
            return known[1]
        try:
            self._ensure()
            t = float(self.limits["timeout"])
            reply = self.worker.call({"op": "session_digest", "sid": self._sid, "timeout": t}, t)
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
        copy = Session(self.pool, self.worker, sid, dict(self.limits), list(self.history))
        known = self._known_digest
        if sid is not None and known is not None and known[0] == self._sid:
            copy._known_digest = (sid, known[1])  # the same variables
        return copy

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
