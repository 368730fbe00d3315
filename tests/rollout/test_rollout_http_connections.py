"""The async HTTP policy's connection limit over its client shards (issue 25).

``AsyncHTTPPolicy(max_connections=N)`` spreads its N connections over several small
``httpx`` pools (one pool of hundreds costs more CPU per request than the request). Pinned
here against the fake server: all N connections are used at once (no request waits behind
a full pool while another pool has a free connection), and no more than N are ever opened.
"""

from __future__ import annotations

import asyncio
import threading

from agentgym.agents.base import PolicyInput
from agentgym.agents.http import CONNECTIONS_PER_CLIENT
from agentgym.rollout import AsyncHTTPPolicy
from tests.fake_llm_server import FakeLLMServer

LIMIT = 2 * CONNECTIONS_PER_CLIENT + 4  # three pools of unequal size


def test_every_connection_is_used_at_once_and_never_more() -> None:
    all_in = threading.Event()

    with FakeLLMServer() as server:

        def hold_until_all_connections_are_busy() -> float:
            """Each request waits (at most 30 s) until LIMIT requests are in the server."""
            if server.in_flight >= LIMIT:
                all_in.set()
            assert all_in.wait(30), f"only {server.in_flight} of {LIMIT} requests got in"
            return 0.0

        server.latency = hold_until_all_connections_are_busy
        policy = AsyncHTTPPolicy(server.url, "fake", max_connections=LIMIT, tool_messages="text")
        items = [
            PolicyInput(messages=[{"role": "user", "content": f"task {i}"}])
            for i in range(LIMIT + 10)
        ]

        async def ask_all() -> list[str]:
            try:
                return [g.text for g in await asyncio.gather(*map(policy.act, items))]
            finally:
                await policy.aclose()

        texts = asyncio.run(ask_all())
    assert all_in.is_set() and len(texts) == LIMIT + 10
    assert server.answered == LIMIT + 10 and server.errors_500 == server.dropped == 0
    assert server.max_in_flight == LIMIT and server.connections == LIMIT
