"""Sessions of the env server: one :class:`TextSession` each, with limits and deadlines.

Every WebSocket connection owns one session; HTTP callers name theirs with
``episode_id`` (or share the default one). Env work (build, reset, step, close) runs on the
threads of a :class:`~agentgym.server.scheduler.FairScheduler`, one call in flight per
session, so one slow env never stalls the others.

Every env the server builds is closed, whatever ends its session:

* the client closes or drops its WebSocket, or the server stops: closed under the
  session's lock, after any call in flight;
* the session sits idle past ``session_timeout_s``: the reaper closes it;
* a call runs past ``step_timeout_s``: the session is dropped at once (the client gets an
  error) and the env is closed on its worker thread as soon as the stuck call returns (a
  thread cannot be interrupted). Until then it still counts against ``max_sessions``, which
  bounds live envs, not just addressable sessions.

:attr:`SessionManager.envs_built` and :attr:`SessionManager.envs_closed` count both ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agentgym.integrations.session import SessionStart, SessionTurn, TextSession
from agentgym.server.scheduler import CallTimeout, FairScheduler, Timed

logger = logging.getLogger(__name__)

T = TypeVar("T")


class SessionError(Exception):
    """A request the server refuses; ``code`` follows OpenEnv's WebSocket error codes.

    ``field`` names the part of the request at fault (``"options"``, ``"action.tool_calls"``),
    or is None when no single field is.
    """

    def __init__(self, message: str, code: str, status: int = 400, field: str | None = None):
        super().__init__(message)
        self.code = code
        self.status = status
        self.field = field


@dataclass
class ServerLimits:
    """What one server process allows.

    Attributes:
        max_sessions: Live envs at once (sessions, plus envs still finishing a timed-out call).
        max_body_bytes: Largest HTTP body or WebSocket message.
        max_action_chars: Largest action.
        max_json_depth: Deepest nesting of objects and arrays in a request.
        session_timeout_s: Idle seconds before a session is closed.
        step_timeout_s: Seconds one build, reset or step may run.
        step_workers: Env calls that run at once; None means one per allowed session.
    """

    max_sessions: int = 64
    max_body_bytes: int = 1 << 20
    max_action_chars: int = 256 * 1024
    max_json_depth: int = 64
    session_timeout_s: float = 600.0
    step_timeout_s: float = 60.0
    step_workers: int | None = None


@dataclass(eq=False)
class Session:
    id: str
    text: TextSession
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    created_at: float = field(default_factory=time.time)
    last_activity: float = field(default_factory=time.monotonic)
    step_count: int = 0
    started: bool = False
    closed: bool = False  # the env is closed, or will be by the thread of a stuck call


class SessionManager:
    """Creates, finds, times out and closes sessions; counts envs built and closed."""

    def __init__(self, factory: Callable[[], TextSession], limits: ServerLimits):
        self.factory = factory
        self.limits = limits
        self.sessions: dict[str, Session] = {}
        self.scheduler = FairScheduler(
            limits.step_workers or limits.max_sessions, spare=limits.max_sessions
        )
        self.envs_built = 0
        self.envs_closed = 0
        self._count_lock = threading.Lock()
        self._building: dict[str, asyncio.Future[Session]] = {}
        self._reaper: asyncio.Task | None = None
        self._stopping = False

    # ---- life cycle -------------------------------------------------------------------------

    def start(self) -> None:
        if self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(self._reap())

    async def stop(self) -> None:
        self._stopping = True
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
        await asyncio.gather(*(self.close(sid) for sid in list(self.sessions)))
        self.scheduler.shutdown()

    async def _reap(self) -> None:
        period = max(0.05, min(5.0, self.limits.session_timeout_s / 4))
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            for sid, s in list(self.sessions.items()):
                if not s.lock.locked() and now - s.last_activity > self.limits.session_timeout_s:
                    logger.info("agentgym serve: session %s idle, closing", sid)
                    await self.close(sid)

    @property
    def open_envs(self) -> int:
        """Envs built and not yet closed (live sessions plus abandoned ones)."""
        with self._count_lock:
            return self.envs_built - self.envs_closed

    def stats(self) -> dict[str, Any]:
        """Session and scheduler counts for ``/health``."""
        return {
            "active_sessions": len(self.sessions),
            "max_sessions": self.limits.max_sessions,
            "envs_built": self.envs_built,
            "envs_closed": self.envs_closed,
            "scheduler": self.scheduler.stats(),
        }

    # ---- sessions ---------------------------------------------------------------------------

    async def get_or_create(self, sid: str | None = None) -> Session:
        """The session named ``sid`` (a new one when absent); 503 beyond ``max_sessions``."""
        sid = sid or uuid.uuid4().hex
        while True:
            if sid in self.sessions:
                return self.sessions[sid]
            pending = self._building.get(sid)
            if pending is None:
                break
            with contextlib.suppress(SessionError):
                return await asyncio.shield(pending)
        busy = self.open_envs + len(self._building)
        if busy >= self.limits.max_sessions:
            stuck = busy - len(self.sessions) - len(self._building)
            raise SessionError(
                f"the server holds its maximum of {self.limits.max_sessions} sessions"
                + (f" ({stuck} still finishing a call that timed out)" if stuck > 0 else "")
                + "; close one (or wait for idle ones to time out) and retry",
                "CAPACITY_REACHED",
                503,
            )
        pending = asyncio.get_running_loop().create_future()
        self._building[sid] = pending
        try:
            timed = await self.scheduler.run(
                sid, self._build, timeout=self.limits.step_timeout_s, on_abandon=self._close_text
            )
        except CallTimeout:
            error = SessionError(
                f"the env was not built within {self.limits.step_timeout_s:g} s",
                "FACTORY_ERROR",
                504,
            )
            pending.set_exception(error)
            raise error from None
        except Exception as exc:
            error = SessionError(
                f"could not build the env: {type(exc).__name__}: {exc}", "FACTORY_ERROR", 500
            )
            pending.set_exception(error)
            raise error from exc
        finally:
            self._building.pop(sid, None)
            if pending.done() and pending.exception() is not None:
                pending.exception()  # retrieved: waiters got it, nobody else needs a warning
        session = Session(sid, timed.value)
        if self._stopping:  # built while the server shut down: nobody else would close it
            session.closed = True
            await asyncio.to_thread(self._close_text, session.text)
            error = SessionError("the server is shutting down", "SESSION_ERROR", 503)
            pending.set_exception(error)
            pending.exception()
            raise error
        self.sessions[sid] = session
        pending.set_result(session)
        return session

    def find(self, sid: str) -> Session:
        try:
            return self.sessions[sid]
        except KeyError:
            raise SessionError(
                f"no session {sid!r} (it may have timed out); call reset first",
                "SESSION_ERROR",
                404,
                "episode_id",
            ) from None

    async def close(self, sid: str) -> None:
        """Close session ``sid`` after any call in flight; a no-op for unknown ids."""
        session = self.sessions.pop(sid, None)
        if session is None:
            return
        async with session.lock:
            if session.closed:
                return
            session.closed = True
            with contextlib.suppress(CallTimeout):
                await self.scheduler.run(
                    sid, self._close_text, session.text, timeout=self.limits.step_timeout_s
                )

    async def reset(
        self, session: Session, seed: int | None, options: Mapping[str, Any] | None
    ) -> Timed[SessionStart]:
        async with session.lock:
            self._check_open(session)
            session.last_activity = time.monotonic()
            try:
                out = await self._call(session, session.text.reset, seed, options)
            except SessionError:
                raise
            except Exception as exc:  # bad task id, bad options: the caller's mistake
                session.started = False  # a half-done reset is no episode to step
                raise SessionError(
                    f"reset failed: {type(exc).__name__}: {exc}",
                    "VALIDATION_ERROR",
                    400,
                    "options",
                ) from exc
            session.step_count = 0
            session.started = True
            session.last_activity = time.monotonic()
            return out

    async def step(self, session: Session, action: Any) -> Timed[SessionTurn]:
        async with session.lock:
            self._check_open(session)
            if not session.started:
                raise SessionError("call reset before step", "SESSION_ERROR", 409)
            session.last_activity = time.monotonic()
            try:
                out = await self._call(session, session.text.step, action)
            except SessionError:
                raise
            except Exception as exc:  # envs never raise on actions; this is a bug or a crash
                logger.exception("agentgym serve: step of session %s raised", session.id)
                raise SessionError(
                    f"step failed: {type(exc).__name__}: {exc}", "EXECUTION_ERROR", 500
                ) from exc
            session.step_count += 1
            session.last_activity = time.monotonic()
            return out

    # ---- internals --------------------------------------------------------------------------

    def _check_open(self, session: Session) -> None:
        if session.closed:
            raise SessionError(
                f"session {session.id!r} was closed (timed out or replaced); call reset",
                "SESSION_ERROR",
                404,
                "episode_id",
            )

    async def _call(self, session: Session, fn: Callable[..., T], *args: Any) -> Timed[T]:
        try:
            return await self.scheduler.run(
                session.id,
                fn,
                *args,
                timeout=self.limits.step_timeout_s,
                on_abandon=lambda _: self._close_text(session.text),
            )
        except CallTimeout:
            # the worker thread cannot be stopped: drop the session now; the thread closes
            # the env when the call returns
            session.closed = True
            if self.sessions.get(session.id) is session:
                del self.sessions[session.id]
            raise SessionError(
                f"the env did not answer within {self.limits.step_timeout_s:g} s; "
                "the session was closed, reset to start a new one",
                "EXECUTION_ERROR",
                504,
            ) from None

    def _build(self) -> TextSession:
        text = self.factory()
        with self._count_lock:
            self.envs_built += 1
        return text

    def _close_text(self, text: TextSession | None) -> None:
        if text is None:
            return
        try:
            text.close()
        except Exception:
            logger.exception("agentgym serve: closing an env failed")
        finally:
            with self._count_lock:
                self.envs_closed += 1
