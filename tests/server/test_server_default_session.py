"""HTTP clients that omit episode_id share the default session: it is used under its lock (no
5xx however many clients hit it, issue 15 V7), and they are told so, by a response header and
a log line (issue 14, OpenEnv HTTP)."""

from __future__ import annotations

import asyncio
import logging

import httpx

from agentgym.server import ServerLimits, ServerThread, create_app

from .conftest import ENV_ID, UP

CLIENTS = 12


async def _client(c: httpx.AsyncClient, i: int) -> list[httpx.Response]:
    out = [await c.post("/reset", json={"seed": i})]
    for _ in range(4):
        out.append(await c.post("/step", json={"action": {"text": "SLEEP 0.01"}}))
        out.append(await c.get("/state"))
    out.append(await c.post("/reset", json={"seed": i + 100}))
    out.append(await c.post("/step", json={"action": {"text": UP}}))
    return out


def test_twelve_clients_sharing_the_default_session_get_no_server_errors(counts):
    app = create_app(ENV_ID, limits=ServerLimits(max_sessions=4), session_factory=counts.factory)
    with ServerThread(app) as srv:

        async def main():
            async with httpx.AsyncClient(base_url=srv.url, timeout=60) as c:
                return await asyncio.gather(*[_client(c, i) for i in range(CLIENTS)])

        replies = [r for rs in asyncio.run(main()) for r in rs]
    bad = [(r.status_code, r.text[:200]) for r in replies if r.status_code != 200]
    assert not bad, f"{len(bad)} of {len(replies)} requests failed, e.g. {bad[:3]}"
    assert counts.built == 1  # one shared env, reset in place, never torn down under a caller
    counts.wait_closed()


def test_omitting_episode_id_is_announced_by_header_and_log(counts, caplog):
    app = create_app(ENV_ID, session_factory=counts.factory)
    with (
        caplog.at_level(logging.WARNING, logger="agentgym.server"),
        ServerThread(app) as srv,
        httpx.Client(base_url=srv.url, timeout=10) as c,
    ):
        shared = [
            c.post("/reset", json={"seed": 1}),
            c.post("/step", json={"action": {"text": UP}}),
            c.get("/state"),
        ]
        for r in shared:
            assert r.status_code == 200
            assert r.headers["X-Agentgym-Shared-Session"] == "default"
            assert "episode_id" in r.headers["Warning"] and "shares" in r.headers["Warning"]
        assert shared[0].json()["observation"]["episode_id"] == "default"
        own = [
            c.post("/reset", json={"seed": 1, "episode_id": "mine"}),
            c.post("/step", json={"action": {"text": UP}, "episode_id": "mine"}),
            c.get("/state", params={"episode_id": "mine"}),
        ]
        for r in own:
            assert r.status_code == 200 and "X-Agentgym-Shared-Session" not in r.headers
            assert r.headers["X-Agentgym-Episode-Id"] == "mine"
    logged = [r.getMessage() for r in caplog.records if "default session" in r.getMessage()]
    assert logged and "episode_id" in logged[0]
