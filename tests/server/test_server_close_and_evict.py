"""Sessions end when their client is done with them, and idle sessions without an episode
never lock real clients out (issue 38).

* ``POST /close`` ends one HTTP session and closes its env (after any call in flight);
  :class:`~agentgym.rollout.ServeEnvSource` uses it, so a source that is closed leaves no
  session on the server, and the next engine (a restarted trainer) gets every slot. Before,
  a second source got 503 on every reset until the first one's sessions idled out (10 min).
* At capacity, a new session takes the place of the least recently used idle session that
  has no episode in progress (never reset, its reset failed, its episode ended). A burst of
  resets with a bad task id used to hold every slot for the idle timeout.
"""

from __future__ import annotations

import threading
import time

import gymnasium as gym
import httpx

from agentgym.rollout import ServeEnvSource
from agentgym.server import ServerLimits, ServerThread, create_app

from .conftest import ENV_ID, UP


def _wait_for(predicate, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _held(c: httpx.Client, eid: str) -> bool:
    """Whether the server holds session ``eid`` (its /state answers)."""
    status = c.get("/state", params={"episode_id": eid}).status_code
    assert status in (200, 404), status
    return status == 200


def _oracle_moves(seed: int) -> list[str]:
    """The oracle's actions for Sokoban-Tiny ``seed``, played on a local env."""
    env = gym.make(ENV_ID)
    env.reset(seed=seed)
    moves, done = [], False
    while not done:
        moves.append(env.unwrapped.oracle_action())
        _, _, terminated, truncated, _ = env.step(moves[-1])
        done = terminated or truncated
    env.close()
    return moves


# ---- POST /close ----------------------------------------------------------------------------


def test_close_ends_the_session_after_the_call_in_flight_and_is_idempotent(counts):
    app = create_app(ENV_ID, limits=ServerLimits(max_sessions=4), session_factory=counts.factory)
    with ServerThread(app) as srv, httpx.Client(base_url=srv.url, timeout=30) as c:
        assert c.post("/reset", json={"seed": 0, "episode_id": "a"}).status_code == 200
        assert c.post("/reset", json={"seed": 1, "episode_id": "b"}).status_code == 200
        blocked = {}

        def step_blocked() -> None:
            body = {"action": {"text": "BLOCK"}, "episode_id": "a"}
            blocked["reply"] = httpx.post(srv.url + "/step", json=body, timeout=60)

        stepper = threading.Thread(target=step_blocked)
        stepper.start()
        assert counts.blocked.acquire(timeout=30), "the step never started"
        closer = threading.Thread(
            target=lambda: blocked.setdefault(
                "close", httpx.post(srv.url + "/close", json={"episode_id": "a"}, timeout=60)
            )
        )
        closer.start()
        _wait_for(lambda: not _held(c, "a"), "the session still answered after /close")
        assert counts.closed == 0  # its env waits for the step in flight
        counts.gate.set()
        stepper.join(60)
        closer.join(60)
        assert blocked["reply"].status_code == 200  # the step in flight finished normally
        assert blocked["close"].json() == {"episode_id": "a", "closed": True}
        assert counts.closed == 1 and counts.closed_mid_step == 0

        again = c.post("/close", json={"episode_id": "a"})
        assert again.status_code == 200 and again.json() == {"episode_id": "a", "closed": False}
        gone = c.post("/step", json={"action": {"text": UP}, "episode_id": "a"})
        assert gone.status_code == 404
        assert _held(c, "b")  # the other session is untouched
        assert c.post("/close", json={"episode_id": "bad id"}).json()["field"] == "episode_id"

        assert c.post("/reset", json={"seed": 2}).status_code == 200  # the shared default
        shared = c.post("/close", json={})
        assert shared.json() == {"episode_id": "default", "closed": True}
        assert shared.headers["X-Agentgym-Shared-Session"] == "default"
        health = c.get("/health").json()
        assert health["active_sessions"] == 1 and health["envs_closed"] == 2


def test_close_needs_the_token():
    with ServerThread(create_app(ENV_ID, token="s3cret")) as srv:
        ok = {"Authorization": "Bearer s3cret"}
        httpx.post(srv.url + "/reset", json={"episode_id": "t"}, headers=ok)
        refused = httpx.post(srv.url + "/close", json={"episode_id": "t"})
        assert refused.status_code == 401
        closed = httpx.post(srv.url + "/close", json={"episode_id": "t"}, headers=ok)
        assert closed.json()["closed"] is True


# ---- ServeEnvSource frees what it holds -----------------------------------------------------


def test_a_closed_serve_source_leaves_nothing_and_the_next_source_gets_every_slot(counts):
    slots_n = 4
    app = create_app(
        ENV_ID, limits=ServerLimits(max_sessions=slots_n), session_factory=counts.factory
    )
    with ServerThread(app) as srv, httpx.Client(base_url=srv.url, timeout=30) as c:
        first = ServeEnvSource(srv.url)
        slots = [first.acquire() for _ in range(slots_n)]
        for seed, slot in enumerate(slots):
            slot.reset(seed)
            slot.step(UP)  # every episode is in progress: none may be evicted
        first.release(slots[0], healthy=True)  # one back in the free list, three still lent
        first.close()  # the trainer stops mid-collection
        health = c.get("/health").json()
        assert health["active_sessions"] == 0
        assert health["envs_closed"] == health["envs_built"] == slots_n
        assert health["evicted"] == 0

        second = ServeEnvSource(srv.url)
        try:
            fresh = [second.acquire() for _ in range(slots_n)]
            for seed, slot in enumerate(fresh):
                obs, info = slot.reset(seed)
                assert info["task_id"] and obs["text"]
                assert slot.step(UP).info["action_valid"] is True
        finally:
            second.close()
        assert c.get("/health").json()["active_sessions"] == 0
    assert counts.built == counts.closed == 2 * slots_n


def test_an_unhealthy_slot_is_closed_on_the_server_and_never_lent_again(counts):
    app = create_app(ENV_ID, limits=ServerLimits(max_sessions=4), session_factory=counts.factory)
    with ServerThread(app) as srv, httpx.Client(base_url=srv.url, timeout=30) as c:
        source = ServeEnvSource(srv.url)
        try:
            bad, good = source.acquire(), source.acquire()
            bad.reset(0)
            good.reset(1)
            source.release(bad, healthy=False)
            _wait_for(lambda: not _held(c, bad.episode_id), "the unhealthy session stayed open")
            assert _held(c, good.episode_id)
            source.release(good, healthy=True)
            assert source.acquire() is good  # the healthy one is lent again, the other never
            assert source.acquire().episode_id not in (bad.episode_id, good.episode_id)
        finally:
            source.close()
        assert counts.closed == counts.built


def test_closing_a_source_whose_server_is_gone_returns():
    with ServerThread(create_app(ENV_ID)) as srv:
        source = ServeEnvSource(srv.url)
        source.acquire().reset(0)
    source.close()  # the server stopped (its sessions with it): nothing to free, no hang


# ---- capacity: idle sessions without an episode make room ----------------------------------


def test_at_capacity_the_least_recently_used_session_without_an_episode_makes_room(counts):
    app = create_app(ENV_ID, limits=ServerLimits(max_sessions=2), session_factory=counts.factory)
    with ServerThread(app) as srv, httpx.Client(base_url=srv.url, timeout=30) as c:
        for eid in ("a", "b"):  # two sessions whose reset failed: an env each, no episode
            bad = c.post("/reset", json={"task_id": "no-such-task", "episode_id": eid})
            assert bad.status_code == 400
        assert c.post("/reset", json={"seed": 0, "episode_id": "c"}).status_code == 200
        assert not _held(c, "a") and _held(c, "b")  # the one used longest ago made room
        assert c.post("/reset", json={"seed": 1, "episode_id": "d"}).status_code == 200
        assert not _held(c, "b")

        # both sessions have an episode in progress: the next one is refused, none evicted
        full = c.post("/reset", json={"seed": 2, "episode_id": "e"})
        assert full.status_code == 503 and full.json()["code"] == "CAPACITY_REACHED"
        assert _held(c, "c") and _held(c, "d")

        # once c's episode ends, c may make room; d (in progress) stays
        for move in _oracle_moves(0):
            out = c.post("/step", json={"action": {"text": move}, "episode_id": "c"}).json()
        assert out["done"] is True
        assert c.post("/reset", json={"seed": 2, "episode_id": "e"}).status_code == 200
        assert not _held(c, "c") and _held(c, "d")
        assert c.get("/state", params={"episode_id": "d"}).json()["step_count"] == 0
        health = c.get("/health").json()
        assert health["evicted"] == 3 and health["active_sessions"] == 2
        assert health["envs_built"] - health["envs_closed"] == 2
    assert counts.built == counts.closed


def test_a_burst_of_failed_resets_cannot_lock_real_clients_out(counts):
    burst = 64
    app = create_app(ENV_ID, limits=ServerLimits(max_sessions=4), session_factory=counts.factory)
    with ServerThread(app) as srv, httpx.Client(base_url=srv.url, timeout=30) as c:
        for i in range(burst):
            body = {"task_id": "no-such-task", "episode_id": f"flood-{i}"}
            assert c.post("/reset", json=body).status_code == 400
        for i in range(4):  # every slot is available to real clients at once
            assert c.post("/reset", json={"seed": i, "episode_id": f"real-{i}"}).status_code == 200
            step = c.post("/step", json={"action": {"text": UP}, "episode_id": f"real-{i}"})
            assert step.json()["observation"]["info"]["action_valid"] is True
        assert c.get("/health").json()["active_sessions"] == 4


# ---- a close that races the session's first reset ---------------------------------------


def test_a_close_while_its_session_is_built_closes_it_once_built(counts):
    started, gate = threading.Semaphore(0), threading.Event()

    def slow_build():
        started.release()
        assert gate.wait(30), "the test never let the build finish"
        return counts.factory()

    app = create_app(ENV_ID, limits=ServerLimits(max_sessions=4), session_factory=slow_build)
    with ServerThread(app) as srv, httpx.Client(base_url=srv.url, timeout=30) as c:
        replies = {}
        resetter = threading.Thread(
            target=lambda: replies.setdefault(
                "reset", httpx.post(srv.url + "/reset", json={"episode_id": "a"}, timeout=60)
            )
        )
        resetter.start()
        assert started.acquire(timeout=30), "the build never started"
        closer = threading.Thread(
            target=lambda: replies.setdefault(
                "close", httpx.post(srv.url + "/close", json={"episode_id": "a"}, timeout=60)
            )
        )
        closer.start()
        closer.join(0.5)  # a close that does not wait for the build answers by now
        gate.set()
        resetter.join(60)
        closer.join(60)
        assert replies["close"].json() == {"episode_id": "a", "closed": True}
        assert not _held(c, "a")
        assert c.get("/health").json()["active_sessions"] == 0
    assert counts.built == counts.closed == 1


def test_an_unhealthy_slot_is_closed_only_after_its_reset_on_the_way_arrived(counts):
    """The engine gave up on a slot whose ``/reset`` was still on its way (a slow network):
    the ``/close`` must follow that reset, or the reset opens a session nobody closes."""
    held_back, sent = threading.Event(), threading.Semaphore(0)

    class SlowResets(httpx.HTTPTransport):
        def handle_request(self, request):
            if request.url.path == "/reset":
                sent.release()
                assert held_back.wait(30), "the test never let the reset go"
            return super().handle_request(request)

    app = create_app(ENV_ID, limits=ServerLimits(max_sessions=4), session_factory=counts.factory)
    with ServerThread(app) as srv, httpx.Client(base_url=srv.url, timeout=30) as c:
        source = ServeEnvSource(srv.url)
        source.client = httpx.Client(transport=SlowResets(), timeout=30)
        try:
            slot = source.acquire()
            resetting = threading.Thread(target=slot.reset, args=(0,))
            resetting.start()
            assert sent.acquire(timeout=30), "the reset never left"
            source.release(slot, healthy=False)  # the engine's timeout fired meanwhile
            time.sleep(0.3)  # a close sent at once (the bug) reaches the server in this time
            held_back.set()
            resetting.join(60)
            _wait_for(lambda: c.get("/health").json()["active_sessions"] == 0, "a session stayed")
            assert not _held(c, slot.episode_id)
        finally:
            source.close()
    assert counts.built == counts.closed == 1
