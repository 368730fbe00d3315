"""Every env the server builds is closed, on every exit path: step timeout, WebSocket
disconnect mid-step, errors, server stop (issue 15, V5). Counted by the env
factory itself: envs built == envs closed."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import websockets

from agentgym.server import ServerLimits, ServerThread, create_app

from .conftest import ENV_ID, UP


def _wait_for(predicate, what: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _timeouts_close_and_cap(counts) -> None:
    limits = ServerLimits(max_sessions=1, step_timeout_s=0.3)
    app = create_app(ENV_ID, limits=limits, session_factory=counts.factory)
    with ServerThread(app) as srv, httpx.Client(base_url=srv.url, timeout=30) as c:
        for _ in range(3):
            # once the env of the timed-out step is closed, the next session can be built
            _wait_for(
                lambda: c.post("/reset", json={"seed": 0, "episode_id": "s"}).status_code == 200,
                "no new session after a timed-out one",
            )
            late = c.post("/step", json={"action": {"text": "SLEEP 1.0"}, "episode_id": "s"})
            assert late.status_code == 504 and late.json()["code"] == "EXECUTION_ERROR"
            gone = c.post("/step", json={"action": {"text": UP}, "episode_id": "s"})
            assert gone.status_code == 404
            # the stuck env still counts against max_sessions=1 until its step returns
            assert counts.built - counts.closed <= 1
        counts.wait_closed()
        assert counts.built == 3
        health = c.get("/health").json()
        assert health["envs_built"] == health["envs_closed"] == 3
    assert counts.built == counts.closed
    counts.built = counts.closed = 0


async def _disconnect_mid_step(url: str) -> None:
    ws = await websockets.connect(url)
    await ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
    await ws.recv()
    await ws.send(json.dumps({"type": "step", "data": {"text": "SLEEP 0.5"}}))
    await ws.close()  # gone while the env is still stepping


def test_every_exit_path_closes_its_env(counts):
    """Timeout (above), WebSocket disconnect mid-step, error replies, server stop."""
    _timeouts_close_and_cap(counts)
    limits = ServerLimits(max_sessions=8)
    app = create_app(ENV_ID, limits=limits, session_factory=counts.factory)
    with ServerThread(app) as srv, httpx.Client(base_url=srv.url, timeout=30) as c:
        url = srv.url.replace("http", "ws") + "/ws"

        async def main():
            await asyncio.gather(*[_disconnect_mid_step(url) for _ in range(4)])

        asyncio.run(main())
        counts.wait_closed()
        assert counts.built == 4
        assert counts.closed_mid_step == 0  # closed after the step returned, never under it

        async def errors():  # errors answer with a frame and keep the connection's one env
            async with websockets.connect(url) as ws:
                for msg in (
                    {"type": "step", "data": {"text": UP}},  # before any reset
                    {"type": "reset", "data": {"task_id": "no-such-task"}},
                    {"type": "reset", "data": {"seed": 3}},
                ):
                    await ws.send(json.dumps(msg))
                    replies.append(json.loads(await ws.recv())["type"])

        replies: list[str] = []
        asyncio.run(errors())
        assert replies == ["error", "error", "observation"]
        counts.wait_closed()
        assert counts.built == 5
        # sessions still open when the server stops: HTTP named ones and the default one
        for eid in ("a", "b", None):
            body = {"seed": 2} | ({"episode_id": eid} if eid else {})
            assert c.post("/reset", json=body).status_code == 200
        assert c.get("/health").json()["active_sessions"] == 3
    assert counts.built == 8 and counts.closed == 8
