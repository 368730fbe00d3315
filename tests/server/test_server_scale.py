"""``agentgym serve`` at scale (issue 22), at reduced scale for CI.

* Capacity counts live sessions only: 128 WebSocket clients under a cap of 144 are all
  admitted (the server used to count an env twice while its build finished and refused
  clients as "still finishing a call that timed out" though no call took a millisecond).
* A step's deadline measures the env's own run time, not the wait for a thread.
* Envs that declare ``metadata["blocking"] = False`` run inline on the event loop (no
  thread per session); the others run on the bounded executor.
"""

from __future__ import annotations

import asyncio
import threading
import time

import gymnasium
import httpx
import pytest

from agentgym.integrations.session import TextSession
from agentgym.server import ServerLimits, ServerThread, create_app
from agentgym.server.scheduler import FairScheduler
from agentgym.server.sessions import env_blocks
from benchmarks.serve_clients import ClientPlan, run_clients

from .conftest import ENV_ID, Counts

CLIENTS, HEADROOM, STEPS = 128, 16, 20


def _health_when_idle(url: str) -> dict:
    """/health once every session closed (the server closes them as their sockets close)."""
    deadline = time.monotonic() + 30
    while True:
        health = httpx.get(url + "/health", timeout=30).json()
        if health["active_sessions"] == 0 and health["envs_built"] == health["envs_closed"]:
            return health
        assert time.monotonic() < deadline, f"sessions never closed: {health}"
        time.sleep(0.05)


@pytest.mark.parametrize("blocking", [False, True], ids=["inline", "threads"])
def test_clients_up_to_the_cap_are_all_admitted_and_every_env_closes(blocking):
    counts = Counts()
    limits = ServerLimits(max_sessions=CLIENTS + HEADROOM)
    factory = counts.factory if blocking else None  # Gated Sokoban says it blocks
    app = create_app(ENV_ID, limits=limits, session_factory=factory)
    with ServerThread(app) as srv:
        plans = [ClientPlan(srv.url, steps=STEPS, seed=i) for i in range(CLIENTS)]
        stats = asyncio.run(run_clients(plans))
        health = _health_when_idle(srv.url)
        manager = app.state.manager
    errors = [e for s in stats for e in s.errors]
    assert not errors, f"{len(errors)} of {CLIENTS} clients failed, e.g. {errors[:2]}"
    assert [len(s.step_s) for s in stats] == [STEPS] * CLIENTS
    assert health["envs_built"] == CLIENTS and health["scheduler"]["abandoned"] == 0
    # an env that never blocks runs inline (only the first build, which tells, used a
    # thread); a blocking one runs every build, reset, step and close on a thread
    calls = manager.scheduler.calls
    if blocking:
        assert calls >= CLIENTS * (STEPS + 3)
    else:
        assert calls == 1


def test_the_cap_refuses_the_next_session_and_names_what_it_counted():
    limits = ServerLimits(max_sessions=3)
    with (
        ServerThread(create_app(ENV_ID, limits=limits)) as srv,
        httpx.Client(base_url=srv.url, timeout=30) as c,
    ):
        for i in range(3):
            assert c.post("/reset", json={"seed": i, "episode_id": f"e{i}"}).status_code == 200
        r = c.post("/reset", json={"seed": 9, "episode_id": "e3"})
        assert r.status_code == 503 and r.json()["code"] == "CAPACITY_REACHED"
        assert "3 open, 0 being built" in r.json()["detail"]
        assert "timed out" not in r.json()["detail"]


def test_a_deadline_counts_the_env_run_not_the_wait_for_a_thread():
    """The pool's only thread is held by an abandoned call; the next call waits for it far
    past its own timeout, then runs in microseconds: it must succeed, not time out."""
    gate = threading.Event()

    async def main():
        sched = FairScheduler(workers=1, spare=0)
        with pytest.raises(Exception, match="ran past"):
            await sched.run("stuck", gate.wait, 30, timeout=0.05)
        queued = asyncio.create_task(sched.run("next", lambda: "ran", timeout=0.1))
        begun = time.monotonic()
        while time.monotonic() - begun < 0.5:  # wait 5x its timeout in the pool's queue
            await asyncio.sleep(0.05)
        assert not queued.done()
        gate.set()
        out = await queued
        sched.shutdown()
        return out

    out = asyncio.run(main())
    assert out.value == "ran"
    assert out.queue_s >= 0.5  # it waited 5x its timeout for the thread, and was not cut


def test_envs_declare_whether_they_block():
    def session(env_id: str, **kwargs) -> TextSession:
        return TextSession(gymnasium.make(env_id, **kwargs))

    for env_id in (ENV_ID, "agentgym/WebTodoText-v0", "agentgym/UserTwentyQuestions-v0"):
        text = session(env_id)
        assert env_blocks(text) is False, env_id
        text.close()
    counts = Counts()
    gated = counts.factory()
    assert env_blocks(gated) is True  # a wrapper that waits says so over its env
    gated.close()
    wrapped = TextSession(gymnasium.Wrapper(gymnasium.make(ENV_ID)))
    assert env_blocks(wrapped) is False  # gymnasium's own wrappers forward the flag
    wrapped.close()
    mine = TextSession(type("UserWrapper", (gymnasium.Wrapper,), {})(gymnasium.make(ENV_ID)))
    assert env_blocks(mine) is True  # a user's wrapper that says nothing may block
    mine.close()
    cart = TextSession.__new__(TextSession)
    cart.env = gymnasium.make("CartPole-v1")  # says nothing: assumed to block
    assert env_blocks(cart) is True
    cart.env.close()


def test_the_fast_codec_and_the_stdlib_fallback_write_the_same_json(monkeypatch):
    import json

    import numpy as np

    from agentgym.server import payloads

    value = {
        "nan": np.float64("nan"),
        "arr": np.array([1.0, np.nan]),
        "big": np.zeros(5000),
        "pair": (1, np.int64(2)),
        3: np.bool_(True),
        "inf": float("inf"),
        "text": "caf\u00e9",
    }
    want = {
        "nan": None,
        "arr": [1.0, None],
        "big": "<array (5000,) float64>",
        "pair": [1, 2],
        "3": True,
        "inf": None,
        "text": "caf\u00e9",
    }
    fast = payloads.dumps_bytes(value)
    monkeypatch.setattr(payloads, "orjson", None)
    slow = payloads.dumps_bytes(value)
    assert json.loads(fast) == json.loads(slow) == want
    assert payloads.dumps({"s": "a\ud800b"}) == '{"s":"a\ufffdb"}'  # never fails to encode


class _SlowButNeverWaits(gymnasium.Wrapper):
    """Says it never blocks, yet each step holds the CPU (sleep stands in for the work)."""

    def __init__(self, env):
        super().__init__(env)
        self.metadata = {**env.metadata, "blocking": False}

    def step(self, action):
        time.sleep(0.02)
        return self.env.step(action)


def test_an_inline_env_whose_calls_prove_slow_moves_to_the_threads():
    factory = lambda: TextSession(_SlowButNeverWaits(gymnasium.make(ENV_ID)))  # noqa: E731
    app = create_app(ENV_ID, session_factory=factory)
    with ServerThread(app) as srv:
        (stats,) = asyncio.run(run_clients([ClientPlan(srv.url, steps=70, seed=3)]))
        manager = app.state.manager
        assert not stats.errors and len(stats.step_s) == 70
        assert manager.inline_ok is False  # judged after a window of 50 inline calls
        assert manager.scheduler.calls >= 70 - 50  # the rest ran on threads
