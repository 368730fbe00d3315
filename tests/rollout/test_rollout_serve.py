"""The rollout engine over a real ``agentgym serve`` on 127.0.0.1 (issue 25).

:class:`~agentgym.rollout.ServeEnvSource` plays each episode in a private server session.
The episodes equal the local lockstep loop's for the same seeds and model; and when the
server restarts while one group waits for its model (its sessions are lost), those
episodes end as ``infra_failure`` with the server's answer as the cause, are played again
in new sessions, and every group comes back whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import time
from typing import Any

import gymnasium as gym
import httpx
import pytest

from agentgym.rollout import EpisodeCallbacks, RolloutConfig, RolloutEngine, ServeEnvSource
from tests.fake_llm_server import ScriptedChatPolicy
from tests.rollout.held_group import HoldOneTask, collect_with_held_group
from tests.rollout.test_rollout_engine import engine_results, lockstep

SOKOBAN = "agentgym/Sokoban-Tiny-v0"
pytestmark = pytest.mark.slow  # starts two server processes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentgym", "serve", SOKOBAN, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, "agentgym serve exited"
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200:
                return proc
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("agentgym serve never answered /health")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_serve_sessions_equal_local_envs_and_a_lost_session_is_an_infra_failure() -> None:
    seeds, k = [0, 1, 2], 2
    held_seed = 2
    policy = HoldOneTask(gym.make(SOKOBAN).reset(seed=held_seed)[0]["text"], k)
    port = _free_port()
    procs = [_serve(port)]
    others_done = asyncio.Event()
    done: list[Any] = []

    def on_episode(ep: Any) -> None:
        if ep.status == "done" and ep.seed != held_seed:
            done.append(ep)
            if len(done) == 4:
                others_done.set()

    source = ServeEnvSource(f"http://127.0.0.1:{port}")
    config = RolloutConfig(group_size=k, max_in_flight=6, partial=False)
    engine = RolloutEngine(source, policy, seeds, config, EpisodeCallbacks(on_episode=on_episode))

    async def restart_server() -> None:  # the held group's sessions are open on it
        await asyncio.to_thread(_stop, procs[0])
        procs.append(await asyncio.to_thread(_serve, port))  # a restarted server: sessions lost

    try:
        collection = collect_with_held_group(
            engine, 3, policy, restart_server, also_wait_for=[others_done]
        )
    finally:
        engine.close()
        for proc in procs:
            _stop(proc)
    summary = collection.summary
    assert source.capacity == 64 and source.env_id.endswith("Sokoban-Tiny-v0")
    assert summary.causes == {"env_error": 2} and summary.retries == 2
    held = next(g for g in collection.groups if g.seed == held_seed)
    assert [ep.status for ep in held.retired] == ["infra_failure"] * 2
    assert all("HTTP 404" in (ep.cause or "") for ep in held.retired)
    assert summary.usable_groups == 3 and all(len(g.members) == k for g in collection.groups)
    # the retried episodes replayed in new sessions: everything equals the local loop
    assert engine_results(collection.groups) == lockstep(SOKOBAN, ScriptedChatPolicy(), seeds, k)


def test_closing_the_source_waits_for_a_call_under_way_then_closes_its_session() -> None:
    """A slot's ``/reset`` is still under way when the source closes (an engine's worker
    thread outlives an episode whose call was cut short). ``close()`` waits for it before
    it sends its ``/close`` calls: a request still on its way could otherwise reach the
    server after them and open a session nobody closes."""
    import threading

    from tests.rollout.serve_process import ServeProcess

    with ServeProcess(SOKOBAN, max_sessions=4) as server:
        source = server.source()
        slot = source.acquire()
        answered, release = threading.Event(), threading.Event()
        real_post = source.client.post

        def held_post(url: str, **kwargs: Any) -> Any:
            resp = real_post(url, **kwargs)
            if url.endswith("/reset"):  # the server has it; the caller does not yet
                answered.set()
                assert release.wait(60)
            return resp

        source.client.post = held_post  # type: ignore[method-assign]
        resetting = threading.Thread(target=slot.reset, args=(0,))
        resetting.start()
        closing = threading.Thread(target=source.close)
        try:
            assert answered.wait(60)
            closing.start()
            closing.join(0.5)
            assert closing.is_alive()  # waiting for the reset (a close that did not wait
            # would be done by now: nothing else holds it)
        finally:
            release.set()
            resetting.join(60)
            closing.join(60)
        assert not closing.is_alive()
        assert server.active_sessions() == 0
