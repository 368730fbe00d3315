"""Load on loopback (issue 15): 64 concurrent WebSocket clients x 50 steps over four envs, four
of them deliberately slow (two CodeMath clients whose cells only sleep, two Sokoban clients
whose steps block in the env). Asserted: 0 errors, every step answered, every env closed.
Latency figures live in benchmarks/bench_server.py, not here."""

from __future__ import annotations

import asyncio
import contextlib

import gymnasium
import pytest

from agentgym.integrations.session import TextSession
from agentgym.server import ServerThread, create_app
from benchmarks.serve_clients import ClientPlan, run_clients, sleeping_cell

from .conftest import Counts, Gated

ENVS = (
    "agentgym/Sokoban-Tiny-v0",
    "agentgym/CodeMath-L1-v0",
    "agentgym/WebShopText-v0",
    "agentgym/UserTwentyQuestions-v0",
)
CLIENTS, STEPS = 64, 50


@pytest.mark.slow
@pytest.mark.sandbox
def test_64_websocket_clients_with_4_slow_ones_get_no_errors_and_every_env_is_closed():
    counts = Counts()

    def factory_for(env_id):
        def factory():
            with counts.lock:
                counts.built += 1
            return TextSession(Gated(gymnasium.make(env_id), counts))

        return factory

    with contextlib.ExitStack() as stack:
        urls = [
            stack.enter_context(ServerThread(create_app(e, session_factory=factory_for(e)))).url
            for e in ENVS
        ]
        plans = []
        for i in range(CLIENTS):
            env = i % len(ENVS)
            slow = None
            if i in (1, 5):  # CodeMath: cells that only sleep
                slow = sleeping_cell(0.2)
            elif i in (0, 4):  # Sokoban: a step that blocks inside the env
                slow = "SLEEP 0.2"
            plans.append(ClientPlan(urls[env], steps=STEPS, seed=i, slow_action=slow))
        stats = asyncio.run(run_clients(plans))
    counts.gate.set()
    errors = [(s.plan.url, e) for s in stats for e in s.errors]
    assert not errors, f"{len(errors)} errors, e.g. {errors[:3]}"
    assert [len(s.step_s) for s in stats] == [STEPS] * CLIENTS
    assert counts.built == CLIENTS  # one env per connection, none rebuilt
    counts.wait_closed(timeout_s=60)
    assert counts.closed_mid_step == 0
