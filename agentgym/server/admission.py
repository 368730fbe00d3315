"""Admission control for the env server's connections: a cap under the fd limit, a deadline
for request heads, and an event-loop error log that cannot flood.

A client that opens many TCP connections and never finishes a request (half-open, or
sending its headers a byte at a time) used to hold one file descriptor each until the
process ran out: ``accept()`` then failed with "Too many open files", nobody else got in,
and asyncio logged a traceback for every failed accept (about 97 MB in 30 s).

Rules, enforced in the HTTP protocol before any request reaches the app:

* At most ``max_connections`` connections are open at once, a number kept below the
  process's ``RLIMIT_NOFILE`` (see :func:`connection_cap`) so fds stay free for envs, logs
  and the listening socket. When a new connection takes the count past the cap, the
  connection that has waited longest without sending a complete request head is closed
  (the newcomer itself when every other connection is busy): connections that do work are
  never evicted by connections that do not.
* A connection must send a complete request head (an HTTP request or a WebSocket upgrade)
  within ``header_timeout_s`` of connecting, or it is closed.
* Errors the event loop reports (a failed ``accept``, a connection reset) are logged at most
  once per ``LOG_EVERY_S`` per kind, with a count of those left out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
from typing import Any

from agentgym.server.ratelog import RateLimitedLog

logger = logging.getLogger(__name__)

LOG_EVERY_S = 10.0
"""How often one kind of event-loop error may be logged."""

HEADER_TIMEOUT_S = 60.0
"""Seconds a new connection has to send its request head (nginx's default too): generous,
since a busy client may connect long before it writes; fd pressure is handled by eviction."""


def fd_limit() -> int:
    """The process's soft ``RLIMIT_NOFILE`` (open files allowed)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def raise_fd_limit() -> int:
    """Raise the soft fd limit to the hard one (a server's usual first step); the new limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = max(soft, 1 << 20) if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        with contextlib.suppress(ValueError, OSError):  # a container may refuse: keep it
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return fd_limit()


def connection_cap(limit: int | None = None) -> int:
    """Connections to allow under an fd limit: it less an eighth of it (at least 64) kept free.

    Examples:
        >>> connection_cap(1024), connection_cap(256)
        (896, 192)
    """
    limit = fd_limit() if limit is None else limit
    return max(8, limit - max(64, limit // 8))


class Admission:
    """Connection cap and request-head deadline shared by every connection of one server.

    Args:
        max_connections: Open connections allowed (HTTP and WebSocket together).
        header_timeout_s: Seconds a new connection has to send a complete request head.
    """

    def __init__(self, max_connections: int, header_timeout_s: float = HEADER_TIMEOUT_S):
        if max_connections < 1:
            raise ValueError(f"max_connections must be >= 1, got {max_connections}")
        self.max_connections = int(max_connections)
        self.header_timeout_s = float(header_timeout_s)
        self._waiting: dict[Any, asyncio.TimerHandle] = {}  # no request head yet, oldest first
        self._closing: set[Any] = set()  # closed by us, connection_lost not seen yet
        self.evicted = 0
        self.timed_out = 0
        self._log = RateLimitedLog(logger, LOG_EVERY_S)

    def stats(self) -> dict[str, int]:
        """Counts for ``/health``."""
        return {
            "max_connections": self.max_connections,
            "awaiting_request": len(self._waiting),
            "evicted": self.evicted,
            "head_timeouts": self.timed_out,
        }

    def admit(self, conn: Any, connections: set[Any]) -> None:
        """A connection was made (``conn`` has a ``transport``): start its deadline, and close
        the longest-waiting idle connections while the server holds more than the cap."""
        loop = asyncio.get_running_loop()
        self._waiting[conn] = loop.call_later(self.header_timeout_s, self._expire, conn)
        while len(connections) - len(self._closing) > self.max_connections and self._waiting:
            oldest = next(iter(self._waiting))
            self.evicted += 1
            self._log.warning(
                "evicted",
                "agentgym serve: %d connections open (the cap is %d, under the fd limit); "
                "closing the ones that waited longest without sending a request",
                len(connections),
                self.max_connections,
            )
            self._drop(oldest)

    def heard(self, conn: Any) -> None:
        """``conn`` sent a complete request head: it is no longer idle."""
        timer = self._waiting.pop(conn, None)
        if timer is not None:
            timer.cancel()

    def forget(self, conn: Any) -> None:
        """``conn``'s connection is gone."""
        self.heard(conn)
        self._closing.discard(conn)

    def _expire(self, conn: Any) -> None:
        if conn in self._waiting:
            self.timed_out += 1
            self._drop(conn)

    def _drop(self, conn: Any) -> None:
        self.heard(conn)
        self._closing.add(conn)
        transport = getattr(conn, "transport", None)
        if transport is not None and not transport.is_closing():
            transport.close()
        else:
            self._closing.discard(conn)

    def loop_exception_handler(self, loop: asyncio.AbstractEventLoop, context: dict) -> None:
        """asyncio's error reports, rate-limited by message (e.g. failed ``accept`` calls)."""
        exc = context.get("exception")
        kind = str(context.get("message", "")) + (type(exc).__name__ if exc else "")
        self._log.error(
            kind,
            "agentgym serve: event loop: %s%s",
            context.get("message", "error"),
            f": {type(exc).__name__}: {exc}" if exc else "",
        )


def admitted_protocol(admission: Admission, log: Any = None) -> type:
    """uvicorn's h11 HTTP protocol, reporting connections and request heads to ``admission``
    (and logging through ``log``, a :class:`~agentgym.server.ratelog.ProtocolLog`, if given)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class AdmittedH11Protocol(H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any):
            super().__init__(*args, **kwargs)
            if log is not None:
                self.logger = log

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            admission.admit(self, self.connections)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            upgraded = self.transport is not None and self.transport.get_protocol() is not self
            if self.cycle is not None or upgraded:
                admission.heard(self)

        def connection_lost(self, exc: Exception | None) -> None:
            admission.forget(self)
            super().connection_lost(exc)

    return AdmittedH11Protocol
