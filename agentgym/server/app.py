"""Any agentgym env behind OpenEnv's wire protocol (HTTP + WebSocket), as a Starlette app.

Endpoints (JSON everywhere):

=====================  ===================================================================
``GET  /health``       ``{"status": "healthy", "env_id", "active_sessions", "max_sessions",
                       "building", "envs_built", "envs_closed", "scheduler",
                       "connections"}`` (``connections`` when run by the runner)
``GET  /metadata``     ``{"name", "description", "version"}``
``GET  /schema``       ``{"action": ..., "observation": ..., "state": ...}`` (JSON schemas)
``POST /reset``        body ``{"seed"?, "episode_id"?, "task_id"?, "options"?}`` ->
                       ``{"observation", "reward": null, "done": false, "timing"}``
``POST /step``         body ``{"action": {...}, "episode_id"?}`` ->
                       ``{"observation", "reward", "done", "timing"}``
``GET  /state``        ``?episode_id=`` -> ``{"episode_id", "step_count", "task_id", ...}``
``WS   /ws``           one session per connection; messages ``{"type": "reset"|"step"|
                       "state"|"close", "data": {...}}``, answers ``{"type":
                       "observation"|"state"|"error", "data": {...}}``
=====================  ===================================================================

An action is ``{"text": "<model output>"}`` or an OpenAI assistant message
``{"content": ..., "tool_calls": [...]}``. An observation is ``{"text", "images" (PNG data
URLs), "messages" (chat messages to append), "tools" (at reset), "info", "episode_id"}``.
``timing`` is ``{"queue_ms", "run_ms"}``: how long the call waited for a worker thread (0 for
envs that run inline, see :mod:`agentgym.server.sessions`) and how long the env ran (also sent as the ``X-Agentgym-Queue-Ms`` header over HTTP).

A malformed request is refused before any env sees it: HTTP 4xx with ``{"detail", "code",
"field"}``, or over WebSocket an error frame ``{"type": "error", "data": {"message", "code",
"field"}}`` after which the connection and its episode carry on.

HTTP sessions are named by ``episode_id``. Requests without one all use ONE shared default
session (id ``"default"``): ``/reset`` resets it in place, under its lock, so concurrent
clients never break each other's calls, but they do share one episode. Every such response
says so (``X-Agentgym-Shared-Session: default`` and a ``Warning`` header) and the server
logs it; send ``episode_id`` for a private session. An ``episode_id`` is 1..255 printable
ASCII characters without spaces (it is echoed in a header); others are a 400 naming the rule.
Replies never fail to encode: lone surrogates in them become U+FFFD.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import Headers, QueryParams
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from agentgym.integrations.session import TextSession
from agentgym.server import checks, gcpolicy
from agentgym.server.payloads import (
    ACTION_SCHEMA,
    OBSERVATION_SCHEMA,
    STATE_SCHEMA,
    dumps,
    dumps_bytes,
    reset_payload,
    state_payload,
    step_payload,
)
from agentgym.server.ratelog import RateLimitedLog
from agentgym.server.sessions import ServerLimits, Session, SessionError, SessionManager

logger = logging.getLogger(__name__)

DEFAULT_SESSION = "default"
"""The session HTTP requests without ``episode_id`` share."""

SHARED_NOTICE = (
    '199 agentgym "no episode_id: this request used the default session, which every HTTP '
    'client that omits episode_id shares; send episode_id for a private session"'
)
_LOG_EVERY_S = 60.0


class SafeJSONResponse(JSONResponse):
    """A JSON reply whose body never fails to encode (lone surrogates become U+FFFD)."""

    def render(self, content: Any) -> bytes:
        return dumps_bytes(content)


class _ServerApp(Starlette):
    """The Starlette app, with WebSocket connections to ``/ws`` handed straight to
    ``ws_app`` (a plain ASGI app) rather than through Starlette's middleware and router."""

    def __init__(self, ws_app: ASGIApp, **kwargs: Any):
        super().__init__(**kwargs)
        self.ws_app = ws_app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and scope["path"] == "/ws":
            scope["app"] = self
            await self.ws_app(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


Payload = dict[str, Any]
Reply = tuple[Payload, dict[str, str]]


def _error_data(exc: SessionError) -> dict[str, Any]:
    return {"message": str(exc), "code": exc.code, "field": exc.field}


def create_app(
    env_id: str,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    token: str | None = None,
    limits: ServerLimits | None = None,
    session_factory: Callable[[], TextSession] | None = None,
) -> Starlette:
    """The server app for one env id (each session builds its own env)."""
    limits = limits or ServerLimits()
    kwargs = dict(env_kwargs or {})
    # gymnasium's passive checker tests the env's own code at each env's first reset (about
    # 0.4 ms, mostly inspect.signature): the env's tests do that once; a server that builds an
    # env per session would pay it thousands of times. env_kwargs may turn it back on.
    kwargs = {"disable_env_checker": True, **kwargs}
    factory = session_factory or (lambda: TextSession(env_id, env_kwargs=kwargs))
    manager = SessionManager(factory, limits)
    shared_log = {"last": -_LOG_EVERY_S, "uses": 0}
    errors = RateLimitedLog(logger)

    def _authorised(headers: Mapping[str, str], query: Mapping[str, str]) -> bool:
        if not token:
            return True
        auth = headers.get("authorization", "")
        given = auth[7:] if auth.lower().startswith("bearer ") else query.get("token", "")
        return hmac.compare_digest(given.encode(), token.encode())

    async def _body(request: Request) -> dict[str, Any]:
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > limits.max_body_bytes:
            raise SessionError(
                f"request body of {length} bytes exceeds the limit of {limits.max_body_bytes}",
                "VALIDATION_ERROR",
                413,
                "body",
            )
        raw = b""
        try:
            async with asyncio.timeout(limits.body_timeout_s):  # a slow body holds no slot
                async for chunk in request.stream():
                    raw += chunk
                    if len(raw) > limits.max_body_bytes:
                        raise SessionError(
                            f"request body exceeds the limit of {limits.max_body_bytes} bytes",
                            "VALIDATION_ERROR",
                            413,
                            "body",
                        )
        except TimeoutError:
            raise SessionError(
                f"the request body did not arrive within {limits.body_timeout_s:g} s",
                "VALIDATION_ERROR",
                408,
                "body",
            ) from None
        if not raw.strip():
            return {}
        data = checks.parse_json(raw, limits, "body")
        if not isinstance(data, dict):
            raise SessionError(
                f"the request body must be a JSON object, got {type(data).__name__}",
                "VALIDATION_ERROR",
                400,
                "body",
            )
        return data

    def guarded(handler: Callable[[Request], Awaitable[Reply]]) -> Callable[[Request], Any]:
        async def wrapper(request: Request) -> SafeJSONResponse:
            if not _authorised(request.headers, request.query_params):
                return SafeJSONResponse(
                    {"detail": "missing or wrong token", "code": "UNAUTHORIZED", "field": None},
                    status_code=401,
                )
            try:
                payload, headers = await handler(request)
                return SafeJSONResponse(payload, headers=headers)
            except SessionError as exc:
                body = {"detail": str(exc), "code": exc.code, "field": exc.field}
                return SafeJSONResponse(body, status_code=exc.status)
            except Exception as exc:  # a server bug: say so in JSON, keep serving
                errors.error(
                    f"http {request.url.path}",
                    "agentgym serve: %s %s failed",
                    request.method,
                    request.url.path,
                    exc_info=True,
                )
                body = {"detail": f"{type(exc).__name__}: {exc}", "code": "EXECUTION_ERROR"}
                return SafeJSONResponse({**body, "field": None}, status_code=500)

        return wrapper

    def _session_headers(session: Session, shared: bool, queue_s: float | None = None) -> dict:
        headers = {"X-Agentgym-Episode-Id": session.id}
        if queue_s is not None:
            headers["X-Agentgym-Queue-Ms"] = f"{queue_s * 1e3:.3f}"
        if shared:
            headers["X-Agentgym-Shared-Session"] = DEFAULT_SESSION
            headers["Warning"] = SHARED_NOTICE
            shared_log["uses"] += 1
            now = time.monotonic()
            if now - shared_log["last"] >= _LOG_EVERY_S:
                shared_log["last"] = now
                logger.warning(
                    "agentgym serve: HTTP requests without episode_id share the default "
                    "session (%d requests so far); concurrent clients that omit it step "
                    "one episode together. Send episode_id for a private session.",
                    shared_log["uses"],
                )
        return headers

    async def health(request: Request) -> SafeJSONResponse:
        body = {"status": "healthy", "env_id": env_id, **manager.stats()}
        admission = getattr(request.app.state, "admission", None)
        if admission is not None:  # set by the runner (ServerThread, serve)
            body["connections"] = admission.stats()
        return SafeJSONResponse(body)

    async def metadata(request: Request) -> Reply:
        from agentgym import __version__
        from agentgym.registry import get_record

        try:
            description = get_record(env_id).description
        except Exception:
            description = ""
        return {"name": env_id, "description": description, "version": __version__}, {}

    async def schema(request: Request) -> Reply:
        return {
            "action": ACTION_SCHEMA,
            "observation": OBSERVATION_SCHEMA,
            "state": STATE_SCHEMA,
        }, {}

    async def reset(request: Request) -> Reply:
        data = await _body(request)
        seed, options = checks.reset_args(data)
        sid = checks.episode_id(data.get("episode_id"))
        for attempt in range(2):  # once more if the session closed while we waited for it
            session = await manager.get_or_create(sid or DEFAULT_SESSION)
            try:
                timed = await manager.reset(session, seed, options)
                break
            except SessionError:
                if not session.closed or attempt:
                    raise
        return reset_payload(session, timed), _session_headers(session, sid is None, timed.queue_s)

    def _http_session(sid: Any) -> tuple[Session, bool]:
        sid = checks.episode_id(sid)
        if sid is None and DEFAULT_SESSION not in manager.sessions:
            raise SessionError(
                "no session yet: call /reset first", "SESSION_ERROR", 409, "episode_id"
            )
        return manager.find(sid or DEFAULT_SESSION), sid is None

    async def step(request: Request) -> Reply:
        data = await _body(request)
        if "action" not in data:
            raise SessionError(
                'the body must hold "action", e.g. {"action": {"text": "..."}}; got keys '
                + repr(sorted(data))[:200],
                "VALIDATION_ERROR",
                400,
                "action",
            )
        action = checks.action(data["action"], limits)
        session, shared = _http_session(data.get("episode_id"))
        timed = await manager.step(session, action)
        return step_payload(session, timed), _session_headers(session, shared, timed.queue_s)

    async def state(request: Request) -> Reply:
        session, shared = _http_session(request.query_params.get("episode_id"))
        return state_payload(session, env_id), _session_headers(session, shared)

    async def _ws_reply(raw: str | bytes, conn: dict[str, Session]) -> Payload | None:
        """The answer to one WebSocket message (None: the client asked to close).

        ``conn["session"]`` is the connection's session, created by its first message.
        """
        if len(raw) > limits.max_body_bytes:
            raise SessionError(
                f"message of {len(raw)} bytes exceeds {limits.max_body_bytes}",
                "VALIDATION_ERROR",
                400,
                "message",
            )
        msg = checks.parse_json(raw, limits, "message")
        if not isinstance(msg, dict):
            raise SessionError(
                'a message is a JSON object {"type": ..., "data": {...}}',
                "INVALID_JSON",
                400,
                "message",
            )
        kind, data = msg.get("type", ""), msg.get("data")
        if kind == "close":
            return None
        # check the message fully before any session is built or touched
        if kind == "reset":
            seed, options = checks.reset_args(data, "data.")
        elif kind == "step":
            action = checks.action(data, limits, "data")
        elif kind != "state":
            raise SessionError(
                f"unknown message type {str(kind)[:60]!r}; expected reset, step, state or close",
                "UNKNOWN_TYPE",
                400,
                "type",
            )
        session = conn.get("session")
        if session is None or session.closed:
            session = conn["session"] = await manager.get_or_create()
        if kind == "reset":
            timed = await manager.reset(session, seed, options)
            return {"type": "observation", "data": reset_payload(session, timed)}
        if kind == "step":
            turn = await manager.step(session, action)
            return {"type": "observation", "data": step_payload(session, turn)}
        return {"type": "state", "data": state_payload(session, env_id)}

    async def ws(scope: Scope, receive: Receive, send: Send) -> None:
        """One WebSocket session, as a plain ASGI app: no per-message wrappers (Starlette's
        ``WebSocket`` state checks and its exception middleware's ``send`` wrapper), since at
        thousands of sessions the per-message cost of the server is its throughput."""
        if (await receive())["type"] != "websocket.connect":
            return
        if not _authorised(Headers(scope=scope), QueryParams(scope.get("query_string", b""))):
            await send({"type": "websocket.close", "code": 1008, "reason": ""})
            return
        await send({"type": "websocket.accept"})
        conn: dict[str, Session] = {}
        try:
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":  # websocket.disconnect
                    break
                raw = message.get("text")
                if raw is None:
                    raw = message.get("bytes") or b""
                try:
                    reply = await _ws_reply(raw, conn)
                except SessionError as exc:
                    reply = {"type": "error", "data": _error_data(exc)}
                except Exception as exc:  # a server bug: report it, keep the session
                    errors.error("ws", "agentgym serve: WebSocket message failed", exc_info=True)
                    reply = {
                        "type": "error",
                        "data": {
                            "message": f"{type(exc).__name__}: {exc}",
                            "code": "EXECUTION_ERROR",
                            "field": None,
                        },
                    }
                if reply is None:
                    break
                await send({"type": "websocket.send", "text": dumps(reply)})
        except OSError:  # the client went away while we answered (uvicorn: ClientDisconnected)
            pass
        finally:
            if "session" in conn:
                await manager.close(conn["session"].id)
            with suppress(Exception):  # the client may have closed first
                await send({"type": "websocket.close", "code": 1000, "reason": ""})

    @asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        manager.start()
        gcpolicy.serving_started()
        try:
            yield
        finally:
            gcpolicy.serving_stopped()
            await manager.stop()

    app = _ServerApp(
        ws,
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/metadata", guarded(metadata), methods=["GET"]),
            Route("/schema", guarded(schema), methods=["GET"]),
            Route("/reset", guarded(reset), methods=["POST"]),
            Route("/step", guarded(step), methods=["POST"]),
            Route("/state", guarded(state), methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    app.state.manager = manager
    return app
