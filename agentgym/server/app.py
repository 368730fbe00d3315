"""Any agentgym env behind OpenEnv's wire protocol (HTTP + WebSocket), as a Starlette app.

Endpoints (JSON everywhere):

=====================  ===================================================================
``GET  /health``       ``{"status": "healthy", "env_id", "active_sessions", "max_sessions"}``
``GET  /metadata``     ``{"name", "description", "version"}``
``GET  /schema``       ``{"action": ..., "observation": ..., "state": ...}`` (JSON schemas)
``POST /reset``        body ``{"seed"?, "episode_id"?, "task_id"?, "options"?}`` ->
                       ``{"observation", "reward": null, "done": false}``
``POST /step``         body ``{"action": {...}, "episode_id"?}`` ->
                       ``{"observation", "reward", "done"}``
``GET  /state``        ``?episode_id=`` -> ``{"episode_id", "step_count", "task_id", ...}``
``WS   /ws``           one session per connection; messages ``{"type": "reset"|"step"|
                       "state"|"close", "data": {...}}``, answers ``{"type":
                       "observation"|"state"|"error", "data": {...}}``
=====================  ===================================================================

An action is ``{"text": "<model output>"}`` or an OpenAI assistant message
``{"content": ..., "tool_calls": [...]}``. An observation is ``{"text", "images" (PNG data
URLs), "messages" (chat messages to append), "tools" (at reset), "info", "episode_id"}``.

HTTP sessions are named by ``episode_id``: ``/reset`` without one starts a new session and
returns its id in the observation; ``/step`` and ``/state`` without one use the session of
the latest ``/reset`` that did not name one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
from collections.abc import Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import numpy as np
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from agentgym.integrations.session import SessionStart, SessionTurn, TextSession
from agentgym.server.sessions import ServerLimits, Session, SessionError, SessionManager

logger = logging.getLogger(__name__)

ACTION_SCHEMA: dict[str, Any] = {
    "title": "AgentGymAction",
    "description": "One assistant turn: raw text, or an OpenAI assistant message.",
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "The model's raw output for the turn."},
        "content": {"type": ["string", "null"]},
        "tool_calls": {"type": "array", "items": {"type": "object"}},
    },
}
OBSERVATION_SCHEMA: dict[str, Any] = {
    "title": "AgentGymObservation",
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "What is new since the last turn."},
        "images": {"type": "array", "items": {"type": "string", "format": "data-url"}},
        "messages": {"type": "array", "items": {"type": "object"}},
        "tools": {"type": "array", "items": {"type": "object"}},
        "info": {"type": "object"},
        "episode_id": {"type": "string"},
    },
    "required": ["text", "messages", "info", "episode_id"],
}
STATE_SCHEMA: dict[str, Any] = {
    "title": "AgentGymState",
    "type": "object",
    "properties": {
        "episode_id": {"type": ["string", "null"]},
        "step_count": {"type": "integer", "minimum": 0},
        "env_id": {"type": "string"},
        "task_id": {"type": ["string", "null"]},
        "state_key": {"type": ["string", "null"]},
        "done": {"type": "boolean"},
        "total_reward": {"type": "number"},
    },
}


def jsonable(obj: Any) -> Any:
    """``obj`` with numpy values, tuples and non-finite floats made JSON-safe."""
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist() if obj.size <= 4096 else f"<array {obj.shape} {obj.dtype}>"
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    return str(obj)


def _images(messages: list[dict[str, Any]]) -> list[str]:
    out = []
    for m in messages:
        if isinstance(m.get("content"), list):
            out += [p["image_url"]["url"] for p in m["content"] if p.get("type") == "image_url"]
    return out


def _text(messages: list[dict[str, Any]]) -> str:
    last = messages[-1]["content"] if messages else ""
    if isinstance(last, list):
        return "".join(p.get("text", "") for p in last if p.get("type") == "text")
    return str(last)


def _reset_payload(session: Session, out: SessionStart) -> dict[str, Any]:
    obs = {
        "text": _text(out.messages),
        "images": _images(out.messages),
        "messages": out.messages,
        "tools": out.tools,
        "info": out.info,
        "episode_id": session.id,
    }
    return {"observation": jsonable(obs), "reward": None, "done": False}


def _step_payload(session: Session, out: SessionTurn) -> dict[str, Any]:
    obs = {
        "text": _text(out.messages),
        "images": _images(out.messages),
        "messages": out.messages,
        "info": {**out.info, "terminated": out.terminated, "truncated": out.truncated},
        "episode_id": session.id,
    }
    return {"observation": jsonable(obs), "reward": out.reward, "done": out.done}


def _state_payload(session: Session, env_id: str) -> dict[str, Any]:
    t = session.text
    return jsonable(
        {
            "episode_id": session.id,
            "step_count": session.step_count,
            "env_id": env_id,
            "task_id": t.info.get("task_id"),
            "state_key": t.info.get("state_key"),
            "done": t.done,
            "total_reward": t.total_reward,
            "success": t.success,
        }
    )


def _action(data: Any, limits: ServerLimits) -> Any:
    """The assistant turn inside an OpenEnv action dict (``text`` or an OpenAI message)."""
    if isinstance(data, str):
        action: Any = data
    elif isinstance(data, Mapping):
        if isinstance(data.get("message"), Mapping):
            data = data["message"]
        if "tool_calls" in data or ("content" in data and "text" not in data):
            action = {"content": data.get("content"), "tool_calls": data.get("tool_calls") or []}
        elif isinstance(data.get("text"), str):
            action = data["text"]
        else:
            raise SessionError(
                'an action is {"text": "..."} or an OpenAI assistant message '
                '{"content": "...", "tool_calls": [...]}; got keys ' + repr(sorted(data))[:200],
                "VALIDATION_ERROR",
            )
    else:
        raise SessionError(
            f"an action must be a JSON object, got {type(data).__name__}", "VALIDATION_ERROR"
        )
    size = len(action) if isinstance(action, str) else len(json.dumps(action, default=str))
    if size > limits.max_action_chars:
        raise SessionError(
            f"the action holds {size} characters; this server accepts at most "
            f"{limits.max_action_chars} (agentgym serve --max-action-chars)",
            "VALIDATION_ERROR",
            413,
        )
    return action


def _reset_args(data: Mapping[str, Any]) -> tuple[int | None, dict[str, Any] | None]:
    seed = data.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
        raise SessionError(f"seed must be a non-negative integer, got {seed!r}", "VALIDATION_ERROR")
    options = dict(data.get("options") or {})
    if not isinstance(data.get("options") or {}, Mapping):
        raise SessionError("options must be a JSON object", "VALIDATION_ERROR")
    if data.get("task_id") is not None:
        options["task_id"] = data["task_id"]
    return seed, options or None


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
    factory = session_factory or (lambda: TextSession(env_id, env_kwargs=kwargs))
    manager = SessionManager(factory, limits)
    http_default: dict[str, str] = {}

    def _authorised(headers: Mapping[str, str], query: Mapping[str, str]) -> bool:
        if not token:
            return True
        auth = headers.get("authorization", "")
        given = auth[7:] if auth.lower().startswith("bearer ") else query.get("token", "")
        import hmac

        return hmac.compare_digest(given.encode(), token.encode())

    def _error(exc: SessionError) -> JSONResponse:
        return JSONResponse({"detail": str(exc), "code": exc.code}, status_code=exc.status)

    async def _body(request: Request) -> dict[str, Any]:
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > limits.max_body_bytes:
            raise SessionError(
                f"request body of {length} bytes exceeds the limit of {limits.max_body_bytes}",
                "VALIDATION_ERROR",
                413,
            )
        raw = b""
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > limits.max_body_bytes:
                raise SessionError(
                    f"request body exceeds the limit of {limits.max_body_bytes} bytes",
                    "VALIDATION_ERROR",
                    413,
                )
        if not raw.strip():
            return {}
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise SessionError(f"invalid JSON: {exc}", "INVALID_JSON") from exc
        if not isinstance(data, dict):
            raise SessionError("the request body must be a JSON object", "VALIDATION_ERROR")
        return data

    def guarded(handler: Callable[[Request], Any]) -> Callable[[Request], Any]:
        async def wrapper(request: Request) -> JSONResponse:
            if not _authorised(request.headers, request.query_params):
                return JSONResponse(
                    {"detail": "missing or wrong token", "code": "UNAUTHORIZED"}, status_code=401
                )
            try:
                return JSONResponse(await handler(request))
            except SessionError as exc:
                return _error(exc)

        return wrapper

    async def health(request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "status": "healthy",
                "env_id": env_id,
                "active_sessions": len(manager.sessions),
                "max_sessions": limits.max_sessions,
            }
        )

    async def metadata(request: Request) -> dict[str, Any]:
        from agentgym import __version__
        from agentgym.registry import get_record

        try:
            description = get_record(env_id).description
        except Exception:
            description = ""
        return {"name": env_id, "description": description, "version": __version__}

    async def schema(request: Request) -> dict[str, Any]:
        return {"action": ACTION_SCHEMA, "observation": OBSERVATION_SCHEMA, "state": STATE_SCHEMA}

    async def reset(request: Request) -> dict[str, Any]:
        data = await _body(request)
        seed, options = _reset_args(data)
        sid = data.get("episode_id")
        if sid is not None and (not isinstance(sid, str) or not 0 < len(sid) <= 255):
            raise SessionError("episode_id must be a string of 1..255 chars", "VALIDATION_ERROR")
        session = await manager.get_or_create(sid)
        if sid is None:
            old = http_default.get("id")
            if old and old != session.id:
                await manager.close(old)
            http_default["id"] = session.id
        return _reset_payload(session, await manager.reset(session, seed, options))

    def _http_session(sid: Any) -> Session:
        sid = sid or http_default.get("id")
        if not sid:
            raise SessionError("no session yet: call /reset first", "SESSION_ERROR", 409)
        return manager.find(str(sid))

    async def step(request: Request) -> dict[str, Any]:
        data = await _body(request)
        if "action" not in data:
            raise SessionError('the body must hold "action"', "VALIDATION_ERROR")
        action = _action(data["action"], limits)
        session = _http_session(data.get("episode_id"))
        return _step_payload(session, await manager.step(session, action))

    async def state(request: Request) -> dict[str, Any]:
        return _state_payload(_http_session(request.query_params.get("episode_id")), env_id)

    async def ws(websocket: WebSocket) -> None:
        if not _authorised(websocket.headers, websocket.query_params):
            await websocket.close(code=1008)
            return
        await websocket.accept()
        session: Session | None = None
        try:
            while True:
                raw = await websocket.receive_text()
                try:
                    if len(raw) > limits.max_body_bytes:
                        raise SessionError(
                            f"message of {len(raw)} chars exceeds {limits.max_body_bytes}",
                            "VALIDATION_ERROR",
                        )
                    try:
                        msg = json.loads(raw)
                    except ValueError as exc:
                        raise SessionError(f"Invalid JSON: {exc}", "INVALID_JSON") from exc
                    if not isinstance(msg, dict):
                        raise SessionError("a message is a JSON object", "INVALID_JSON")
                    kind, data = msg.get("type", ""), msg.get("data") or {}
                    if kind == "close":
                        break
                    if session is None or session.id not in manager.sessions:
                        session = await manager.get_or_create()
                    if kind == "reset":
                        if not isinstance(data, dict):
                            raise SessionError("reset data must be an object", "VALIDATION_ERROR")
                        seed, options = _reset_args(data)
                        out = await manager.reset(session, seed, options)
                        reply = {"type": "observation", "data": _reset_payload(session, out)}
                    elif kind == "step":
                        action = _action(data, limits)
                        turn = await manager.step(session, action)
                        reply = {"type": "observation", "data": _step_payload(session, turn)}
                    elif kind == "state":
                        reply = {"type": "state", "data": _state_payload(session, env_id)}
                    else:
                        raise SessionError(f"Unknown message type: {kind}", "UNKNOWN_TYPE")
                except SessionError as exc:
                    reply = {"type": "error", "data": {"message": str(exc), "code": exc.code}}
                await websocket.send_text(json.dumps(reply))
        except WebSocketDisconnect:
            pass
        finally:
            if session is not None:
                await manager.close(session.id)
            with contextlib.suppress(Exception):  # the client may have closed first
                await websocket.close()

    @asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        manager.start()
        yield
        await manager.stop()

    app = Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/metadata", guarded(metadata), methods=["GET"]),
            Route("/schema", guarded(schema), methods=["GET"]),
            Route("/reset", guarded(reset), methods=["POST"]),
            Route("/step", guarded(step), methods=["POST"]),
            Route("/state", guarded(state), methods=["GET"]),
            WebSocketRoute("/ws", ws),
        ],
        lifespan=lifespan,
    )
    app.state.manager = manager
    return app
