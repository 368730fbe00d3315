"""Whatever JSON a client sends, the server answers 2xx/4xx (never 5xx), keeps WebSocket
connections open, and closes every env it built (issue 15: the class behind V1-V4)."""

from __future__ import annotations

import asyncio
import json

import httpx
import websockets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgym.server import ServerLimits, ServerThread, create_app

from .conftest import ENV_ID, UP, Counts

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
FIELDS = ("seed", "options", "task_id", "episode_id", "action", "text", "content", "tool_calls")
BODY = st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=4)
ACTION = st.fixed_dictionaries(
    {}, optional={"text": JSON, "content": JSON, "tool_calls": JSON, "message": JSON}
)


def test_random_requests_never_get_a_server_error_or_lose_a_session():
    counts = Counts()
    limits = ServerLimits(max_sessions=16)
    app = create_app(ENV_ID, limits=limits, session_factory=counts.factory)
    with ServerThread(app) as srv, httpx.Client(base_url=srv.url, timeout=30) as c:
        c.post("/reset", json={"seed": 0, "episode_id": "keep"})

        @settings(
            max_examples=150,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
            derandomize=True,
        )
        @given(route=st.sampled_from(["/reset", "/step"]), body=BODY, action=ACTION)
        def http(route, body, action):
            if route == "/step" and "action" not in body:
                body = {**body, "action": action}
            if isinstance(body.get("episode_id"), str):
                body["episode_id"] = "fuzz"  # a bounded set of sessions
            r = c.post(route, content=json.dumps(body))
            assert r.status_code < 500, (route, body, r.text[:300])
            if r.status_code >= 400:
                assert r.json()["code"] and "field" in r.json()

        http()
        ok = c.post("/step", json={"action": {"text": UP}, "episode_id": "keep"})
        assert ok.status_code == 200

        async def ws_fuzz(messages):
            async with websockets.connect(srv.url.replace("http", "ws") + "/ws") as ws:
                await ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
                await ws.recv()
                for m in messages:
                    await ws.send(json.dumps(m))
                    reply = json.loads(await ws.recv())
                    assert reply["type"] in ("observation", "state", "error"), reply
                    if m.get("type") == "close":
                        break
                    assert reply["type"] != "error" or reply["data"]["code"] != "EXECUTION_ERROR"
                else:
                    await ws.send(json.dumps({"type": "state"}))
                    assert json.loads(await ws.recv())["type"] == "state"

        @settings(
            max_examples=30,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
            derandomize=True,
        )
        @given(
            st.lists(
                st.fixed_dictionaries(
                    {"type": st.sampled_from(["reset", "step", "state", "bogus"])},
                    optional={"data": JSON | ACTION | BODY},
                ),
                max_size=6,
            )
        )
        def ws(messages):
            asyncio.run(ws_fuzz(messages))

        ws()
    counts.wait_closed()
    assert counts.built == counts.closed
