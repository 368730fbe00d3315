"""Malformed requests get a 4xx (WebSocket: an error frame) naming the field, before any env
state changes, and over WebSocket the connection and its episode carry on (issue 15, V1-V4)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import websockets

from agentgym.server import ServerThread, create_app

from .conftest import ENV_ID, UP

DEEP = '{"action": ' + "[" * 100_000 + "]" * 100_000 + "}"  # 200 KB, far past Python's recursion
CALL = {"id": "c1", "type": "function", "function": {"name": "move", "arguments": "{}"}}


@pytest.fixture(scope="module")
def server():
    with ServerThread(create_app(ENV_ID)) as srv:
        yield srv


def _state(c: httpx.Client, eid: str) -> dict:
    return c.get("/state", params={"episode_id": eid}).json()


def test_deeply_nested_json_is_a_400_naming_the_body_not_a_500(server):
    with httpx.Client(base_url=server.url, timeout=30) as c:
        c.post("/reset", json={"seed": 1, "episode_id": "v1"})
        r = c.post("/step", content=DEEP)
        assert r.status_code == 400, r.text
        assert r.json()["code"] == "INVALID_JSON"
        # the stdlib parser gives up ("body"); orjson parses it and the depth check names
        # the path that goes too deep
        assert r.json()["field"] in ("body", "action" + "[0]" * 63)
        assert "nested" in r.json()["detail"]
        # nesting that Python can parse but is past the server's depth limit names the field
        deep_args = {"x": 1}
        for _ in range(100):
            deep_args = {"x": deep_args}
        call = {**CALL, "function": {"name": "move", "arguments": deep_args}}
        r = c.post("/step", json={"action": {"tool_calls": [call]}, "episode_id": "v1"})
        assert r.status_code == 400 and r.json()["field"].startswith("action.tool_calls[0]")
        r = c.post("/reset", content='{"options": ' + "[" * 5000 + "]" * 5000 + "}")
        assert r.status_code == 400 and r.json()["field"] in ("body", "options" + "[0]" * 63)
        assert _state(c, "v1")["step_count"] == 0


@pytest.mark.parametrize("options", [5, "task-1", [1, 2], True])
def test_options_that_are_not_an_object_are_a_400_naming_options(server, options):
    with httpx.Client(base_url=server.url, timeout=10) as c:
        first = c.post("/reset", json={"seed": 2, "episode_id": "v2"}).json()["observation"]
        c.post("/step", json={"action": {"text": UP}, "episode_id": "v2"})
        r = c.post("/reset", json={"seed": 3, "episode_id": "v2", "options": options})
        assert r.status_code == 400, r.text
        assert r.json()["field"] == "options" and "JSON object" in r.json()["detail"]
        state = _state(c, "v2")  # the refused reset left the episode as it was
        assert state["step_count"] == 1 and state["task_id"] == first["info"]["task_id"]


@pytest.mark.parametrize(
    ("action", "field"),
    [
        ({"content": "", "tool_calls": 5}, "action.tool_calls"),
        ({"content": "", "tool_calls": "move up"}, "action.tool_calls"),
        ({"content": "", "tool_calls": [CALL, 7]}, "action.tool_calls[1]"),
        ({"content": 5, "tool_calls": []}, "action.content"),
        ({"text": ["not", "text"]}, "action.text"),
        ({"message": "hi"}, "action.message"),
        (5, "action"),
    ],
)
def test_bad_tool_calls_are_a_400_before_the_env_uses_the_turn(server, action, field):
    with httpx.Client(base_url=server.url, timeout=10) as c:
        c.post("/reset", json={"seed": 4, "episode_id": "v3"})
        before = _state(c, "v3")
        r = c.post("/step", json={"action": action, "episode_id": "v3"})
        assert r.status_code == 400, r.text
        assert r.json()["field"] == field and r.json()["code"] == "VALIDATION_ERROR"
        after = _state(c, "v3")
        assert after["step_count"] == 0 and after["state_key"] == before["state_key"]
        ok = c.post("/step", json={"action": {"text": UP}, "episode_id": "v3"})
        assert ok.status_code == 200 and _state(c, "v3")["step_count"] == 1


def test_bad_episode_id_and_seed_name_their_field(server):
    with httpx.Client(base_url=server.url, timeout=10) as c:
        r = c.post("/step", json={"action": {"text": UP}, "episode_id": 5})
        assert r.status_code == 400 and r.json()["field"] == "episode_id"
        r = c.post("/reset", json={"seed": "7"})
        assert r.status_code == 400 and r.json()["field"] == "seed"
        r = c.post("/reset", json={"task_id": {"a": 1}})
        assert r.status_code == 400 and r.json()["field"] == "task_id"


async def _ws_bad_inputs_keep_the_episode(url: str) -> None:
    bad = [
        # orjson parses it and the depth check names the path (the stdlib gave up: "message")
        ('{"type": "step", "data": ' + "[" * 100_000 + "]" * 100_000 + "}", "data" + "[0]" * 63),
        (json.dumps({"type": "reset", "data": {"options": 5}}), "data.options"),
        (json.dumps({"type": "reset", "data": {"seed": -1}}), "data.seed"),
        (json.dumps({"type": "step", "data": {"content": "", "tool_calls": 5}}), "data.tool_calls"),
        (json.dumps({"type": "step", "data": {"tool_calls": [5]}}), "data.tool_calls[0]"),
        (json.dumps({"type": "step"}), "data"),
        (json.dumps([1, 2]), "message"),
        ("{not json", "message"),
        (json.dumps({"type": "jump"}), "type"),
    ]
    async with websockets.connect(url, max_size=None) as ws:
        await ws.send(json.dumps({"type": "reset", "data": {"seed": 5}}))
        first = json.loads(await ws.recv())["data"]["observation"]
        await ws.send(json.dumps({"type": "step", "data": {"text": UP}}))
        assert json.loads(await ws.recv())["type"] == "observation"
        for raw, field in bad:
            await ws.send(raw)
            reply = json.loads(await ws.recv())
            assert reply["type"] == "error", (raw[:60], reply)
            assert reply["data"]["field"] == field and reply["data"]["message"]
        await ws.send(b"\xff\xfe binary junk")
        assert json.loads(await ws.recv())["type"] == "error"
        await ws.send(json.dumps({"type": "state"}))
        state = json.loads(await ws.recv())["data"]
        assert state["episode_id"] == first["episode_id"] and state["step_count"] == 1
        await ws.send(json.dumps({"type": "step", "data": {"text": UP}}))
        reply = json.loads(await ws.recv())
        assert reply["type"] == "observation" and reply["data"]["observation"]["info"]
        await ws.send(json.dumps({"type": "state"}))
        assert json.loads(await ws.recv())["data"]["step_count"] == 2


def test_websocket_bad_inputs_get_error_frames_and_the_episode_survives(server):
    asyncio.run(_ws_bad_inputs_keep_the_episode(server.url.replace("http", "ws") + "/ws"))
