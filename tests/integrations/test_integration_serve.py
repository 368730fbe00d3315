"""`agentgym serve`: OpenEnv's wire protocol over real HTTP and WebSocket on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import time

import gymnasium
import httpx
import pytest

from agentgym.parsing import render_tool_call
from agentgym.server import ServerLimits, ServerThread, create_app

ENV_ID = "agentgym/Sokoban-Tiny-v0"
UP = render_tool_call("move", {"direction": "up"})

try:
    import websockets
except ImportError:  # the HTTP tests still run; the WebSocket ones skip
    websockets = None

needs_ws = pytest.mark.skipif(websockets is None, reason="websockets is not installed")


@pytest.fixture(scope="module")
def server():
    limits = ServerLimits(max_sessions=32, max_body_bytes=64 * 1024, max_action_chars=8000)
    with ServerThread(create_app(ENV_ID, limits=limits)) as srv:
        yield srv


def test_http_reset_step_state_schema_health(server):
    with httpx.Client(base_url=server.url, timeout=10) as c:
        assert c.get("/health").json()["status"] == "healthy"
        schema = c.get("/schema").json()
        assert set(schema) == {"action", "observation", "state"}
        r = c.post("/reset", json={"seed": 3}).json()
        assert r["done"] is False and r["reward"] is None
        obs = r["observation"]
        assert obs["tools"][0]["function"]["name"] == "move"
        assert [m["role"] for m in obs["messages"]] == ["system", "user"]
        r2 = c.post("/step", json={"action": {"text": UP}}).json()
        assert r2["observation"]["info"]["action_valid"] is True
        assert isinstance(r2["reward"], float) and r2["done"] is False
        bad = c.post("/step", json={"action": {"text": "no tool call"}}).json()
        assert bad["observation"]["info"]["action_valid"] is False
        state = c.get("/state").json()
        assert state["step_count"] == 2 and state["task_id"] == obs["info"]["task_id"]
        assert state["episode_id"] == obs["episode_id"]


def test_http_same_seed_same_task_and_named_sessions(server):
    with httpx.Client(base_url=server.url, timeout=10) as c:
        a = c.post("/reset", json={"seed": 11, "episode_id": "ep-a"}).json()["observation"]
        b = c.post("/reset", json={"seed": 11, "episode_id": "ep-b"}).json()["observation"]
        assert a["text"] == b["text"] and a["episode_id"] == "ep-a"
        c.post("/step", json={"action": {"text": UP}, "episode_id": "ep-a"})
        assert c.get("/state", params={"episode_id": "ep-a"}).json()["step_count"] == 1
        assert c.get("/state", params={"episode_id": "ep-b"}).json()["step_count"] == 0


def test_http_structured_openai_tool_calls(server):
    call = {
        "id": "c9",
        "type": "function",
        "function": {"name": "move", "arguments": '{"direction": "left"}'},
    }
    with httpx.Client(base_url=server.url, timeout=10) as c:
        c.post("/reset", json={"seed": 1})
        out = c.post("/step", json={"action": {"content": "", "tool_calls": [call]}}).json()
        msg = out["observation"]["messages"][0]
        assert msg["role"] == "tool" and msg["tool_call_id"] == "c9"
        assert out["observation"]["info"]["action_valid"] is True


def test_http_rejects_oversized_and_malformed_input(server):
    with httpx.Client(base_url=server.url, timeout=10) as c:
        c.post("/reset", json={"seed": 0})
        big = c.post("/step", content=json.dumps({"action": {"text": "x" * 100_000}}))
        assert big.status_code == 413
        long = c.post("/step", json={"action": {"text": "x" * 9000}})
        assert long.status_code == 413 and "8000" in long.json()["detail"]
        assert c.post("/step", content=b"{not json").status_code == 400
        assert c.post("/step", json={"act": 1}).status_code == 400
        assert c.post("/reset", json={"seed": -1}).status_code == 400
        assert c.post("/reset", json={"task_id": "no-such-task"}).status_code == 400
        assert c.get("/state", params={"episode_id": "never"}).status_code == 404


async def _ws_episode(url: str, seed: int, moves: int) -> tuple[str, list[float]]:
    async with websockets.connect(url.replace("http", "ws") + "/ws") as ws:
        await ws.send(json.dumps({"type": "reset", "data": {"seed": seed}}))
        first = json.loads(await ws.recv())
        assert first["type"] == "observation"
        rewards = []
        for _ in range(moves):
            await ws.send(json.dumps({"type": "step", "data": {"text": UP}}))
            reply = json.loads(await ws.recv())
            rewards.append(reply["data"]["reward"])
            if reply["data"]["done"]:
                break
        await ws.send(json.dumps({"type": "state"}))
        state = json.loads(await ws.recv())
        assert state["type"] == "state" and state["data"]["step_count"] == len(rewards)
        await ws.send(json.dumps({"type": "bogus"}))
        err = json.loads(await ws.recv())
        assert err["type"] == "error" and err["data"]["code"] == "UNKNOWN_TYPE"
        await ws.send(json.dumps({"type": "close"}))
        return first["data"]["observation"]["text"], rewards


@needs_ws
def test_many_concurrent_websocket_sessions(server):
    async def main():
        return await asyncio.gather(*[_ws_episode(server.url, s % 3, 3) for s in range(6)])

    before = httpx.get(server.url + "/health").json()["active_sessions"]
    results = asyncio.run(main())
    assert results[0] == results[3] and results[1] == results[4]  # same seed, same episode
    assert results[0][0] != results[1][0]
    deadline = time.monotonic() + 5
    while httpx.get(server.url + "/health").json()["active_sessions"] > before:
        assert time.monotonic() < deadline, "closed WebSocket sessions were not released"
        time.sleep(0.05)


@needs_ws
def test_capacity_limit_is_an_error_not_a_crash():
    limits = ServerLimits(max_sessions=1)
    with ServerThread(create_app(ENV_ID, limits=limits)) as srv:

        async def main():
            url = srv.url.replace("http", "ws") + "/ws"
            async with websockets.connect(url) as a, websockets.connect(url) as b:
                await a.send(json.dumps({"type": "reset", "data": {}}))
                assert json.loads(await a.recv())["type"] == "observation"
                await b.send(json.dumps({"type": "reset", "data": {}}))
                reply = json.loads(await b.recv())
                assert reply["data"]["code"] == "CAPACITY_REACHED"

        asyncio.run(main())


def test_idle_sessions_time_out():
    limits = ServerLimits(session_timeout_s=0.3)
    with (
        ServerThread(create_app(ENV_ID, limits=limits)) as srv,
        httpx.Client(base_url=srv.url) as c,
    ):
        c.post("/reset", json={"seed": 0, "episode_id": "idle"})
        assert c.get("/health").json()["active_sessions"] == 1
        deadline = time.monotonic() + 10
        while c.get("/health").json()["active_sessions"]:
            assert time.monotonic() < deadline, "idle session never reaped"
            time.sleep(0.1)
        assert (
            c.post("/step", json={"action": {"text": UP}, "episode_id": "idle"}).status_code == 404
        )


@needs_ws
def test_token_is_required_when_set():
    with (
        ServerThread(create_app(ENV_ID, token="s3cret")) as srv,
        httpx.Client(base_url=srv.url) as c,
    ):
        assert c.get("/health").status_code == 200  # probes stay open
        assert c.post("/reset", json={}).status_code == 401
        ok = c.post("/reset", json={}, headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200

        async def ws_refused():
            with pytest.raises(websockets.exceptions.InvalidStatus):
                async with websockets.connect(srv.url.replace("http", "ws") + "/ws") as ws:
                    await ws.send(json.dumps({"type": "reset"}))
                    await ws.recv()

        asyncio.run(ws_refused())


@needs_ws
@pytest.mark.slow  # importing OpenEnv's client pulls in gradio (~15 s)
def test_openenv_generic_client_works_unchanged(server):
    generic = pytest.importorskip("openenv.core.generic_client")
    with generic.GenericEnvClient(base_url=server.url).sync() as env:
        first = env.reset(seed=5)
        assert first.observation["tools"][0]["function"]["name"] == "move"
        step = env.step({"text": UP})
        assert step.observation["info"]["action_valid"] is True and step.done is False
        assert isinstance(step.reward, float)
        assert env.state()["step_count"] == 1


@needs_ws
@pytest.mark.slow  # importing OpenEnv's client pulls in gradio (~15 s)
def test_openenv_client_gets_an_error_naming_the_field_and_its_episode_goes_on(server):
    generic = pytest.importorskip("openenv.core.generic_client")
    with generic.GenericEnvClient(base_url=server.url).sync() as env:
        env.reset(seed=6)
        env.step({"text": UP})
        with pytest.raises(RuntimeError, match="tool_calls") as refused:
            env.step({"content": "", "tool_calls": 5})
        assert "VALIDATION_ERROR" in str(refused.value)
        with pytest.raises(RuntimeError, match="options"):
            env.reset(options=7)
        assert env.state()["step_count"] == 1  # the same connection, the same episode
        step = env.step({"text": UP})
        assert step.observation["info"]["action_valid"] is True
        assert env.state()["step_count"] == 2


def test_cli_serve_parser_defaults_to_loopback():
    from agentgym.cli import build_parser

    args = build_parser().parse_args(["serve", ENV_ID])
    assert args.host == "127.0.0.1" and args.func.__module__ == "agentgym.cli.cmd_serve"


class _Slow(gymnasium.Wrapper):
    def step(self, action):
        if action == "SLOW":
            time.sleep(2.0)
        return self.env.step(action)


def test_a_step_past_the_deadline_fails_that_session_only():
    from agentgym.integrations.session import TextSession

    limits = ServerLimits(step_timeout_s=0.5)
    factory = lambda: TextSession(_Slow(gymnasium.make(ENV_ID)))  # noqa: E731
    with (
        ServerThread(create_app(ENV_ID, limits=limits, session_factory=factory)) as srv,
        httpx.Client(base_url=srv.url, timeout=10) as c,
    ):
        c.post("/reset", json={"seed": 0, "episode_id": "slow"})
        c.post("/reset", json={"seed": 0, "episode_id": "fine"})
        late = c.post("/step", json={"action": {"text": "SLOW"}, "episode_id": "slow"})
        assert late.status_code == 504 and late.json()["code"] == "EXECUTION_ERROR"
        assert (
            c.post("/step", json={"action": {"text": UP}, "episode_id": "slow"}).status_code == 404
        )
        ok = c.post("/step", json={"action": {"text": UP}, "episode_id": "fine"})
        assert ok.status_code == 200 and ok.json()["observation"]["info"]["action_valid"]


def test_http_structured_call_whose_argument_holds_the_closing_tag_is_one_valid_call():
    """OpenAI tool calls over HTTP reach the env whole (issue 38): an argument holding
    ``</tool_call>`` no longer cuts the call in two (an invalid-JSON format penalty)."""
    message = 'Is it a "tool"? </tool_call> <answer>no</answer>'
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "talk", "arguments": json.dumps({"message": message})},
    }
    with (
        ServerThread(create_app("agentgym/UserTwentyQuestions-v0")) as srv,
        httpx.Client(base_url=srv.url, timeout=30) as c,
    ):
        c.post("/reset", json={"seed": 0, "episode_id": "q"})
        body = {"action": {"content": "", "tool_calls": [call]}, "episode_id": "q"}
        out = c.post("/step", json=body).json()
        info = out["observation"]["info"]
        assert info["action_valid"] is True, info.get("error")
        assert info["tool_calls"][0]["arguments"] == {"message": message}
        assert info["reward_components"]["format"] == 0.0
        assert out["done"] is False  # the <answer> inside the argument is no answer
