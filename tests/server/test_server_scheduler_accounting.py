"""The scheduler's accounting (issue 38): what ``stats()`` reports through a call's life, how
an abandoned call is counted until it returns, what ``queue_s`` and ``run_s`` measure, and how
a session's thread time is charged, decays and is forgotten.

Each call waits on an event the test sets, so every count is checked at a known point; the
thread-time arithmetic is checked with explicit clock values.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from agentgym.server import scheduler as scheduler_module
from agentgym.server.scheduler import HALF_LIFE_S, CallTimeout, FairScheduler


def _run(coro: Any) -> Any:
    async def bounded() -> Any:
        async with asyncio.timeout(120):
            return await coro

    return asyncio.run(bounded())


async def _until(predicate: Any) -> None:
    while not predicate():
        await asyncio.sleep(0.005)


def _held(gate: threading.Event, value: Any = "done") -> Any:
    gate.wait(60)
    return value


def test_stats_follow_calls_from_waiting_to_running_to_done():
    async def main() -> None:
        sched = FairScheduler(workers=2, spare=1)
        assert sched.stats() == {"workers": 2, "running": 0, "waiting": 0, "abandoned": 0}
        gates = [threading.Event() for _ in range(3)]
        tasks = [
            asyncio.create_task(sched.run(f"s{i}", _held, g, i, timeout=60))
            for i, g in enumerate(gates)
        ]
        await _until(lambda: sched.running == 2 and sched.waiting == 1)
        assert sched.stats() == {"workers": 2, "running": 2, "waiting": 1, "abandoned": 0}
        gates[0].set()
        assert (await tasks[0]).value == 0
        await _until(lambda: sched.waiting == 0)
        assert sched.stats() == {"workers": 2, "running": 2, "waiting": 0, "abandoned": 0}
        for gate in gates:
            gate.set()
        assert [(await t).value for t in tasks] == [0, 1, 2]
        assert sched.stats() == {"workers": 2, "running": 0, "waiting": 0, "abandoned": 0}
        assert sched.calls == 3
        sched.shutdown()

    _run(main())


def test_an_abandoned_call_counts_apart_until_it_returns_and_gives_its_result_to_cleanup():
    cleaned: list[Any] = []

    async def main() -> None:
        sched = FairScheduler(workers=1, spare=1)
        gate = threading.Event()
        with pytest.raises(CallTimeout, match=r"ran past 0\.1 s"):
            await sched.run("stuck", _held, gate, "late", timeout=0.1, on_abandon=cleaned.append)
        assert sched.stats() == {"workers": 1, "running": 0, "waiting": 0, "abandoned": 1}
        ok = await sched.run("next", lambda: "ran", timeout=60)  # its thread was freed
        assert ok.value == "ran"
        gate.set()
        await _until(lambda: sched.abandoned == 0)
        assert sched.stats() == {"workers": 1, "running": 0, "waiting": 0, "abandoned": 0}
        assert cleaned == ["late"]  # cleanup got the value the call returned
        kept = await sched.run("fine", lambda: "v", timeout=60, on_abandon=cleaned.append)
        assert kept.value == "v" and cleaned == ["late"]  # not abandoned: no cleanup
        sched.shutdown()

    _run(main())


def test_a_call_that_finishes_at_its_deadline_returns_its_result(monkeypatch):
    """The deadline passes while the call is returning: it finished, so it is no timeout."""
    gate = threading.Event()
    sched = FairScheduler(workers=1, spare=1)
    real_wait_for = asyncio.wait_for

    async def late_wait_for(aw: Any, timeout: float) -> Any:
        try:
            return await real_wait_for(aw, timeout)
        except TimeoutError:
            gate.set()  # the call returns now, before the scheduler looks at it
            await _until(lambda: all(c.finished for c in sched._running_calls))
            raise

    monkeypatch.setattr(scheduler_module.asyncio, "wait_for", late_wait_for)

    async def main() -> None:
        out = await sched.run("edge", _held, gate, "made it", timeout=0.1)
        assert out.value == "made it"
        await _until(lambda: sched.running == 0)
        assert sched.stats()["abandoned"] == 0
        sched.shutdown()

    _run(main())


def test_a_wait_that_expires_while_the_call_runs_within_its_deadline_keeps_waiting(monkeypatch):
    """The first wait starts before a thread begins the call, so it can expire while the call
    runs: the call is abandoned only once its own run passes the deadline."""
    gate = threading.Event()
    sched = FairScheduler(workers=1, spare=1)
    real_wait_for = asyncio.wait_for
    waits: list[float] = []

    async def expiring_wait_for(aw: Any, timeout: float) -> Any:
        waits.append(timeout)
        if len(waits) == 1:  # expire once the call is running (as after a long queue)
            await _until(lambda: all(c.run_started_at for c in sched._running_calls))
            aw.cancel()
            raise TimeoutError
        gate.set()
        return await real_wait_for(aw, timeout)

    monkeypatch.setattr(scheduler_module.asyncio, "wait_for", expiring_wait_for)

    async def main() -> None:
        out = await sched.run("s", _held, gate, "finished", timeout=60)
        assert out.value == "finished"
        assert sched.stats() == {"workers": 1, "running": 0, "waiting": 0, "abandoned": 0}
        sched.shutdown()

    _run(main())
    assert len(waits) == 2 and 0 < waits[1] <= 60


def test_a_call_cancelled_while_it_waits_never_runs():
    ran: list[str] = []

    async def main() -> None:
        sched = FairScheduler(workers=1)
        gate = threading.Event()
        holder = asyncio.create_task(sched.run("a", _held, gate, timeout=60))
        await _until(lambda: sched.running == 1)
        queued = asyncio.create_task(sched.run("b", ran.append, "b", timeout=60))
        await _until(lambda: sched.waiting == 1)
        queued.cancel()
        with pytest.raises(asyncio.CancelledError):
            await queued
        assert sched.waiting == 0
        gate.set()
        await holder
        after = await sched.run("c", ran.append, "c", timeout=60)
        assert after.value is None and ran == ["c"]
        assert sched.stats() == {"workers": 1, "running": 0, "waiting": 0, "abandoned": 0}
        sched.shutdown()

    _run(main())


def test_queue_time_runs_until_a_thread_begins_the_call_not_until_it_is_handed_over():
    """One pool thread, held by an abandoned call: the next call is handed to the pool at
    once but waits for that thread; its wait is queue time, and its own run is short."""

    async def main() -> None:
        sched = FairScheduler(workers=1, spare=0)
        gate = threading.Event()
        with pytest.raises(CallTimeout):
            await sched.run("stuck", _held, gate, timeout=0.05)
        asked = time.monotonic()
        queued = asyncio.create_task(sched.run("next", lambda: "ran", timeout=60))
        await _until(lambda: sched.running == 1)  # handed to the pool, thread still busy
        held_for = 0.3
        await asyncio.sleep(held_for)
        released = time.monotonic()
        gate.set()
        out = await queued
        total = time.monotonic() - asked
        assert out.value == "ran"
        assert out.queue_s >= released - asked >= held_for  # it could not begin before
        assert out.queue_s + out.run_s <= total
        assert out.run_s < out.queue_s
        sched.shutdown()

    _run(main())


def test_a_waiting_call_wakes_once_not_in_a_busy_loop(monkeypatch):
    """While a call runs within its deadline, its coroutine sleeps until the result (one wait),
    rather than polling the event loop."""
    waits = []
    real_wait_for = asyncio.wait_for

    async def counting_wait_for(aw: Any, timeout: float) -> Any:
        waits.append(timeout)
        return await real_wait_for(aw, timeout)

    monkeypatch.setattr(scheduler_module.asyncio, "wait_for", counting_wait_for)

    async def main() -> None:
        sched = FairScheduler(workers=1)
        out = await sched.run("s", time.sleep, 0.2, timeout=60)
        assert out.run_s >= 0.2
        sched.shutdown()

    _run(main())
    assert 1 <= len(waits) <= 3 and all(t > 1 for t in waits)


def test_thread_time_is_charged_halves_every_half_life_and_counts_running_calls():
    sched = FairScheduler(workers=2)
    sched._charge("a", 8.0, now=100.0)
    assert sched._used("a", 100.0) == pytest.approx(8.0)
    assert sched._used("a", 100.0 + HALF_LIFE_S) == pytest.approx(4.0)
    assert sched._used("a", 100.0 + 2 * HALF_LIFE_S) == pytest.approx(2.0)
    sched._charge("a", 1.0, now=100.0 + HALF_LIFE_S)  # decayed 8 -> 4, plus 1
    assert sched._usage["a"] == pytest.approx((5.0, 100.0 + HALF_LIFE_S))
    assert sched._used("b", 50.0) == 0.0

    class Running:
        key, started_at = "a", 108.0

    class Other:
        key, started_at = "b", 100.0

    sched._running_calls = {Running(), Other()}  # type: ignore[assignment]
    now = 100.0 + HALF_LIFE_S + 2.0  # 'a' used 5 at its last charge, and runs 2 s more...
    assert sched._used("a", now) == pytest.approx(5.0 * 0.5 ** (2.0 / HALF_LIFE_S) + 4.0)
    sched.shutdown()


def test_usage_of_many_sessions_is_forgotten_once_it_has_decayed():
    sched = FairScheduler(workers=2)  # room for 4 * 2 + 64 = 72 sessions' usage
    sched._charge("old", 1.0, now=0.0)
    sched._charge("kept", 1.0, now=200.0)
    sched._charge("edge", 1e-3, now=200.0)  # exactly the threshold: not above it
    sched._charge("small", 1.5e-3, now=200.0)
    for i in range(68):
        sched._charge(f"tiny{i}", 1e-4, now=200.0)
    assert len(sched._usage) == 72  # at the bound nothing is forgotten
    sched._charge("new", 1.0, now=200.0)  # past it: what decayed to nothing goes
    assert set(sched._usage) == {"kept", "small", "new"}
    sched.shutdown()


def test_a_call_after_shutdown_fails_and_leaves_the_counts_as_they_were():
    async def main() -> None:
        sched = FairScheduler(workers=1)
        sched.shutdown()
        with pytest.raises(RuntimeError):
            await sched.run("late", lambda: 1, timeout=5)
        assert sched.stats() == {"workers": 1, "running": 0, "waiting": 0, "abandoned": 0}

    _run(main())
