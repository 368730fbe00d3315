"""One group held at its second turn while the test breaks the env side, then let go.

Shared by the engine's failure tests over ``agentgym serve`` (tests/rollout) and over a
Ray pool (tests/distributed): :class:`HoldOneTask` is the scripted model that holds the
episodes of one task, and :func:`collect_with_held_group` runs a collection, waits until
that group is held (and any other condition the test needs), awaits the test's
``interrupt`` (restart the server, kill an actor), then lets the group go on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from agentgym.agents.base import Generation, PolicyInput
from agentgym.rollout import RolloutEngine
from agentgym.rollout.loop import run_bounded
from agentgym.rollout.records import Collection
from tests.fake_llm_server import ScriptedChatPolicy


class HoldOneTask:
    """The scripted model; episodes whose first observation is ``held`` wait at their
    second turn until ``gate`` opens (``all_waiting`` is set once the whole group of
    ``group_size`` waits)."""

    def __init__(self, held: str, group_size: int):
        self.held, self.gate, self.inner = held, asyncio.Event(), ScriptedChatPolicy()
        self.all_waiting, self._waiting, self._group = asyncio.Event(), 0, group_size

    async def act(self, item: PolicyInput) -> Generation:
        first = next(m["content"] for m in item.messages if m["role"] == "user")
        if first == self.held and len(item.messages) > 2 and not self.gate.is_set():
            self._waiting += 1
            if self._waiting == self._group:
                self.all_waiting.set()
            await self.gate.wait()
        return self.inner.act([item])[0]


def collect_with_held_group(
    engine: RolloutEngine,
    groups: int,
    policy: HoldOneTask,
    interrupt: Callable[[], Awaitable[None]],
    *,
    also_wait_for: Sequence[asyncio.Event] = (),
) -> Collection:
    """``engine.collect(groups)`` on a new event loop, with ``interrupt()`` awaited once
    ``policy``'s group is held and every event of ``also_wait_for`` is set; the group is
    let go after it."""

    async def run() -> Collection:
        collecting = asyncio.create_task(engine.collect(groups))
        for event in also_wait_for:
            await event.wait()
        await policy.all_waiting.wait()
        await interrupt()
        policy.gate.set()
        return await collecting

    return run_bounded(run())
