"""The session manager's rules for resets that fail, builds that fail, and what counts
against capacity, driven directly on one event loop (no HTTP in between, so each rule is
checked exactly and fast; the HTTP and WebSocket tests cover the same paths end to end).

* A reset that raises (a mistyped task id) is the caller's mistake: a 400 naming the field,
  and the session holds no episode afterwards (a step is refused until a good reset), even
  when it had one before. A good reset starts at step 0.
* A step that raises is a server-side failure (500), logged with its traceback; the episode's
  step count is unchanged and the session goes on.
* A build that raises is a 500, one that runs past the deadline a 504; a build that finishes
  while the server stops is closed, not kept.
* Capacity counts open sessions, sessions being built, and calls that timed out and still
  run; a refusal says how many of each.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import gymnasium
import pytest

from agentgym.integrations.session import TextSession
from agentgym.server import ServerLimits, SessionError
from agentgym.server.sessions import SessionManager

from .conftest import ENV_ID, UP


def _run(coro: Any) -> Any:
    async def bounded() -> Any:
        async with asyncio.timeout(120):
            return await coro

    return asyncio.run(bounded())


async def _until(predicate: Any, what: str = "", timeout_s: float = 60.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not predicate():
            await asyncio.sleep(0.01)


class _Recorded(gymnasium.Wrapper):
    """Sokoban that blocks (so its calls run on the worker threads), records the thread
    that closed it, and raises on the step ``RAISE``."""

    def __init__(self, env: gymnasium.Env, closed_on: list[str]):
        super().__init__(env)
        self.metadata = {**env.metadata, "blocking": True}
        self.closed_on = closed_on

    def step(self, action: Any) -> Any:
        if action == "RAISE":
            raise RuntimeError("the simulator crashed")
        return self.env.step(action)

    def close(self) -> None:
        self.closed_on.append(threading.current_thread().name)
        super().close()


def _manager(max_sessions: int = 4, blocking: bool = True, **limits: Any) -> tuple:
    closed_on: list[str] = []
    if blocking:
        factory = lambda: TextSession(_Recorded(gymnasium.make(ENV_ID), closed_on))  # noqa: E731
    else:
        factory = lambda: TextSession(ENV_ID)  # noqa: E731
    return SessionManager(factory, ServerLimits(max_sessions=max_sessions, **limits)), closed_on


@pytest.mark.parametrize("blocking", [True, False], ids=["threads", "inline"])
def test_a_failed_reset_leaves_no_episode_and_a_good_one_starts_at_step_zero(blocking):
    manager, _ = _manager(blocking=blocking)

    async def main() -> None:
        manager.start()
        session = await manager.get_or_create("s")
        with pytest.raises(SessionError) as first:
            await manager.reset(session, None, {"task_id": "no-such-task"})
        assert (first.value.code, first.value.status, first.value.field) == (
            "VALIDATION_ERROR",
            400,
            "options",
        )
        assert "reset failed" in str(first.value) and "no-such-task" in str(first.value)
        assert session.started is False
        with pytest.raises(SessionError) as early:
            await manager.step(session, UP)
        assert (early.value.code, early.value.status) == ("SESSION_ERROR", 409)

        started = await manager.reset(session, 0, None)
        assert started.value.info["task_id"] and session.started is True
        assert session.step_count == 0
        turn = await manager.step(session, UP)
        assert turn.value.info["action_valid"] is True and session.step_count == 1
        await manager.step(session, UP)
        assert session.step_count == 2

        with pytest.raises(SessionError):  # a failed reset ends the episode in progress
            await manager.reset(session, None, {"task_id": "no-such-task"})
        assert session.started is False and manager.evictable() is session
        with pytest.raises(SessionError, match="call reset before step"):
            await manager.step(session, UP)
        again = await manager.reset(session, 1, None)
        assert session.step_count == 0 and again.value.info["task_id"]
        await manager.stop()

    _run(main())


def test_a_step_that_raises_is_a_500_with_its_traceback_logged_and_the_episode_goes_on(caplog):
    manager, _ = _manager()

    async def main() -> None:
        manager.start()
        session = await manager.get_or_create("s")
        await manager.reset(session, 0, None)
        await manager.step(session, UP)
        with (
            caplog.at_level(logging.ERROR, logger="agentgym.server"),
            pytest.raises(SessionError) as crashed,
        ):
            await manager.step(session, "RAISE")
        assert (crashed.value.code, crashed.value.status) == ("EXECUTION_ERROR", 500)
        assert "the simulator crashed" in str(crashed.value)
        assert session.step_count == 1  # the failed step was not counted
        (record,) = [r for r in caplog.records if "raised" in r.getMessage()]
        assert record.exc_info and record.exc_info[0] is RuntimeError  # with its traceback
        turn = await manager.step(session, UP)
        assert turn.value.info["action_valid"] is True and session.step_count == 2
        await manager.stop()

    _run(main())


def test_one_name_is_one_session_and_one_env_however_many_ask_at_once():
    manager, _ = _manager()

    async def main() -> None:
        manager.start()
        await manager.get_or_create("warm")  # the first build (it tells whether builds block)
        first, second = await asyncio.gather(  # the second waits for the first's build
            manager.get_or_create("same"), manager.get_or_create("same")
        )
        assert first is second and isinstance(first.text, TextSession)
        assert await manager.get_or_create("same") is first
        assert manager.envs_built == 2
        await manager.stop()

    _run(main())


@pytest.mark.parametrize("blocking", [True, False], ids=["threads", "inline"])
def test_close_says_whether_it_closed_and_closes_blocking_envs_on_a_worker(blocking):
    manager, closed_on = _manager(blocking=blocking)

    async def main() -> None:
        manager.start()
        session = await manager.get_or_create("s")
        assert session.inline is not blocking
        assert await manager.close("s") is True
        assert session.closed and await manager.close("s") is False
        assert await manager.close("never") is False
        assert manager.envs_closed == 1
        with pytest.raises(SessionError) as gone:
            await manager.reset(session, 0, None)
        assert (gone.value.code, gone.value.status) == ("SESSION_ERROR", 404)
        await manager.stop()

    _run(main())
    if blocking:
        assert len(closed_on) == 1 and closed_on[0].startswith("agentgym-env")


def test_failed_builds_are_500_and_builds_past_the_deadline_504():
    gate = threading.Event()
    calls = {"n": 0}

    def factory() -> TextSession:
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError("no browser left")
        gate.wait(60)  # the second build runs past its deadline
        return TextSession(gymnasium.make(ENV_ID))

    manager = SessionManager(factory, ServerLimits(max_sessions=4, step_timeout_s=0.2))

    async def main() -> None:
        manager.start()
        with pytest.raises(SessionError) as broken:
            await manager.get_or_create("a")
        assert (broken.value.code, broken.value.status) == ("FACTORY_ERROR", 500)
        assert "no browser left" in str(broken.value)
        with pytest.raises(SessionError) as late:
            await manager.get_or_create("b")
        assert (late.value.code, late.value.status) == ("FACTORY_ERROR", 504)
        assert manager.sessions == {} and manager.stats()["building"] == 0
        gate.set()
        await _until(lambda: manager.envs_closed == 1, "the late env was never closed")
        await manager.stop()

    _run(main())
    assert manager.envs_built == manager.envs_closed == 1


def test_an_env_built_while_the_server_stops_is_closed_not_kept():
    gate, building = threading.Event(), threading.Event()

    def factory() -> TextSession:
        building.set()
        gate.wait(60)
        return TextSession(gymnasium.make(ENV_ID))

    manager = SessionManager(factory, ServerLimits(max_sessions=4))

    async def main() -> None:
        manager.start()
        pending = asyncio.create_task(manager.get_or_create("late"))
        await asyncio.to_thread(building.wait, 60)
        await manager.stop()
        gate.set()
        with pytest.raises(SessionError) as refused:
            await pending
        assert (refused.value.code, refused.value.status) == ("SESSION_ERROR", 503)
        assert "shutting down" in str(refused.value)
        assert manager.sessions == {}

    _run(main())
    assert manager.envs_built == manager.envs_closed == 1


def test_sessions_being_built_count_against_capacity():
    gate = threading.Event()
    started = threading.Semaphore(0)
    built: list[str] = []

    def factory() -> TextSession:
        if built:  # the first build (which tells whether builds block) is quick
            started.release()
            gate.wait(60)
        built.append("env")
        return TextSession(_Recorded(gymnasium.make(ENV_ID), []))

    manager = SessionManager(factory, ServerLimits(max_sessions=3))

    async def main() -> None:
        manager.start()
        first = await manager.get_or_create("first")
        await manager.reset(first, 0, None)  # an episode in progress: never made room for
        builds = [asyncio.create_task(manager.get_or_create(n)) for n in ("a", "b")]
        for _ in builds:
            assert await asyncio.to_thread(started.acquire, True, 60)
        with pytest.raises(SessionError) as full:
            await manager.get_or_create("c")
        assert (full.value.code, full.value.status) == ("CAPACITY_REACHED", 503)
        assert "1 open, 2 being built" in str(full.value)
        gate.set()
        await asyncio.gather(*builds)
        assert manager.live == 3
        await manager.stop()

    _run(main())


def test_a_call_that_timed_out_counts_until_it_returns_and_is_named_in_the_refusal():
    manager, _ = _manager(max_sessions=1, step_timeout_s=0.2)
    gate = threading.Event()

    async def main() -> None:
        manager.start()
        session = await manager.get_or_create("stuck")
        await manager.reset(session, 0, None)
        inner = session.text.step

        def stuck(action: Any) -> Any:
            gate.wait(60)
            return inner(action)

        session.text.step = stuck  # type: ignore[method-assign]
        with pytest.raises(SessionError) as late:
            await manager.step(session, UP)
        assert (late.value.code, late.value.status) == ("EXECUTION_ERROR", 504)
        assert session.closed is True and "stuck" not in manager.sessions
        assert manager.live == 1  # the env still runs its step on a thread
        with pytest.raises(SessionError) as full:
            await manager.get_or_create("next")
        assert "1 still finishing a call that timed out" in str(full.value)
        gate.set()
        await _until(lambda: manager.live == 0, "the abandoned call never finished")
        assert manager.envs_closed == 1  # closed on its thread once the step returned
        fresh = await manager.get_or_create("next")
        await manager.reset(fresh, 0, None)
        await manager.stop()

    _run(main())


def test_close_while_a_call_times_out_closes_the_env_once():
    """The session's call runs past its deadline while ``close`` waits for it: the timeout
    dropped the session (its thread closes the env when the call returns), so ``close``
    reports it closed and does not close the env a second time."""
    manager, _ = _manager(step_timeout_s=0.2)
    gate = threading.Event()

    async def main() -> None:
        manager.start()
        session = await manager.get_or_create("s")
        await manager.reset(session, 0, None)
        inner = session.text.step

        def stuck(action: Any) -> Any:
            gate.wait(60)
            return inner(action)

        session.text.step = stuck  # type: ignore[method-assign]
        stepping = asyncio.create_task(manager.step(session, UP))
        await _until(lambda: session.lock.locked(), "the step never started")
        closing = asyncio.create_task(manager.close("s"))
        with pytest.raises(SessionError) as late:
            await stepping
        assert late.value.status == 504
        assert await closing is True
        gate.set()
        await _until(lambda: manager.envs_closed == 1, "the abandoned env was never closed")
        await manager.stop()

    _run(main())
    assert manager.envs_built == manager.envs_closed == 1
