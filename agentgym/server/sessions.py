"""Sessions of the env server: one :class:`TextSession` each, with limits and deadlines.

Every WebSocket connection owns one session (an asyncio task, not a thread); HTTP callers
name theirs with ``episode_id`` (or share the default one). One call is in flight per
session. Where env work (build, reset, step, close) runs depends on the env:

* envs that declare ``metadata["blocking"] = False`` (pure-Python worlds: the grid games, the
  template users, the text-mode web sites) run inline on the event loop: a step costs
  microseconds, less than a hand-off to a thread would. If inline calls prove slow (over a
  fifth of a window of 50 take more than 5 ms of CPU, or wait), the env's calls move to the
  threads, where the loop keeps serving other sessions between GIL switches (to one thread
  when the calls were CPU-heavy: more would only take GIL time from the loop);
* every other env (the default: sandboxes, browsers, anything that may wait) runs on the
  bounded threads of a :class:`~agentgym.server.scheduler.FairScheduler`, so one slow env
  never stalls the others.

Capacity (``max_sessions``) counts live sessions, sessions being built, and envs whose call
ran past ``step_timeout_s`` and still runs on its thread; nothing else. A new session at
capacity takes the place of the least recently used idle session that has no episode in
progress (never reset, its reset failed, or its episode ended), which is closed; only when
every session has an episode in progress is the newcomer refused (503).

Every env the server builds is closed, whatever ends its session:

* the client closes or drops its WebSocket, sends ``POST /close``, or the server stops:
  closed under the session's lock, after any call in flight;
* a new session needs its slot and it has no episode in progress (see above);
* the session sits idle past ``session_timeout_s``: the reaper closes it;
* a call runs past ``step_timeout_s``: the session is dropped at once (the client gets an
  error) and the env is closed on its worker thread as soon as the stuck call returns (a
  thread cannot be interrupted). Until then it still counts against ``max_sessions``, which
  bounds live envs, not just addressable sessions. The deadline measures the env's own run
  time (from when its thread starts the call), never the wait for a thread or the loop.

:attr:`SessionManager.envs_built` and :attr:`SessionManager.envs_closed` count both ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import gymnasium as gym

from agentgym.integrations.session import SessionStart, SessionTurn, TextSession
from agentgym.server.errors import (
    CapacityReached,
    EnvBuildError,
    EnvBuildTimeout,
    EnvTimeout,
    ExecutionError,
    NoSuchSession,
    ResetFailed,
    ResetFirst,
    SessionError,
    ShuttingDown,
)
from agentgym.server.ratelog import RateLimitedLog
from agentgym.server.scheduler import CallTimeout, FairScheduler, Timed

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass
class ServerLimits:
    """What one server process allows.

    Attributes:
        max_sessions: Live envs at once (sessions open or being built, plus envs still
            finishing a call that timed out).
        max_body_bytes: Largest HTTP body or WebSocket message.
        max_action_chars: Largest action.
        max_json_depth: Deepest nesting of objects and arrays in a request.
        session_timeout_s: Idle seconds before a session is closed.
        step_timeout_s: Seconds one build, reset or step may run.
        step_workers: Blocking env calls that run at once on threads; None means one per
            allowed session, at most ``DEFAULT_MAX_WORKERS``.
        body_timeout_s: Seconds an HTTP request body may take to arrive.
    """

    max_sessions: int = 64
    max_body_bytes: int = 1 << 20
    max_action_chars: int = 256 * 1024
    max_json_depth: int = 64
    session_timeout_s: float = 600.0
    step_timeout_s: float = 60.0
    step_workers: int | None = None
    body_timeout_s: float = 30.0


DEFAULT_MAX_WORKERS = 256
"""Threads for blocking env calls when ``step_workers`` is not given."""

INLINE_SLOW_S = 0.005
"""An inline call longer than this (one GIL switch interval) holds up every other session;
it counts as slow when it also used that much CPU or waited (see :func:`_held_the_loop`)."""
INLINE_WINDOW, INLINE_SLOW_SHARE = 50, 0.2
"""Inline calls are judged in windows of ``INLINE_WINDOW``: when more than
``INLINE_SLOW_SHARE`` of a window's calls were slow, the env is CPU-heavy though it never
waits (e.g. a text-mode web page rebuilt per step), and its calls move to the threads, where
the event loop keeps answering other sessions (and WebSocket pings) between GIL switches."""


_TRUSTED_WRAPPERS = ("gymnasium.", "agentgym.")


def _held_the_loop(before: resource.struct_rusage) -> str | None:
    """How a call that began at thread usage ``before`` and ran past ``INLINE_SLOW_S`` of
    wall time held the loop: ``"cpu"`` (it used that much CPU), ``"wait"`` (it waited: a
    voluntary context switch, as for a sleep, a lock or I/O), or None. A call that was only
    preempted (another process had the core: involuntary switches alone) says nothing about
    the env, and on a busy machine would otherwise move a microsecond-step env to threads."""
    after = resource.getrusage(resource.RUSAGE_THREAD)
    cpu_s = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if cpu_s > INLINE_SLOW_S:
        return "cpu"
    return "wait" if after.ru_nvcsw > before.ru_nvcsw else None


CPU_BOUND_WORKERS = 1
"""Threads for an env moved off the loop because its calls proved CPU-heavy (not waiting):
pure-Python work holds the GIL, so more threads add no throughput, and every extra thread
that wants the GIL takes a share from the event loop, whose handshakes, pings and replies
then queue behind env steps (4,096 clients with a quarter on WebTodoText, several ms of CPU
per step: with up to 256 such threads, 778 opening handshakes ran past 60 s)."""


def env_blocks(text: TextSession) -> bool:
    """Whether ``text``'s env may block, so that its calls must run on a thread.

    The outermost layer that says (``metadata["blocking"]``) decides. A wrapper from outside
    gymnasium and agentgym that says nothing may do anything (sleep, call a service), so it
    counts as blocking; so does an env that says nothing.
    """
    layer: Any = text.env
    while isinstance(layer, gym.Wrapper):
        own = layer._metadata  # set only where the wrapper declared its own metadata
        if own is not None and "blocking" in own:
            return bool(own["blocking"])
        if not type(layer).__module__.startswith(_TRUSTED_WRAPPERS):
            return True
        layer = layer.env
    return bool((getattr(layer, "metadata", None) or {}).get("blocking", True))


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
    inline: bool = False  # its env never blocks: calls run on the event loop


class SessionManager:
    """Creates, finds, times out and closes sessions; counts envs built and closed."""

    def __init__(self, factory: Callable[[], TextSession], limits: ServerLimits):
        self.factory = factory
        self.limits = limits
        self.sessions: dict[str, Session] = {}
        self.scheduler = FairScheduler(
            limits.step_workers or min(limits.max_sessions, DEFAULT_MAX_WORKERS),
            spare=limits.max_sessions,
        )
        self.builds_inline: bool | None = None  # unknown until the first env is built
        self.inline_ok = True  # False once inline calls proved slow (see INLINE_SLOW_S)
        self._inline_calls = self._inline_slow = self._inline_cpu = 0
        self._probe: asyncio.Future[None] | None = None  # the first build, while it runs
        self.envs_built = 0
        self.envs_closed = 0
        self.evicted = 0
        self._count_lock = threading.Lock()
        self._building: dict[str, asyncio.Future[Session]] = {}
        self._reaper: asyncio.Task | None = None
        self._stopping = False
        self._log = RateLimitedLog(logger)

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
                    self._log.log(
                        logging.INFO, "idle", "agentgym serve: idle session %s closed", sid
                    )
                    await self.close(sid)

    @property
    def open_envs(self) -> int:
        """Envs built and not yet closed (live sessions plus abandoned ones)."""
        with self._count_lock:
            return self.envs_built - self.envs_closed

    @property
    def live(self) -> int:
        """What counts against ``max_sessions``: live sessions, sessions being built, and envs
        whose call ran past its deadline and still runs on a thread."""
        return len(self.sessions) + len(self._building) + self.scheduler.abandoned

    def stats(self) -> dict[str, Any]:
        """Session and scheduler counts for ``/health``."""
        return {
            "active_sessions": len(self.sessions),
            "max_sessions": self.limits.max_sessions,
            "building": len(self._building),
            "envs_built": self.envs_built,
            "envs_closed": self.envs_closed,
            "evicted": self.evicted,
            "scheduler": self.scheduler.stats(),
        }

    # ---- sessions ---------------------------------------------------------------------------

    async def get_or_create(self, sid: str | None = None) -> Session:
        """The session named ``sid`` (a new one when absent); 503 beyond ``max_sessions``.

        Callers that ask for an id being built wait for that build and share its session;
        when it fails they try again (and get its error only from their own build).
        """
        sid = sid or uuid.uuid4().hex
        while self.builds_inline is None and self._probe is not None:
            await asyncio.shield(self._probe)  # the first env says whether builds block
        while True:
            if sid in self.sessions:
                return self.sessions[sid]
            pending = self._building.get(sid)
            if pending is not None:
                with contextlib.suppress(SessionError):
                    return await asyncio.shield(pending)
                continue
            if self.live < self.limits.max_sessions:
                return await self._create(sid)
            await self._make_room()

    async def _create(self, sid: str) -> Session:
        """Build session ``sid`` in a slot known to be free; its waiters get the outcome."""
        loop = asyncio.get_running_loop()
        pending: asyncio.Future[Session] = loop.create_future()
        self._building[sid] = pending
        probe = None
        if self.builds_inline is None:
            probe = self._probe = loop.create_future()
        try:
            text = await self._build_env(sid)
        except BaseException as exc:  # waiters retry on any SessionError; a cancel gives one
            error = exc if isinstance(exc, SessionError) else EnvBuildError("the build stopped")
            pending.set_exception(error)
            pending.exception()  # retrieved: waiters got it, nobody else needs a warning
            raise
        finally:
            self._building.pop(sid, None)
            if probe is not None:
                self._probe = None
                probe.set_result(None)
        session = Session(sid, text, inline=not env_blocks(text))
        self.builds_inline = session.inline
        if self._stopping:  # built while the server shut down: nobody else would close it
            await asyncio.to_thread(self._close_text, session.text)
            shutdown = ShuttingDown("the server is shutting down")
            pending.set_exception(shutdown)
            pending.exception()
            raise shutdown
        self.sessions[sid] = session
        pending.set_result(session)
        return session

    async def _build_env(self, sid: str) -> TextSession:
        """A new env for session ``sid``: inline when builds never block, else on a thread."""
        try:
            if self.builds_inline and self.inline_ok:
                return self._inline(self._build).value
            timed = await self.scheduler.run(
                sid, self._build, timeout=self.limits.step_timeout_s, on_abandon=self._close_text
            )
            return timed.value
        except CallTimeout:
            raise EnvBuildTimeout(
                f"the env was not built within {self.limits.step_timeout_s:g} s"
            ) from None
        except Exception as exc:
            raise EnvBuildError.from_exception(exc, "could not build the env: ") from exc

    def evictable(self) -> Session | None:
        """The idle session without an episode in progress (never reset, its reset failed, or
        its episode ended) that was used longest ago, or None."""
        idle = [
            s
            for s in self.sessions.values()
            if not s.lock.locked() and not (s.started and not s.text.done)
        ]
        return min(idle, key=lambda s: s.last_activity, default=None)

    async def _make_room(self) -> None:
        """Close the :meth:`evictable` session to make room for a new one; 503 when none is.

        Sessions that hold no episode cost an env and give nobody anything: without this, a
        burst of sessions whose reset failed (or the finished sessions of a trainer that was
        killed) held every slot until the idle timeout, and real clients got 503 for minutes.
        """
        victim = self.evictable()
        if victim is None:
            stuck = self.scheduler.abandoned
            raise CapacityReached(
                f"the server holds its maximum of {self.limits.max_sessions} sessions "
                f"({len(self.sessions)} open, {len(self._building)} being built"
                + (f", {stuck} still finishing a call that timed out" if stuck > 0 else "")
                + "), each open one busy or in an episode; close one (POST /close) or wait "
                "for idle ones to time out, and retry"
            )
        self.evicted += 1
        self._log.log(
            logging.INFO,
            "evicted",
            "agentgym serve: at %d sessions; closed idle session %s (no episode in progress) "
            "to make room",
            self.limits.max_sessions,
            victim.id,
        )
        await self.close(victim.id)

    def find(self, sid: str) -> Session:
        try:
            return self.sessions[sid]
        except KeyError:
            raise NoSuchSession(
                f"no session {sid!r} (it may have timed out); call reset first", "episode_id"
            ) from None

    async def close(self, sid: str) -> bool:
        """Close session ``sid`` after any call in flight (a session still being built is
        closed once built: its ``/reset`` then finds it closed); False (and nothing done)
        for an id the server does not hold."""
        while sid not in self.sessions and sid in self._building:
            with contextlib.suppress(SessionError):  # a failed build: nothing to close
                await asyncio.shield(self._building[sid])
        session = self.sessions.pop(sid, None)
        if session is None:
            return False
        async with session.lock:
            if session.closed:
                return True
            session.closed = True
            if session.inline and self.inline_ok:
                self._close_text(session.text)
                return True
            with contextlib.suppress(CallTimeout):
                await self.scheduler.run(
                    sid, self._close_text, session.text, timeout=self.limits.step_timeout_s
                )
        return True

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
                raise ResetFailed.from_exception(exc, "reset failed: ", "options") from exc
            session.step_count = 0
            session.started = True
            session.last_activity = time.monotonic()
            return out

    async def step(self, session: Session, action: Any) -> Timed[SessionTurn]:
        async with session.lock:
            self._check_open(session)
            if not session.started:
                raise ResetFirst("call reset before step")
            session.last_activity = time.monotonic()
            try:
                out = await self._call(session, session.text.step, action)
            except SessionError:
                raise
            except Exception as exc:  # envs never raise on actions; this is a bug or a crash
                self._log.error(
                    "step", "agentgym serve: step of session %s raised", session.id, exc_info=True
                )
                raise ExecutionError.from_exception(exc, "step failed: ") from exc
            session.step_count += 1
            session.last_activity = time.monotonic()
            return out

    # ---- internals --------------------------------------------------------------------------

    def _check_open(self, session: Session) -> None:
        if session.closed:
            raise NoSuchSession(
                f"session {session.id!r} was closed (timed out or replaced); call reset",
                "episode_id",
            )

    def _inline(self, fn: Callable[..., T], *args: Any) -> Timed[T]:
        """``fn(*args)`` on the event loop, timed (for envs that never block); judges whether
        inline calls stay quick enough (see ``INLINE_SLOW_S``)."""
        started, usage = time.monotonic(), resource.getrusage(resource.RUSAGE_THREAD)
        try:
            value = fn(*args)
        finally:
            run_s = time.monotonic() - started
            self._inline_calls += 1
            held = _held_the_loop(usage) if run_s > INLINE_SLOW_S else None
            self._inline_slow += held is not None
            self._inline_cpu += held == "cpu"
            if self._inline_calls >= INLINE_WINDOW:
                if self._inline_slow > INLINE_SLOW_SHARE * self._inline_calls:
                    self._leave_the_loop(cpu_bound=2 * self._inline_cpu > self._inline_slow)
                self._inline_calls = self._inline_slow = self._inline_cpu = 0
        return Timed(value, 0.0, run_s)

    def _leave_the_loop(self, cpu_bound: bool) -> None:
        """Run this env's calls on threads from now on; few of them when it is CPU-bound."""
        self.inline_ok = False
        if cpu_bound:
            self.scheduler.workers = min(self.scheduler.workers, CPU_BOUND_WORKERS)
        logger.warning(
            "agentgym serve: %d of %d inline env calls took over %g ms (%d of them on the "
            "CPU); running this env's calls on %d worker threads from now on",
            self._inline_slow,
            self._inline_calls,
            INLINE_SLOW_S * 1e3,
            self._inline_cpu,
            self.scheduler.workers,
        )

    async def _call(self, session: Session, fn: Callable[..., T], *args: Any) -> Timed[T]:
        if session.inline and self.inline_ok:
            return self._inline(fn, *args)
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
            raise EnvTimeout(
                f"the env did not answer within {self.limits.step_timeout_s:g} s; "
                "the session was closed, reset to start a new one"
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
            self._log.error("close", "agentgym serve: closing an env failed", exc_info=True)
        finally:
            with self._count_lock:
                self.envs_closed += 1
