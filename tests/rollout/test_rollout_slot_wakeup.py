"""An episode waiting for an env slot starts when one comes back, not at the next poll.

The poll interval is set to an hour here: an episode that only polled would still be
waiting when the generous deadline of these tests runs out.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import gymnasium as gym
import pytest

import agentgym  # noqa: F401  (registers the envs)
from agentgym.agents.scripted import OraclePolicy
from agentgym.pools import EnvPool
from agentgym.rollout import PoolEnvSource, RolloutConfig, RolloutEngine, driver

SOKOBAN = "agentgym/Sokoban-Tiny-v0"


def collect_in_thread(engine: RolloutEngine, groups: int) -> dict[str, Any]:
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["collection"] = engine.collect_sync(groups)
        except BaseException as exc:  # reported below
            out["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(120)
    assert not worker.is_alive(), "an episode waited for the slot poll instead of a wake-up"
    assert "error" not in out, out.get("error")
    return out


class SlowRelease:
    """The pool's envs, each taken back only after 0.2 s (as a source that restarts a
    worker or closes a server session would): the next episode asks before it is back."""

    def __init__(self, inner: PoolEnvSource):
        self.inner = inner

    @property
    def capacity(self) -> int | None:
        return self.inner.capacity

    def acquire(self) -> Any:
        return self.inner.acquire()

    def release(self, slot: Any, *, healthy: bool) -> None:
        time.sleep(0.2)
        self.inner.release(slot, healthy=healthy)

    def close(self) -> None:
        self.inner.close()


@pytest.mark.parametrize("lockstep", [False, True])
def test_episodes_start_when_a_slot_comes_back_not_at_the_next_poll(
    lockstep: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(driver, "SLOT_POLL_S", 3600.0)
    config = RolloutConfig(group_size=2, max_in_flight=2, partial=False, lockstep=lockstep)
    with EnvPool([lambda: gym.make(SOKOBAN)] * 2) as pool:
        engine = RolloutEngine(SlowRelease(PoolEnvSource(pool)), OraclePolicy(), range(3), config)
        try:
            out = collect_in_thread(engine, 3)
        finally:
            engine.close()
    groups = out["collection"].groups
    assert sorted(g.seed for g in groups) == [0, 1, 2]
    assert all(ep.status == "done" and ep.success for g in groups for ep in g.members)
