"""The server's lean per-message path (issue 22, serving at 4,096 sessions).

* ``/ws`` is a plain ASGI app in front of Starlette: the token rule, the other routes and the
  404 for unknown WebSocket paths still hold.
* Served envs skip gymnasium's passive env checker (built once per session, it cost about
  0.4 ms per session); ``env_kwargs`` can turn it back on.
* An inline call counts as slow only when it held the loop (used the CPU or waited), not
  when the process was merely preempted: on a busy machine a microsecond-step env stayed
  inline only by luck before. An env whose calls proved CPU-heavy moves to one worker
  thread, not hundreds that would take the GIL from the event loop.
"""

from __future__ import annotations

import asyncio
import json
import time
import types

import gymnasium
import httpx
import pytest
import websockets
from gymnasium.wrappers.common import PassiveEnvChecker

from agentgym.integrations.session import TextSession
from agentgym.server import ServerLimits, ServerThread, create_app, sessions
from agentgym.server.sessions import (
    CPU_BOUND_WORKERS,
    INLINE_SLOW_S,
    INLINE_WINDOW,
    SessionManager,
)

from .conftest import ENV_ID, UP


def _wrappers(env: gymnasium.Env) -> list[type]:
    out = []
    while isinstance(env, gymnasium.Wrapper):
        out.append(type(env))
        env = env.env
    return out


async def _reset_and_step(url: str) -> tuple[dict, dict]:
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"type": "reset", "data": {"seed": 5}}))
        first = json.loads(await ws.recv())
        await ws.send(json.dumps({"type": "step", "data": {"text": UP}}))
        return first, json.loads(await ws.recv())


def test_ws_path_keeps_the_token_rule_and_the_other_routes():
    with ServerThread(create_app(ENV_ID, token="s3cret")) as srv:
        ws_url = srv.url.replace("http://", "ws://")
        with pytest.raises(websockets.InvalidStatus) as refused:
            asyncio.run(_reset_and_step(ws_url + "/ws"))
        assert refused.value.response.status_code == 403  # closed before accept
        with pytest.raises(websockets.InvalidStatus):
            asyncio.run(_reset_and_step(ws_url + "/ws?token=wrong"))
        first, step = asyncio.run(_reset_and_step(ws_url + "/ws?token=s3cret"))
        assert first["type"] == step["type"] == "observation"
        assert step["data"]["observation"]["info"]["action_valid"] is True
        with pytest.raises(websockets.InvalidStatus):  # no WebSocket route but /ws
            asyncio.run(_reset_and_step(ws_url + "/wsx?token=s3cret"))
        assert httpx.get(srv.url + "/health").json()["status"] == "healthy"
        assert httpx.get(srv.url + "/schema").status_code == 401  # the HTTP rule too


def test_served_envs_skip_the_passive_env_checker_unless_asked():
    for env_kwargs, checked in ((None, False), ({"disable_env_checker": False}, True)):
        app = create_app(ENV_ID, env_kwargs=env_kwargs)
        text = app.state.manager.factory()
        try:
            assert (PassiveEnvChecker in _wrappers(text.env)) is checked
        finally:
            text.close()


class _Steps(gymnasium.Wrapper):
    """Sokoban that declares it never blocks, each step burning ``cpu_s`` of CPU, then
    sleeping ``sleep_s``."""

    def __init__(self, env: gymnasium.Env, cpu_s: float, sleep_s: float):
        super().__init__(env)
        self.metadata = {**env.metadata, "blocking": False}
        self.cpu_s, self.sleep_s = cpu_s, sleep_s

    def step(self, action):
        until = time.thread_time() + self.cpu_s
        while time.thread_time() < until:
            pass
        if self.sleep_s:
            time.sleep(self.sleep_s)
        return self.env.step(action)


def _after_a_window(cpu_s: float, sleep_s: float, monkeypatch: pytest.MonkeyPatch):
    """(still inline, worker threads) after a window of steps, on a clock where every inline
    call takes at least twice ``INLINE_SLOW_S`` of wall time (as in a preempted process)."""
    ticks = iter(range(10**9))
    clock = types.SimpleNamespace(monotonic=lambda: next(ticks) * 2 * INLINE_SLOW_S, time=time.time)
    monkeypatch.setattr(sessions, "time", clock)
    factory = lambda: TextSession(_Steps(gymnasium.make(ENV_ID), cpu_s, sleep_s))  # noqa: E731
    manager = SessionManager(factory, ServerLimits(max_sessions=8))

    async def play() -> tuple[bool, int]:
        session = await manager.get_or_create()
        assert session.inline
        await manager.reset(session, 1, None)
        for _ in range(INLINE_WINDOW + 5):
            if session.text.done:
                await manager.reset(session, 1, None)
            await manager.step(session, UP)
        await manager.stop()
        return manager.inline_ok, manager.scheduler.workers

    return asyncio.run(play())


def test_a_preempted_inline_call_is_not_slow_but_a_cpu_heavy_or_waiting_one_is(monkeypatch):
    assert _after_a_window(0.0, 0.0, monkeypatch) == (True, 8)  # preempted only: stays
    # CPU-heavy: leaves the loop for ONE thread (more would take GIL time from the loop)
    assert _after_a_window(1.2 * INLINE_SLOW_S, 0.0, monkeypatch) == (False, CPU_BOUND_WORKERS)
    # waiting: leaves the loop for as many threads as before
    assert _after_a_window(0.0, 0.001, monkeypatch) == (False, 8)
