"""Slow sessions cannot starve the others: every session gets a worker thread for its one call
in flight, threads go to the least-served session when scarce, and queue time is reported
(issue 15, V6)."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx
import pytest

from agentgym.server import ServerLimits, ServerThread, create_app

from .conftest import ENV_ID, UP

SLOW = 33  # more than asyncio's default pool ever has (min(32, cpus + 4) threads)


async def _starve(url: str, counts) -> tuple[int, dict, dict]:
    async with httpx.AsyncClient(base_url=url, timeout=60) as c:
        for i in range(SLOW):
            await c.post("/reset", json={"seed": i, "episode_id": f"slow{i}"})
        await c.post("/reset", json={"seed": 0, "episode_id": "benign"})
        slow = [
            asyncio.create_task(
                c.post("/step", json={"action": {"text": "BLOCK"}, "episode_id": f"slow{i}"})
            )
            for i in range(SLOW)
        ]
        started = 0  # slow steps now holding a thread, blocked on the gate
        deadline = time.monotonic() + 15
        while started < SLOW and time.monotonic() < deadline:
            started += await asyncio.to_thread(counts.blocked.acquire, True, 0.2)
        benign = asyncio.create_task(
            c.post("/step", json={"action": {"text": UP}, "episode_id": "benign"})
        )
        done, _ = await asyncio.wait({benign}, timeout=15)  # a bound, not a timing claim
        finished_while_blocked = bool(done)
        counts.gate.set()
        replies = await asyncio.gather(benign, *slow)
        health = (await c.get("/health")).json()
        assert all(r.status_code == 200 for r in replies), [r.text for r in replies][:3]
        assert finished_while_blocked, f"{started} slow steps held every thread; benign waited"
        return started, replies[0], health


def test_a_benign_step_runs_while_33_slow_steps_hold_their_threads(counts):
    limits = ServerLimits(max_sessions=40)
    app = create_app(ENV_ID, limits=limits, session_factory=counts.factory)
    with ServerThread(app) as srv:
        started, benign, health = asyncio.run(_starve(srv.url, counts))
    assert started == SLOW
    body = benign.json()
    assert body["observation"]["info"]["action_valid"] is True
    assert set(body["timing"]) == {"queue_ms", "run_ms"} and body["timing"]["queue_ms"] >= 0
    assert float(benign.headers["X-Agentgym-Queue-Ms"]) >= 0
    assert health["scheduler"]["workers"] == 40 and health["scheduler"]["abandoned"] == 0


def test_scarce_threads_go_to_the_least_served_session_first():
    """One thread; a slow session that already used it, and a quick one, both wait: the quick
    one runs first although it asked later."""
    order: list[str] = []
    gate = threading.Event()

    def work(name: str, wait: bool = False) -> str:
        if wait:
            gate.wait(10)
        order.append(name)
        return name

    from agentgym.server.scheduler import FairScheduler

    async def main():
        sched = FairScheduler(workers=1)
        await sched.run("slow", time.sleep, 0.05, timeout=10)  # the slow session's history
        holder = asyncio.create_task(sched.run("other", work, "holder", True, timeout=10))
        await asyncio.sleep(0.05)
        slow = asyncio.create_task(sched.run("slow", work, "slow", timeout=10))
        await asyncio.sleep(0.01)
        quick = asyncio.create_task(sched.run("quick", work, "quick", timeout=10))
        await asyncio.sleep(0.01)
        assert sched.stats()["waiting"] == 2
        gate.set()
        results = await asyncio.gather(holder, slow, quick)
        assert all(r.queue_s >= 0 and r.run_s >= 0 for r in results)
        assert results[2].queue_s > 0
        sched.shutdown()

    asyncio.run(main())
    assert order == ["holder", "quick", "slow"]


def test_a_call_past_its_deadline_frees_its_thread_for_others():
    from agentgym.server.scheduler import FairScheduler

    async def main():
        sched = FairScheduler(workers=1, spare=1)
        cleaned = threading.Event()
        with pytest.raises(Exception, match="ran past"):
            await sched.run(
                "stuck", time.sleep, 0.5, timeout=0.05, on_abandon=lambda _: cleaned.set()
            )
        assert sched.stats()["abandoned"] == 1
        ok = await sched.run("next", lambda: "ran", timeout=10)  # not queued behind the stuck one
        assert ok.value == "ran"
        await asyncio.to_thread(cleaned.wait, 10)
        assert cleaned.is_set()
        sched.shutdown()

    asyncio.run(main())
