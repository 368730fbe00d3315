"""Hostile text on the wire (issue 23): episode ids that cannot be a header, and surrogates.

An ``episode_id`` is echoed in the ``X-Agentgym-Episode-Id`` header, so one holding a line
break, NUL or non-ASCII must be refused with a 400 naming the rule before any env is built
(it used to build and reset the env, then drop the connection or answer 500). An observation
or parsed tool call holding a lone surrogate must still give a 200 whose body is valid UTF-8,
over HTTP and WebSocket: the env has taken the turn, so a 500 would lose it.
"""

from __future__ import annotations

import asyncio
import json
from urllib.parse import quote

import httpx
import pytest
import websockets

from agentgym.server import ServerThread, create_app

from .conftest import ENV_ID, UP

BAD_IDS = ["a\nb", "a\rb", "a\x00b", "\u20acuro", "\ud800", "two words", "x" * 256]
# A real textbox of WebShopText; the model's surrogate reaches info["tool_calls"] verbatim.
FILL = (
    "<tool_call>"
    + json.dumps({"name": "fill", "arguments": {"bid": "1", "text": "x\ud800y"}})
    + "</tool_call>"
)


def _post(c: httpx.Client, path: str, body: dict) -> httpx.Response:
    # json.dumps escapes every non-ASCII character, so any str (a surrogate too) can be sent
    return c.post(path, content=json.dumps(body), headers={"content-type": "application/json"})


def test_episode_ids_that_cannot_be_a_header_are_a_400_before_any_env_is_built():
    with ServerThread(create_app(ENV_ID)) as srv, httpx.Client(base_url=srv.url, timeout=10) as c:
        for eid in BAD_IDS:
            for path, body in (
                ("/reset", {"seed": 1, "episode_id": eid}),
                ("/step", {"action": {"text": UP}, "episode_id": eid}),
            ):
                r = _post(c, path, body)
                assert r.status_code == 400, (eid, path, r.text)
                assert r.json()["field"] == "episode_id"
                assert "printable ASCII" in r.json()["detail"]
            # a query string cannot carry a lone surrogate; send its CESU-8 bytes instead
            query = quote(eid.encode("utf-8", "surrogatepass"), safe="")
            r = c.get(f"/state?episode_id={query}")
            assert r.status_code == 400 and r.json()["field"] == "episode_id"
        assert c.get("/health").json()["envs_built"] == 0
        # the boundary: every printable ASCII character but space, 255 of them, is an id
        good = "".join(chr(c) for c in range(0x21, 0x7F)) * 3
        good = good[:255]
        r = _post(c, "/reset", {"seed": 1, "episode_id": good})
        assert r.status_code == 200 and r.headers["X-Agentgym-Episode-Id"] == good
        assert c.get("/health").json()["envs_built"] == 1


async def _ws_step(url: str) -> dict:
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        await ws.recv()
        await ws.send(json.dumps({"type": "step", "data": {"text": FILL}}))
        raw = await ws.recv()
        assert "\\ud800" not in raw and "\ud800" not in raw
        return json.loads(raw)


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_an_observation_with_a_surrogate_is_a_200_in_valid_utf8(transport):
    with ServerThread(create_app("agentgym/WebShopText-v0")) as srv:
        if transport == "ws":
            reply = asyncio.run(_ws_step(srv.url.replace("http", "ws") + "/ws"))
            assert reply["type"] == "observation"
            obs = reply["data"]["observation"]
        else:
            with httpx.Client(base_url=srv.url, timeout=10) as c:
                _post(c, "/reset", {"seed": 0, "episode_id": "s"})
                r = _post(c, "/step", {"action": {"text": FILL}, "episode_id": "s"})
                assert r.status_code == 200, r.text
                r.content.decode("utf-8")  # strict: the body is valid UTF-8
                obs = r.json()["observation"]
                assert c.get("/state", params={"episode_id": "s"}).json()["step_count"] == 1
        assert obs["info"]["tool_calls"][0]["arguments"]["text"] == "x\ufffdy"
        assert 'value="x\ufffdy"' in obs["text"]
