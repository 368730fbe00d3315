"""Typed session errors (issue 33): every refusal of the env server is a class that carries
its wire code and HTTP status, and what clients receive is unchanged.

* The table below is the contract: each class's ``code`` and ``status``; a new class, or a
  class whose code or status changed, fails here until the table (and the docs) say so.
* docs/integrations/openenv.md's table of codes lists, for each code, exactly the statuses
  the classes answer it with.
* No module of the server raises the base class: every raise site names what happened.
* On the wire (a real server, real HTTP and WebSocket clients) the refusals are byte for byte
  what the server sent before the classes existed: ``{"detail", "code", "field"}`` over HTTP,
  ``{"type": "error", "data": {"message", "code", "field"}}`` over WebSocket.
* A build that is cancelled hands the callers waiting for the same session an error (they
  then build it themselves) instead of leaving them waiting forever.
"""

from __future__ import annotations

import ast
import asyncio
import re
import threading
from pathlib import Path
from typing import Any

import gymnasium
import httpx
import pytest
import websockets

from agentgym.error import AgentGymError
from agentgym.integrations.session import TextSession
from agentgym.server import ServerLimits, ServerThread, create_app, errors
from agentgym.server.sessions import SessionManager

from .conftest import ENV_ID

ROOT = Path(__file__).resolve().parents[2]

TABLE = {
    errors.BadRequest: ("VALIDATION_ERROR", 400),
    errors.RequestTooLarge: ("VALIDATION_ERROR", 413),
    errors.RequestTimeout: ("VALIDATION_ERROR", 408),
    errors.ResetFailed: ("VALIDATION_ERROR", 400),
    errors.InvalidJSON: ("INVALID_JSON", 400),
    errors.UnknownMessageType: ("UNKNOWN_TYPE", 400),
    errors.Unauthorized: ("UNAUTHORIZED", 401),
    errors.NoSuchSession: ("SESSION_ERROR", 404),
    errors.ResetFirst: ("SESSION_ERROR", 409),
    errors.ShuttingDown: ("SESSION_ERROR", 503),
    errors.CapacityReached: ("CAPACITY_REACHED", 503),
    errors.EnvBuildError: ("FACTORY_ERROR", 500),
    errors.EnvBuildTimeout: ("FACTORY_ERROR", 504),
    errors.ExecutionError: ("EXECUTION_ERROR", 500),
    errors.EnvTimeout: ("EXECUTION_ERROR", 504),
}


def _subclasses(cls: type) -> set[type]:
    out = set()
    for sub in cls.__subclasses__():
        out |= {sub} | _subclasses(sub)
    return out


def test_every_error_class_carries_its_wire_code_and_http_status():
    assert _subclasses(errors.SessionError) == set(TABLE)
    for cls, (code, status) in TABLE.items():
        err = cls("why", "field.x")
        assert (err.code, err.status, err.field, str(err)) == (code, status, "field.x", "why")
        assert isinstance(err.code, errors.ErrorCode) and err.code.value == code
        assert isinstance(err, errors.SessionError) and isinstance(err, AgentGymError)
    assert {c.value for c in errors.ErrorCode} == {code for code, _ in TABLE.values()}


def test_client_mistakes_are_bad_requests_and_server_failures_are_not():
    client = {c for c, (_, status) in TABLE.items() if status in (400, 408, 413)}
    assert client == _subclasses(errors.BadRequest) | {errors.BadRequest}
    assert not any(issubclass(c, errors.BadRequest) for c in set(TABLE) - client)


def test_from_exception_names_the_type_after_the_prefix():
    err = errors.ResetFailed.from_exception(KeyError("t9"), "reset failed: ", "options")
    assert (str(err), err.field, type(err)) == (
        "reset failed: KeyError: 't9'",
        "options",
        errors.ResetFailed,
    )


def test_http_body_and_ws_frame_have_the_wire_keys_in_order():
    err = errors.NoSuchSession("gone", "episode_id")
    assert list(errors.http_body(err).items()) == [
        ("detail", "gone"),
        ("code", "SESSION_ERROR"),
        ("field", "episode_id"),
    ]
    frame = errors.ws_frame(errors.ResetFirst("call reset before step"))
    assert frame == {
        "type": "error",
        "data": {"message": "call reset before step", "code": "SESSION_ERROR", "field": None},
    }
    assert list(frame["data"]) == ["message", "code", "field"]
    assert type(frame["data"]["code"]) is str  # the plain value, not the enum member


def test_the_docs_table_lists_each_code_with_the_statuses_its_classes_answer():
    text = (ROOT / "docs" / "integrations" / "openenv.md").read_text(encoding="utf-8")
    documented = {
        code: {int(s) for s in re.findall(r"\d{3}", statuses)}
        for code, statuses in re.findall(r"^\| `([A-Z_]+)` \| ([\d /]+) \|", text, re.M)
    }
    expected: dict[str, set[int]] = {}
    for code, status in TABLE.values():
        expected.setdefault(code, set()).add(status)
    assert documented == expected


def test_no_server_module_raises_the_base_class():
    """Each raise site names what happened (a subclass), so its status cannot drift."""
    bare = []
    for path in sorted((ROOT / "agentgym" / "server").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", getattr(node.func, "attr", None))
                if name == "SessionError":
                    bare.append(f"{path.name}:{node.lineno}")
    assert bare == []


# ---- on the wire ------------------------------------------------------------------------------

TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def server():
    with ServerThread(
        create_app(ENV_ID, token=TOKEN, limits=ServerLimits(max_body_bytes=4096))
    ) as srv:
        yield srv


BIG = b'{"action": {"text": "' + b"x" * 5000 + b'"}}'
HTTP_CASES = [
    (
        "GET",
        "/metadata",
        {},
        None,
        401,
        b'{"detail":"missing or wrong token","code":"UNAUTHORIZED","field":null}',
    ),
    (
        "GET",
        "/state",
        AUTH,
        None,
        409,
        b'{"detail":"no session yet: call /reset first","code":"SESSION_ERROR",'
        b'"field":"episode_id"}',
    ),
    (
        "POST",
        "/step",
        AUTH,
        b'{"action": {"text": "x"}, "episode_id": "nope"}',
        404,
        b'{"detail":"no session \'nope\' (it may have timed out); call reset first",'
        b'"code":"SESSION_ERROR","field":"episode_id"}',
    ),
    (
        "POST",
        "/reset",
        AUTH,
        b"[1]",
        400,
        b'{"detail":"the request body must be a JSON object, got list",'
        b'"code":"VALIDATION_ERROR","field":"body"}',
    ),
    (
        "POST",
        "/reset",
        AUTH,
        b"{",
        400,
        None,  # the parser's own message: checked by code and field below
    ),
    (
        "POST",
        "/reset",
        AUTH,
        b'{"seed": 1, "episode_id": "e1", "task_id": "no-such-task"}',
        400,
        None,
    ),
    (
        "POST",
        "/step",
        AUTH,
        BIG,
        413,
        b'{"detail":"request body of %d bytes exceeds the limit of 4096",'
        b'"code":"VALIDATION_ERROR","field":"body"}' % len(BIG),
    ),
]


@pytest.mark.parametrize(
    ("method", "path", "headers", "body", "status", "expected"),
    HTTP_CASES,
    ids=["401", "409", "404", "400-body", "400-json", "400-reset", "413"],
)
def test_http_refusals_are_byte_for_byte_the_wire_format(
    server, method, path, headers, body, status, expected
):
    with httpx.Client(base_url=server.url, timeout=60) as c:
        r = c.request(method, path, headers=headers, content=body)
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json"
    if expected is not None:
        assert r.content == expected
    else:
        keys = list(r.json())
        assert keys == ["detail", "code", "field"]
        assert (r.json()["code"], r.json()["field"]) in {
            ("INVALID_JSON", "body"),
            ("VALIDATION_ERROR", "options"),
        }


def test_websocket_refusals_are_byte_for_byte_the_wire_format(server):
    async def main() -> list[str]:
        url = server.url.replace("http://", "ws://") + f"/ws?token={TOKEN}"
        async with websockets.connect(url, open_timeout=60) as ws:
            replies = []
            for message in (
                '{"type": "jump"}',
                "[1]",
                '{"type": "step", "data": {"text": "x"}}',
                '{"type": "step", "data": {"tool_calls": 5}}',
            ):
                await ws.send(message)
                replies.append(await asyncio.wait_for(ws.recv(), 60))
            # the connection and its episode carry on after the refusals
            await ws.send('{"type": "reset", "data": {"seed": 1}}')
            replies.append(await asyncio.wait_for(ws.recv(), 60))
            return replies

    unknown, not_object, early_step, bad_action, reset = asyncio.run(main())
    assert unknown == (
        '{"type":"error","data":{"message":"unknown message type \'jump\'; expected reset, '
        'step, state or close","code":"UNKNOWN_TYPE","field":"type"}}'
    )
    assert not_object == (
        '{"type":"error","data":{"message":"a message is a JSON object {\\"type\\": ..., '
        '\\"data\\": {...}}","code":"INVALID_JSON","field":"message"}}'
    )
    assert early_step == (
        '{"type":"error","data":{"message":"call reset before step","code":"SESSION_ERROR",'
        '"field":null}}'
    )
    assert bad_action.startswith('{"type":"error","data":{"message":"data.tool_calls must be')
    assert bad_action.endswith('"code":"VALIDATION_ERROR","field":"data.tool_calls"}}')
    assert reset.startswith('{"type":"observation","data":{"observation":')


# ---- a cancelled build ------------------------------------------------------------------------


class _Blocking(gymnasium.Wrapper):
    """Sokoban that says it blocks, so its builds run on the worker threads."""

    def __init__(self, env: gymnasium.Env):
        super().__init__(env)
        self.metadata = {**env.metadata, "blocking": True}


def test_a_cancelled_build_hands_its_waiters_an_error_and_they_build_the_session():
    """Before: the waiters of a build whose caller was cancelled waited forever."""
    gate, calls, lock = threading.Event(), {"n": 0}, threading.Lock()

    def factory() -> TextSession:
        with lock:
            calls["n"] += 1
            n = calls["n"]
        if n == 2:
            gate.wait(60)  # the build of "x" that gets cancelled
        return TextSession(_Blocking(gymnasium.make(ENV_ID)))

    manager = SessionManager(factory, ServerLimits(max_sessions=4))

    async def main() -> Any:
        manager.start()
        await manager.get_or_create("warm")  # the first build says builds run on threads
        first = asyncio.create_task(manager.get_or_create("x"))
        async with asyncio.timeout(60):
            while manager.stats()["building"] != 1:
                await asyncio.sleep(0.01)
        second = asyncio.create_task(manager.get_or_create("x"))
        await asyncio.sleep(0)  # runs the second caller up to its wait for the first build
        first.cancel()
        try:
            async with asyncio.timeout(60):
                session = await second
        finally:
            gate.set()
        assert first.cancelled() and manager.sessions["x"] is session and calls["n"] == 3
        await manager.stop()

    asyncio.run(main())
