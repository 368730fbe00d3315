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
``POST /close``        body ``{"episode_id"}`` -> ``{"episode_id", "closed"}``: ends the session
                       and closes its env now (``closed`` is false for an id not held)
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

The parts: :mod:`~agentgym.server.http_api` (the HTTP routes),
:mod:`~agentgym.server.ws_app` (``/ws``), :mod:`~agentgym.server.auth` (the token rule),
:mod:`~agentgym.server.errors` (the refusals: wire code and HTTP status of each),
:mod:`~agentgym.server.checks` (what a request must look like),
:mod:`~agentgym.server.sessions` (sessions, capacity, deadlines).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from agentgym.integrations.session import TextSession, takes_answer_tool
from agentgym.server import gcpolicy
from agentgym.server.http_api import DEFAULT_SESSION, SHARED_NOTICE, HttpApi, SafeJSONResponse
from agentgym.server.sessions import ServerLimits, SessionManager
from agentgym.server.ws_app import WebSocketApp

__all__ = ["DEFAULT_SESSION", "SHARED_NOTICE", "SafeJSONResponse", "create_app"]


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
    if session_factory is None:
        # Envs that end with an <answer> offer the answer tool too, so a client that sends
        # only structured tool calls can answer; env_kwargs {"answer_tool": false} opts out.
        answer_tool = kwargs.pop("answer_tool", None)
        answer_tool = takes_answer_tool(env_id) if answer_tool is None else bool(answer_tool)
    factory = session_factory or (
        lambda: TextSession(env_id, env_kwargs=kwargs, answer_tool=answer_tool)
    )
    manager = SessionManager(factory, limits)
    api = HttpApi(env_id, manager, limits, token)

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
        WebSocketApp(env_id, manager, limits, token),
        routes=[
            Route("/health", api.health, methods=["GET"]),
            Route("/metadata", api.guarded(api.metadata), methods=["GET"]),
            Route("/schema", api.guarded(api.schema), methods=["GET"]),
            Route("/reset", api.guarded(api.reset), methods=["POST"]),
            Route("/step", api.guarded(api.step), methods=["POST"]),
            Route("/state", api.guarded(api.state), methods=["GET"]),
            Route("/close", api.guarded(api.close), methods=["POST"]),
        ],
        lifespan=lifespan,
    )
    app.state.manager = manager
    return app
