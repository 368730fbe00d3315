"""Sessions of the env server: one :class:`TextSession` each, with limits and deadlines.

Every WebSocket connection owns one session; HTTP callers name theirs with
``episode_id`` (or share the default one). Env work runs in worker threads so one slow env
never stalls the others. A session that sits idle past ``session_timeout_s`` is closed by a
reaper; a call that runs past ``step_timeout_s`` fails with an error and the session is
dropped (its thread cannot be interrupted, so the env is abandoned, not reused).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentgym.integrations.session import SessionStart, SessionTurn, TextSession

logger = logging.getLogger(__name__)


class SessionError(Exception):
    """A request the server refuses; ``code`` follows OpenEnv's WebSocket error codes."""

    def __init__(self, message: str, code: str, status: int = 400):
        super().__init__(message)
        self.code = code
        self.status = status


@dataclass
class ServerLimits:
    """What one server process allows."""

    max_sessions: int = 64
    max_body_bytes: int = 1 << 20
    max_action_chars: int = 256 * 1024
    session_timeout_s: float = 600.0
    step_timeout_s: float = 60.0


@dataclass
class Session:
    id: str
    text: TextSession
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    created_at: float = field(default_factory=time.time)
    last_activity: float = field(default_factory=time.monotonic)
    step_count: int = 0
    started: bool = False


class SessionManager:
    """Creates, finds, times out and closes sessions."""

    def __init__(self, factory: Callable[[], TextSession], limits: ServerLimits):
        self.factory = factory
        self.limits = limits
        self.sessions: dict[str, Session] = {}
        self._create_lock = asyncio.Lock()
        self._reaper: asyncio.Task | None = None

    # ---- life cycle -------------------------------------------------------------------------

    def start(self) -> None:
        if self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(self._reap())

    async def stop(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
        for sid in list(self.sessions):
            await self.close(sid)

    async def _reap(self) -> None:
        period = max(0.05, min(5.0, self.limits.session_timeout_s / 4))
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            for sid, s in list(self.sessions.items()):
                if not s.lock.locked() and now - s.last_activity > self.limits.session_timeout_s:
                    logger.info("agentgym serve: session %s idle, closing", sid)
                    await self.close(sid)

    # ---- sessions ---------------------------------------------------------------------------

    async def get_or_create(self, sid: str | None = None) -> Session:
        sid = sid or uuid.uuid4().hex
        async with self._create_lock:
            if sid in self.sessions:
                return self.sessions[sid]
            if len(self.sessions) >= self.limits.max_sessions:
                raise SessionError(
                    f"the server holds its maximum of {self.limits.max_sessions} sessions; "
                    "close one (or wait for idle ones to time out) and retry",
                    "CAPACITY_REACHED",
                    503,
                )
            try:
                text = await asyncio.to_thread(self.factory)
            except Exception as exc:
                raise SessionError(
                    f"could not build the env: {type(exc).__name__}: {exc}", "FACTORY_ERROR", 500
                ) from exc
            session = Session(sid, text)
            self.sessions[sid] = session
            return session

    def find(self, sid: str) -> Session:
        try:
            return self.sessions[sid]
        except KeyError:
            raise SessionError(
                f"no session {sid!r} (it may have timed out); call reset first",
                "SESSION_ERROR",
                404,
            ) from None

    async def close(self, sid: str) -> None:
        session = self.sessions.pop(sid, None)
        if session is not None:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(session.text.close)

    async def _run(self, session: Session, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return await asyncio.wait_for(
                asyncio.to_thread(fn, *args), timeout=self.limits.step_timeout_s
            )
        except TimeoutError:
            # the worker thread cannot be stopped: abandon this env, not the server
            self.sessions.pop(session.id, None)
            raise SessionError(
                f"the env did not answer within {self.limits.step_timeout_s:g} s; "
                "the session was closed, reset to start a new one",
                "EXECUTION_ERROR",
                504,
            ) from None

    async def reset(
        self, session: Session, seed: int | None, options: Mapping[str, Any] | None
    ) -> SessionStart:
        async with session.lock:
            session.last_activity = time.monotonic()
            try:
                out = await self._run(session, session.text.reset, seed, options)
            except SessionError:
                raise
            except Exception as exc:  # bad task id, bad options: the caller's mistake
                raise SessionError(
                    f"reset failed: {type(exc).__name__}: {exc}", "VALIDATION_ERROR", 400
                ) from exc
            session.step_count = 0
            session.started = True
            session.last_activity = time.monotonic()
            return out

    async def step(self, session: Session, action: Any) -> SessionTurn:
        async with session.lock:
            if not session.started:
                raise SessionError("call reset before step", "SESSION_ERROR", 409)
            session.last_activity = time.monotonic()
            try:
                out = await self._run(session, session.text.step, action)
            except SessionError:
                raise
            except Exception as exc:  # envs never raise on actions; this is a bug or a crash
                raise SessionError(
                    f"step failed: {type(exc).__name__}: {exc}", "EXECUTION_ERROR", 500
                ) from exc
            session.step_count += 1
            session.last_activity = time.monotonic()
            return out
