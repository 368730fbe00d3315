"""Transports of agentgym's MCP server (imported only where the ``mcp`` SDK is installed): streamable HTTP that admits sessions by what they
hold, and stdio that answers every request.

Streamable HTTP (:func:`env_session_app`). The SDK counts every MCP session against its
``max_sessions``, and a session exists from its ``initialize`` request on: 64 bare
``initialize`` requests held every slot for the 10-minute idle timeout, and no client could
play. Here:

* the limit that protects the machine counts *envs*: a session holds one from its first
  ``reset`` until it ends, and a ``reset`` that would build one more than ``max_envs`` is
  refused (a tool error naming the limit), never a session that holds one;
* sessions without an env are cheap but still bounded: at most ``max_envs`` plus
  ``max(64, max_envs)`` sessions in all. A new session at that bound takes the place of the
  least recently used session that holds no env and has no request in flight, which is
  ended (its id then answers 404, as after an idle timeout); only when none is idle is the
  newcomer refused (HTTP 503). A flood of bare ``initialize`` requests thus pushes out only
  its own kind.

stdio (:class:`RepairedReads`). The SDK's stdio reader hands a line it cannot parse to the
server loop as an exception, which the loop drops: a request holding a lone-surrogate JSON
escape (``"\\ud800"``, which Python's ``json.dumps`` writes for a model's half emoji) got no
reply, and its client waited forever. Such a line is parsed again with the standard
library, its lone surrogates replaced by U+FFFD (as everywhere an observation is echoed), and
served; a line that is no JSON at all gets a JSON-RPC parse error, and a request that is not
a valid JSON-RPC request an invalid-request error with its id.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import anyio
from pydantic import ValidationError

from agentgym.server.ratelog import RateLimitedLog
from agentgym.text import safe_text

logger = logging.getLogger(__name__)

MIN_BARE_SESSIONS = 64
"""Sessions without an env allowed beyond ``max_envs`` (at least; ``max_envs`` if larger)."""

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def session_bound(max_envs: int | None) -> int | None:
    """Sessions allowed in all (with an env or not) for ``max_envs`` envs.

    Examples:
        >>> session_bound(64), session_bound(4), session_bound(None)
        (128, 68, None)
    """
    return None if max_envs is None else max_envs + max(MIN_BARE_SESSIONS, max_envs)


def _manager_class() -> type:
    from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    class EnvSessionManager(StreamableHTTPSessionManager):
        """The SDK's session manager, making room for new sessions by ending idle ones that
        hold no env (see the module docstring). ``holds_env(session_id)`` says which do."""

        def __init__(self, *args: Any, holds_env: Callable[[str], bool], **kwargs: Any):
            super().__init__(*args, **kwargs)
            self.holds_env = holds_env
            self.activity: dict[str, list[float]] = {}  # id -> [requests in flight, last seen]
            self.evicted = 0
            self._log = RateLimitedLog(logger)

        def evictable(self) -> str | None:
            """The id of the least recently used session that holds no env and has no
            request in flight, or None."""
            idle = [
                (seen, sid)
                for sid, (in_flight, seen) in self.activity.items()
                if not in_flight and sid in self._server_instances and not self.holds_env(sid)
            ]
            return min(idle)[1] if idle else None

        def _admit_session(self, requestor: Any) -> Any:
            bound = self.max_sessions
            if bound is not None and len(self._server_instances) >= bound:
                self._evict(self.evictable())
            transport = super()._admit_session(requestor)
            if transport is not None:  # its opening request is in flight
                self.activity[str(transport.mcp_session_id)] = [1, time.monotonic()]
            return transport

        def _evict(self, sid: str | None) -> None:
            if sid is None or self._task_group is None:
                return
            transport = self._server_instances.pop(sid)
            self._session_owners.pop(sid, None)
            self.activity.pop(sid, None)
            self.evicted += 1
            self._log.log(
                logging.INFO,
                "evicted",
                "agentgym mcp: at %d sessions; ended idle session %s (no env) to make room",
                self.max_sessions,
                sid,
            )
            self._task_group.start_soon(transport.terminate)

        def _seen(self, sid: str | None, in_flight: int) -> None:
            entry = self.activity.get(sid) if sid is not None else None
            if entry is not None:
                entry[0] += in_flight
                entry[1] = time.monotonic()

        async def _serve_opening_request(self, transport: Any, *args: Any) -> None:
            try:
                await super()._serve_opening_request(transport, *args)
            finally:
                self._seen(transport.mcp_session_id, -1)

        async def _handle_stateful_request(self, scope: Any, receive: Any, send: Any) -> None:
            header = MCP_SESSION_ID_HEADER.encode()
            sid = next((v.decode("latin-1") for k, v in scope["headers"] if k == header), None)
            self._seen(sid, +1)
            try:
                await super()._handle_stateful_request(scope, receive, send)
            finally:
                self._seen(sid, -1)

        async def _discard_session(self, session_id: str, transport: Any) -> None:
            self.activity.pop(session_id, None)
            await super()._discard_session(session_id, transport)

    return EnvSessionManager


def env_session_app(
    server: Any,
    *,
    path: str,
    host: str,
    max_envs: int | None,
    session_idle_timeout: float | None,
    holds_env: Callable[[str], bool],
) -> Any:
    """The streamable-HTTP Starlette app for ``server`` with env-aware admission.

    As the SDK's ``Server.streamable_http_app`` builds it without auth (loopback hosts get
    its DNS-rebinding protection), with :func:`session_bound` sessions in all.
    """
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.routing import Route

    security = None
    if host in _LOOPBACK:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    manager = _manager_class()(
        server,
        security_settings=security,
        session_idle_timeout=session_idle_timeout,
        max_sessions=session_bound(max_envs),
        holds_env=holds_env,
    )
    app = Starlette(
        routes=[Route(path, endpoint=StreamableHTTPASGIApp(manager))],
        lifespan=lambda app: manager.run(),
    )
    app.state.session_manager = manager
    return app


# ---- stdio ----------------------------------------------------------------------------------


def _clean(value: Any) -> Any:
    """``value`` (parsed JSON) with every string's lone surrogates replaced by U+FFFD."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        return {safe_text(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


class RepairedReads:
    """The stdio transport's read stream, serving or answering the lines the SDK's reader
    could not parse (see the module docstring); everything else passes through unchanged.

    Args:
        inner: The read stream of ``mcp.server.stdio.stdio_server``.
        write: Its write stream, where the error replies go.
    """

    def __init__(self, inner: Any, write: Any):
        self._inner = inner
        self._write = write
        self._log = RateLimitedLog(logger)

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, ValidationError):
                return item
            repaired = await self._repair(item)
            if repaired is not None:
                return repaired

    async def _repair(self, error: Any) -> Any:
        """The request in the line behind ``error``, made valid; or None after answering it."""
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        problems = error.errors()
        raw = problems[0].get("input") if problems else None
        if not problems or problems[0].get("type") != "json_invalid" or not isinstance(raw, str):
            return None  # valid JSON of the wrong shape: the SDK's own handling (dropped)
        try:
            data = json.loads(raw)
        except ValueError:
            await self._answer(None, types.PARSE_ERROR, "the line is not valid JSON")
            return None
        try:
            message = types.jsonrpc_message_adapter.validate_python(_clean(data), by_name=False)
        except ValidationError:
            request_id = data.get("id") if isinstance(data, dict) else None
            if isinstance(data, dict) and "method" in data and isinstance(request_id, str | int):
                await self._answer(request_id, types.INVALID_REQUEST, "not a JSON-RPC request")
            return None
        self._log.log(
            logging.INFO,
            "repaired",
            "agentgym mcp: a stdio message held lone surrogate escapes; served with U+FFFD",
        )
        return SessionMessage(message)

    async def _answer(self, request_id: str | int | None, code: int, message: str) -> None:
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        reply = types.JSONRPCError(
            jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
        )
        await self._write.send(SessionMessage(reply))

    def __aiter__(self) -> RepairedReads:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        self._inner.close()

    async def __aenter__(self) -> RepairedReads:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
