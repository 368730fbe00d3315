"""The env server's refusals as types: one class per way a request can fail.

Each class carries the wire ``code`` clients see (OpenEnv's WebSocket error codes, the same
over HTTP) and the HTTP ``status`` it is answered with, so a handler raises what happened
(``NoSuchSession``, ``CapacityReached``) and the two front ends write it the same way:

* HTTP: the status, and a JSON body ``{"detail", "code", "field"}`` (:func:`http_body`);
* WebSocket: an error frame ``{"type": "error", "data": {"message", "code", "field"}}``
  (:func:`ws_frame`), after which the connection and its episode carry on.

``field`` names the part of the request at fault (``"options"``, ``"action.tool_calls"``),
or is None when no single field is. The classes, by code:

======================  ======  ==============================================================
class                   status  when
======================  ======  ==============================================================
``BadRequest``          400     ``VALIDATION_ERROR``: a field of the wrong type or value
``RequestTooLarge``     413     ``VALIDATION_ERROR``: a body, message or action over its limit
``RequestTimeout``      408     ``VALIDATION_ERROR``: the body did not arrive in time
``ResetFailed``         400     ``VALIDATION_ERROR``: the env refused the reset (a bad task id)
``InvalidJSON``         400     ``INVALID_JSON``: not JSON, not an object, nested too deeply
``UnknownMessageType``  400     ``UNKNOWN_TYPE``: a WebSocket message other than
                                reset/step/state/close
``Unauthorized``        401     ``UNAUTHORIZED``: a missing or wrong token
``NoSuchSession``       404     ``SESSION_ERROR``: no such session (closed, timed out, evicted)
``ResetFirst``          409     ``SESSION_ERROR``: a step or state before any reset
``ShuttingDown``        503     ``SESSION_ERROR``: the server stopped while building the env
``CapacityReached``     503     ``CAPACITY_REACHED``: every slot holds an episode in progress
``EnvBuildError``       500     ``FACTORY_ERROR``: the env could not be built
``EnvBuildTimeout``     504     ``FACTORY_ERROR``: building it ran past the step timeout
``ExecutionError``      500     ``EXECUTION_ERROR``: the env raised, or a server bug
``EnvTimeout``          504     ``EXECUTION_ERROR``: a call ran past the step timeout
======================  ======  ==============================================================

Every class derives from :class:`SessionError` (and so from
:class:`agentgym.error.AgentGymError`); the client-side mistakes (bad JSON, bad fields, too
large, too slow) also derive from :class:`BadRequest`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar, Self

from agentgym.error import AgentGymError

__all__ = [
    "BadRequest",
    "CapacityReached",
    "EnvBuildError",
    "EnvBuildTimeout",
    "EnvTimeout",
    "ErrorCode",
    "ExecutionError",
    "InvalidJSON",
    "NoSuchSession",
    "RequestTimeout",
    "RequestTooLarge",
    "ResetFailed",
    "ResetFirst",
    "SessionError",
    "ShuttingDown",
    "Unauthorized",
    "UnknownMessageType",
    "http_body",
    "ws_frame",
]


class ErrorCode(StrEnum):
    """The ``code`` of an error reply: a string on the wire, compared as one."""

    VALIDATION_ERROR = "VALIDATION_ERROR"
    INVALID_JSON = "INVALID_JSON"
    UNKNOWN_TYPE = "UNKNOWN_TYPE"
    UNAUTHORIZED = "UNAUTHORIZED"
    SESSION_ERROR = "SESSION_ERROR"
    CAPACITY_REACHED = "CAPACITY_REACHED"
    FACTORY_ERROR = "FACTORY_ERROR"
    EXECUTION_ERROR = "EXECUTION_ERROR"


class SessionError(AgentGymError):
    """A request the server refuses; subclasses fix its wire ``code`` and HTTP ``status``.

    Examples:
        >>> err = NoSuchSession("no session 'w1'; call reset first", "episode_id")
        >>> (str(err.code), err.status, err.field)
        ('SESSION_ERROR', 404, 'episode_id')
        >>> isinstance(RequestTooLarge("too big", "body"), BadRequest)
        True
    """

    code: ClassVar[ErrorCode] = ErrorCode.EXECUTION_ERROR
    status: ClassVar[int] = 500

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field

    @classmethod
    def from_exception(cls, exc: BaseException, prefix: str = "", field: str | None = None) -> Self:
        """The error for an unexpected ``exc``, naming its type: ``"<prefix>Type: message"``."""
        return cls(f"{prefix}{type(exc).__name__}: {exc}", field)


class BadRequest(SessionError):
    """The request itself is wrong: a field of the wrong type or value."""

    code = ErrorCode.VALIDATION_ERROR
    status = 400


class RequestTooLarge(BadRequest):
    """A body, message or action larger than the server's limit."""

    status = 413


class RequestTimeout(BadRequest):
    """An HTTP body that did not arrive within ``body_timeout_s``."""

    status = 408


class ResetFailed(BadRequest):
    """The env refused the reset's seed or options (an unknown task id, a bad option)."""


class InvalidJSON(BadRequest):
    """Not JSON, not a JSON object where one is needed, or nested too deeply."""

    code = ErrorCode.INVALID_JSON


class UnknownMessageType(BadRequest):
    """A WebSocket message whose type is not reset, step, state or close."""

    code = ErrorCode.UNKNOWN_TYPE


class Unauthorized(SessionError):
    """A missing or wrong token on a server that has one."""

    code = ErrorCode.UNAUTHORIZED
    status = 401


class NoSuchSession(SessionError):
    """The named session is not held: closed, timed out, evicted or never opened."""

    code = ErrorCode.SESSION_ERROR
    status = 404


class ResetFirst(SessionError):
    """A step (or an HTTP state or step with no session yet) before any reset."""

    code = ErrorCode.SESSION_ERROR
    status = 409


class ShuttingDown(SessionError):
    """The server stopped while the session's env was being built."""

    code = ErrorCode.SESSION_ERROR
    status = 503


class CapacityReached(SessionError):
    """Every slot holds a session that is busy or in an episode; nothing could make room."""

    code = ErrorCode.CAPACITY_REACHED
    status = 503


class EnvBuildError(SessionError):
    """The session's env could not be built (its constructor raised)."""

    code = ErrorCode.FACTORY_ERROR
    status = 500


class EnvBuildTimeout(EnvBuildError):
    """Building the env ran past ``step_timeout_s``."""

    status = 504


class ExecutionError(SessionError):
    """The env raised on a valid request, or the server has a bug: never the client's fault."""

    code = ErrorCode.EXECUTION_ERROR
    status = 500


class EnvTimeout(ExecutionError):
    """A reset or step ran past ``step_timeout_s``; the session was dropped."""

    status = 504


def http_body(exc: SessionError) -> dict[str, Any]:
    """The JSON body of an HTTP error reply: ``{"detail", "code", "field"}``."""
    return {"detail": str(exc), "code": exc.code.value, "field": exc.field}


def ws_frame(exc: SessionError) -> dict[str, Any]:
    """The WebSocket error frame: ``{"type": "error", "data": {"message", "code", "field"}}``."""
    return {
        "type": "error",
        "data": {"message": str(exc), "code": exc.code.value, "field": exc.field},
    }
