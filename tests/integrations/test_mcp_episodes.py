"""The MCP server's episode rules, driven in process by the SDK's own client (issue 38).

What a tool call may do depends on where the session's episode is: no call before a
``reset``, none after the episode ended or after a reset that failed, a fresh start after a
good reset; what the result reports (reward, flags, success only once the env says so); and
what a failure costs (a bad ``reset`` argument, an env that cannot be built, an env that
breaks mid-step). ``mcp.Client(server, mode="legacy")`` runs the real SDK client against the
real server object, with no transport in between, so each test takes a fraction of a second.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

mcp = pytest.importorskip("mcp")

import agentgym.integrations.mcp as mcp_server  # noqa: E402
from agentgym.integrations.mcp import META_KEY, build_server  # noqa: E402
from agentgym.integrations.session import TextSession  # noqa: E402

SOKOBAN = "agentgym/Sokoban-Tiny-v0"


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def _run(server: Any, play: Any) -> None:
    async def main() -> None:
        async with asyncio.timeout(120), mcp.Client(server, mode="legacy") as client:
            await play(client)

    asyncio.run(main())


def _oracle_play(seed: int) -> list[tuple[str, float]]:
    """(direction, reward) of each move the oracle plays for Sokoban-Tiny ``seed``."""
    import json
    import re

    mirror = TextSession(SOKOBAN)
    mirror.reset(seed=seed)
    moves = []
    while not mirror.done:
        action = mirror.env.unwrapped.oracle_action()
        body = re.fullmatch(r"<tool_call>(.*)</tool_call>", action, re.S)
        assert body, action
        reward = mirror.step(action).reward
        moves.append((json.loads(body.group(1))["arguments"]["direction"], reward))
    mirror.close()
    return moves


def _oracle(seed: int) -> list[str]:
    return [direction for direction, _ in _oracle_play(seed)]


@pytest.fixture(scope="module")
def server() -> Any:
    return build_server(SOKOBAN)


def test_calls_before_a_reset_and_after_the_end_are_refused_and_success_is_reported(server):
    async def play(client: Any) -> None:
        early = await client.call_tool("move", {"direction": "up"})
        assert early.is_error and "No episode is running" in _text(early)
        assert early.meta is None  # nothing was stepped
        opened = await client.call_tool("reset", {"seed": 0})
        assert opened.is_error is False and opened.meta[META_KEY]["task_id"]
        played = _oracle_play(0)
        moves = [direction for direction, _ in played]
        for i, (direction, reward) in enumerate(played):
            moved = await client.call_tool("move", {"direction": direction})
            meta = moved.meta[META_KEY]
            assert moved.is_error is False and meta["action_valid"] is True
            last = i == len(moves) - 1
            assert meta["terminated"] is last and meta["truncated"] is False
            assert meta["success"] is (True if last else None)  # only once the env says so
            assert meta["reward"] == pytest.approx(reward)
            assert meta["reward_components"]["format"] == 0.0
        ended = await client.call_tool("move", {"direction": "up"})
        assert ended.is_error and "episode has ended" in _text(ended)
        again = await client.call_tool("reset", {"seed": 0})  # a new episode, same task
        assert again.meta[META_KEY]["task_id"] == opened.meta[META_KEY]["task_id"]
        moved = await client.call_tool("move", {"direction": moves[0]})
        assert moved.is_error is False and moved.meta[META_KEY]["terminated"] is (len(moves) == 1)

    _run(server, play)


def test_an_episode_that_ends_unsolved_reports_success_false():
    server = build_server(SOKOBAN, env_kwargs={"max_turns": 1})

    async def play(client: Any) -> None:
        await client.call_tool("reset", {"seed": 0})
        wrong = next(d for d in ("up", "down", "left", "right") if d != _oracle(0)[0])
        moved = await client.call_tool("move", {"direction": wrong})
        meta = moved.meta[META_KEY]
        assert meta["truncated"] is True and meta["terminated"] is False
        assert meta["success"] is False

    _run(server, play)


def test_an_invalid_call_is_an_error_result_that_costs_the_format_penalty(server):
    async def play(client: Any) -> None:
        await client.call_tool("reset", {"seed": 0})
        bad = await client.call_tool("move", {"direction": "sideways"})
        meta = bad.meta[META_KEY]
        assert bad.is_error is True and meta["action_valid"] is False
        assert meta["reward_components"]["format"] == -1.0
        assert meta["success"] is None and meta["terminated"] is False

    _run(server, play)


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"seed": 0, "task": "x"}, "unknown argument(s) ['task']"),
        ({"seed": -1}, "'seed' must be a non-negative integer, got -1"),
        ({"seed": True}, "'seed' must be a non-negative integer, got True"),
        ({"seed": "zero"}, "'seed' must be a non-negative integer, got 'zero'"),
        ({"task_id": 7}, "'task_id' must be a string, got 7"),
    ],
)
def test_bad_reset_arguments_are_refused_before_the_env_sees_them(server, arguments, says):
    async def play(client: Any) -> None:
        refused = await client.call_tool("reset", arguments)
        assert refused.is_error and says in _text(refused)
        after = await client.call_tool("move", {"direction": "up"})
        assert after.is_error and "No episode is running" in _text(after)

    _run(server, play)


def test_seed_zero_and_an_empty_task_id_are_accepted(server):
    async def play(client: Any) -> None:
        by_seed = await client.call_tool("reset", {"seed": 0})
        empty_task = await client.call_tool("reset", {"seed": 0, "task_id": ""})
        assert not by_seed.is_error and not empty_task.is_error
        assert empty_task.meta[META_KEY]["task_id"] == by_seed.meta[META_KEY]["task_id"]
        named = await client.call_tool("reset", {"task_id": by_seed.meta[META_KEY]["task_id"]})
        assert named.meta[META_KEY]["task_id"] == by_seed.meta[META_KEY]["task_id"]

    _run(server, play)


def test_a_failed_reset_ends_the_running_episode(server):
    async def play(client: Any) -> None:
        await client.call_tool("reset", {"seed": 0})
        bad = await client.call_tool("reset", {"task_id": "no-such-task"})
        assert bad.is_error and "reset failed" in _text(bad) and "no-such-task" in _text(bad)
        after = await client.call_tool("move", {"direction": "up"})
        assert after.is_error and "No episode is running" in _text(after)

    _run(server, play)


def test_an_env_that_cannot_be_built_is_a_reset_error_and_frees_its_claim(monkeypatch):
    server = build_server(SOKOBAN)
    handlers = mcp_server._HANDLERS[server]
    handlers.max_envs = 1

    class Broken:
        def __init__(self, *args: Any, **kwargs: Any):
            raise RuntimeError("no sandbox left")

    async def play(client: Any) -> None:
        with monkeypatch.context() as patch:
            patch.setattr(mcp_server, "TextSession", Broken)
            refused = await client.call_tool("reset", {"seed": 0})
        assert refused.is_error and "could not be built (no sandbox left)" in _text(refused)
        assert handlers.live_envs == 0  # the claim was given back: the one slot is free
        opened = await client.call_tool("reset", {"seed": 0})
        assert opened.is_error is False and handlers.live_envs == 1

    _run(server, play)
    assert handlers.live_envs == 0  # the session ended: its env was closed and released


def test_envs_past_the_limit_are_refused_until_one_session_ends():
    server = build_server(SOKOBAN)
    handlers = mcp_server._HANDLERS[server]
    handlers.max_envs = 1

    async def main() -> None:
        async with asyncio.timeout(120), mcp.Client(server, mode="legacy") as first:
            assert not (await first.call_tool("reset", {"seed": 0})).is_error
            assert not (await first.call_tool("reset", {"seed": 1})).is_error  # same env
            async with mcp.Client(server, mode="legacy") as second:
                full = await second.call_tool("reset", {"seed": 0})
                assert full.is_error and "maximum of 1 envs" in _text(full)
                assert (await second.list_tools()).tools  # the session itself works
        async with asyncio.timeout(120), mcp.Client(server, mode="legacy") as third:
            assert not (await third.call_tool("reset", {"seed": 0})).is_error

    asyncio.run(main())
    assert handlers.live_envs == 0


def test_an_env_that_breaks_mid_step_needs_a_new_reset(server, monkeypatch):
    async def play(client: Any) -> None:
        await client.call_tool("reset", {"seed": 0})
        with monkeypatch.context() as patch:

            def broken(self: Any, turn: Any) -> Any:
                raise OSError("the simulator died")

            patch.setattr(TextSession, "step", broken)
            failed = await client.call_tool("move", {"direction": "up"})
        assert failed.is_error and "the simulator died" in _text(failed)
        after = await client.call_tool("move", {"direction": "up"})
        assert after.is_error and "No episode is running" in _text(after)
        assert not (await client.call_tool("reset", {"seed": 0})).is_error
        moved = await client.call_tool("move", {"direction": "up"})
        assert moved.is_error is False

    _run(server, play)
