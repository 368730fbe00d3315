"""The env server's HTTP endpoints: health, metadata, schema, reset, step, state and close.

HTTP sessions are named by ``episode_id``; requests without one share the default session
(see :mod:`agentgym.server.app`). Every handler answers JSON, and an error of any kind is a
JSON body ``{"detail", "code", "field"}`` with its status, never a bare 500 page.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from agentgym.server import checks
from agentgym.server.auth import authorised
from agentgym.server.errors import (
    BadRequest,
    ExecutionError,
    RequestTimeout,
    RequestTooLarge,
    ResetFirst,
    SessionError,
    Unauthorized,
    http_body,
)
from agentgym.server.payloads import (
    ACTION_SCHEMA,
    OBSERVATION_SCHEMA,
    STATE_SCHEMA,
    dumps_bytes,
    reset_payload,
    state_payload,
    step_payload,
)
from agentgym.server.ratelog import RateLimitedLog
from agentgym.server.sessions import ServerLimits, Session, SessionManager

logger = logging.getLogger(__name__)

DEFAULT_SESSION = "default"
"""The session HTTP requests without ``episode_id`` share."""

SHARED_NOTICE = (
    '199 agentgym "no episode_id: this request used the default session, which every HTTP '
    'client that omits episode_id shares; send episode_id for a private session"'
)
LOG_SHARED_EVERY_S = 60.0
"""How often the server may log that clients share the default session."""

Reply = tuple[dict[str, Any], dict[str, str]]


class SafeJSONResponse(JSONResponse):
    """A JSON reply whose body never fails to encode (lone surrogates become U+FFFD)."""

    def render(self, content: Any) -> bytes:
        return dumps_bytes(content)


class HttpApi:
    """The HTTP handlers of one server; each public coroutine is one route."""

    def __init__(
        self, env_id: str, manager: SessionManager, limits: ServerLimits, token: str | None
    ):
        self.env_id = env_id
        self.manager = manager
        self.limits = limits
        self.token = token
        self.errors = RateLimitedLog(logger)
        self._shared_last = -LOG_SHARED_EVERY_S
        self._shared_uses = 0

    # ---- plumbing ---------------------------------------------------------------------------

    def guarded(self, handler: Callable[[Request], Awaitable[Reply]]) -> Callable[[Request], Any]:
        """``handler`` behind the token rule, with every error answered as JSON."""

        async def wrapper(request: Request) -> SafeJSONResponse:
            try:
                if not authorised(self.token, request.headers, request.query_params):
                    raise Unauthorized("missing or wrong token")
                payload, headers = await handler(request)
                return SafeJSONResponse(payload, headers=headers)
            except SessionError as exc:
                return SafeJSONResponse(http_body(exc), status_code=exc.status)
            except Exception as exc:  # a server bug: say so in JSON, keep serving
                self.errors.error(
                    f"http {request.url.path}",
                    "agentgym serve: %s %s failed",
                    request.method,
                    request.url.path,
                    exc_info=True,
                )
                bug = ExecutionError.from_exception(exc)
                return SafeJSONResponse(http_body(bug), status_code=bug.status)

        return wrapper

    async def body(self, request: Request) -> dict[str, Any]:
        """The request's JSON object body, bounded in size and in the time it may take."""
        limit = self.limits.max_body_bytes
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > limit:
            raise RequestTooLarge(
                f"request body of {length} bytes exceeds the limit of {limit}", "body"
            )
        raw = b""
        try:
            async with asyncio.timeout(self.limits.body_timeout_s):  # a slow body holds no slot
                async for chunk in request.stream():
                    raw += chunk
                    if len(raw) > limit:
                        raise RequestTooLarge(
                            f"request body exceeds the limit of {limit} bytes", "body"
                        )
        except TimeoutError:
            raise RequestTimeout(
                f"the request body did not arrive within {self.limits.body_timeout_s:g} s",
                "body",
            ) from None
        if not raw.strip():
            return {}
        data = checks.parse_json(raw, self.limits, "body")
        if not isinstance(data, dict):
            raise BadRequest(
                f"the request body must be a JSON object, got {type(data).__name__}", "body"
            )
        return data

    def session_headers(self, sid: str, shared: bool, queue_s: float | None = None) -> dict:
        """Headers naming the session (and, for the default one, saying it is shared)."""
        headers = {"X-Agentgym-Episode-Id": sid}
        if queue_s is not None:
            headers["X-Agentgym-Queue-Ms"] = f"{queue_s * 1e3:.3f}"
        if shared:
            headers["X-Agentgym-Shared-Session"] = DEFAULT_SESSION
            headers["Warning"] = SHARED_NOTICE
            self._shared_uses += 1
            now = time.monotonic()
            if now - self._shared_last >= LOG_SHARED_EVERY_S:
                self._shared_last = now
                logger.warning(
                    "agentgym serve: HTTP requests without episode_id share the default "
                    "session (%d requests so far); concurrent clients that omit it step "
                    "one episode together. Send episode_id for a private session.",
                    self._shared_uses,
                )
        return headers

    def _existing(self, sid: Any) -> tuple[Session, bool]:
        sid = checks.episode_id(sid)
        if sid is None and DEFAULT_SESSION not in self.manager.sessions:
            raise ResetFirst("no session yet: call /reset first", "episode_id")
        return self.manager.find(sid or DEFAULT_SESSION), sid is None

    # ---- routes -----------------------------------------------------------------------------

    async def health(self, request: Request) -> SafeJSONResponse:
        body = {"status": "healthy", "env_id": self.env_id, **self.manager.stats()}
        admission = getattr(request.app.state, "admission", None)
        if admission is not None:  # set by the runner (ServerThread, serve)
            body["connections"] = admission.stats()
        return SafeJSONResponse(body)

    async def metadata(self, request: Request) -> Reply:
        from agentgym import __version__
        from agentgym.registry import get_record

        try:
            description = get_record(self.env_id).description
        except Exception:
            description = ""
        return {"name": self.env_id, "description": description, "version": __version__}, {}

    async def schema(self, request: Request) -> Reply:
        return {
            "action": ACTION_SCHEMA,
            "observation": OBSERVATION_SCHEMA,
            "state": STATE_SCHEMA,
        }, {}

    async def reset(self, request: Request) -> Reply:
        data = await self.body(request)
        seed, options = checks.reset_args(data)
        sid = checks.episode_id(data.get("episode_id"))
        for attempt in range(2):  # once more if the session closed while we waited for it
            session = await self.manager.get_or_create(sid or DEFAULT_SESSION)
            try:
                timed = await self.manager.reset(session, seed, options)
                break
            except SessionError:
                if not session.closed or attempt:
                    raise
        headers = self.session_headers(session.id, sid is None, timed.queue_s)
        return reset_payload(session, timed), headers

    async def step(self, request: Request) -> Reply:
        data = await self.body(request)
        if "action" not in data:
            raise BadRequest(
                'the body must hold "action", e.g. {"action": {"text": "..."}}; got keys '
                + repr(sorted(data))[:200],
                "action",
            )
        action = checks.action(data["action"], self.limits)
        session, shared = self._existing(data.get("episode_id"))
        timed = await self.manager.step(session, action)
        headers = self.session_headers(session.id, shared, timed.queue_s)
        return step_payload(session, timed), headers

    async def state(self, request: Request) -> Reply:
        session, shared = self._existing(request.query_params.get("episode_id"))
        return state_payload(session, self.env_id), self.session_headers(session.id, shared)

    async def close(self, request: Request) -> Reply:
        """``POST /close {"episode_id"}``: end that session and free its env now.

        Idempotent: an id the server does not hold (closed, timed out, never opened) answers
        ``"closed": false``. Without ``episode_id`` it closes the shared default session.
        """
        data = await self.body(request)
        sid = checks.episode_id(data.get("episode_id"))
        name = sid or DEFAULT_SESSION
        closed = await self.manager.close(name)
        return {"episode_id": name, "closed": closed}, self.session_headers(name, sid is None)
