"""The env server's WebSocket endpoint ``/ws``: one session per connection.

Messages are ``{"type": "reset"|"step"|"state"|"close", "data": {...}}``; answers are
``{"type": "observation"|"state"|"error", "data": {...}}``. A bad message is answered with an
error frame and the connection and its episode carry on. The app is plain ASGI (no Starlette
``WebSocket`` wrapper): at thousands of sessions the server's cost per message is its
throughput, so nothing runs per message besides the checks and the env call.
"""

from __future__ import annotations

import logging
from contextlib import suppress
from typing import Any

from starlette.datastructures import Headers, QueryParams
from starlette.types import Receive, Scope, Send

from agentgym.server import checks
from agentgym.server.auth import authorised
from agentgym.server.errors import (
    ExecutionError,
    InvalidJSON,
    RequestTooLarge,
    SessionError,
    UnknownMessageType,
    ws_frame,
)
from agentgym.server.payloads import dumps, reset_payload, state_payload, step_payload
from agentgym.server.ratelog import RateLimitedLog
from agentgym.server.sessions import ServerLimits, Session, SessionManager

logger = logging.getLogger(__name__)

Payload = dict[str, Any]


class WebSocketApp:
    """The ASGI app behind ``/ws`` for one server (see the module docstring)."""

    def __init__(
        self, env_id: str, manager: SessionManager, limits: ServerLimits, token: str | None
    ):
        self.env_id = env_id
        self.manager = manager
        self.limits = limits
        self.token = token
        self.errors = RateLimitedLog(logger)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (await receive())["type"] != "websocket.connect":
            return
        query = QueryParams(scope.get("query_string", b""))
        if not authorised(self.token, Headers(scope=scope), query):
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
                reply = await self._answer(raw, conn)
                if reply is None:
                    break
                await send({"type": "websocket.send", "text": dumps(reply)})
        except OSError:  # the client went away while we answered (uvicorn: ClientDisconnected)
            pass
        finally:
            if "session" in conn:
                await self.manager.close(conn["session"].id)
            with suppress(Exception):  # the client may have closed first
                await send({"type": "websocket.close", "code": 1000, "reason": ""})

    async def _answer(self, raw: str | bytes, conn: dict[str, Session]) -> Payload | None:
        """:meth:`reply`, with every failure turned into an error frame."""
        try:
            return await self.reply(raw, conn)
        except SessionError as exc:
            return ws_frame(exc)
        except Exception as exc:  # a server bug: report it, keep the session
            self.errors.error("ws", "agentgym serve: WebSocket message failed", exc_info=True)
            return ws_frame(ExecutionError.from_exception(exc))

    async def reply(self, raw: str | bytes, conn: dict[str, Session]) -> Payload | None:
        """The answer to one message (None: the client asked to close).

        ``conn["session"]`` is the connection's session, created by its first message that
        needs one.
        """
        if len(raw) > self.limits.max_body_bytes:
            raise RequestTooLarge(
                f"message of {len(raw)} bytes exceeds {self.limits.max_body_bytes}", "message"
            )
        msg = checks.parse_json(raw, self.limits, "message")
        if not isinstance(msg, dict):
            raise InvalidJSON('a message is a JSON object {"type": ..., "data": {...}}', "message")
        kind, data = msg.get("type", ""), msg.get("data")
        if kind == "close":
            return None
        # check the message fully before any session is built or touched
        if kind == "reset":
            seed, options = checks.reset_args(data, "data.")
        elif kind == "step":
            action = checks.action(data, self.limits, "data")
        elif kind != "state":
            raise UnknownMessageType(
                f"unknown message type {str(kind)[:60]!r}; expected reset, step, state or close",
                "type",
            )
        session = conn.get("session")
        if session is None or session.closed:
            session = conn["session"] = await self.manager.get_or_create()
        if kind == "reset":
            timed = await self.manager.reset(session, seed, options)
            return {"type": "observation", "data": reset_payload(session, timed)}
        if kind == "step":
            turn = await self.manager.step(session, action)
            return {"type": "observation", "data": step_payload(session, turn)}
        return {"type": "state", "data": state_payload(session, self.env_id)}
