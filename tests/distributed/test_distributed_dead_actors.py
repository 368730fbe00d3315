"""Which lost actors the Ray pool waits for in Ray's actor table, and for how long.

Issue 22: a node that dies takes all its actors with it, and Ray's actor table calls them
ALIVE until its health checks give up on the node (15 s or more by default). The pool used
to poll the table for up to 10 s per lost actor, one actor after the other, inside the
``step`` that met them: 4 actors on a dead node held every env's step (and each reset
round) for up to 40 s. Now only actors that Ray said *died* are waited for, all together
against one deadline; actors that were only "temporarily unavailable" (restarting, or on a
node that stopped answering) are read once and looked at again by a later call. The actor
table is a stand-in here (no Ray cluster), so the rule is checked by counting reads.
"""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import pytest

from agentgym.pools import RayEnvPool

ray = pytest.importorskip("ray")


class _Table:
    """Ray's actor table for a few actors: each id reads as its scripted states in turn,
    the last one for ever after."""

    def __init__(self, script: dict[str, list[str]]):
        self.script = script
        self.reads: Counter[str] = Counter()

    def actors(self, actor_id: str) -> dict[str, str]:
        states = self.script[actor_id]
        state = states[min(self.reads[actor_id], len(states) - 1)]
        self.reads[actor_id] += 1
        return {"State": state}


def _pool(n: int) -> RayEnvPool:
    """A pool object with ``n`` stand-in actors whose ids are "a0", "a1", ..."""
    pool = RayEnvPool.__new__(RayEnvPool)
    pool.actors = [SimpleNamespace(_actor_id=bytes.fromhex(f"a{i}")) for i in range(n)]
    return pool


@pytest.fixture
def table(monkeypatch):
    def install(script: dict[str, list[str]]) -> _Table:
        stand_in = _Table(script)
        monkeypatch.setattr("ray._private.state.actors", stand_in.actors)
        return stand_in

    return install


def test_unavailable_actors_are_read_once_not_waited_for(table):
    t = table({"a0": ["ALIVE"], "a1": ["ALIVE"]})  # a dead node Ray has not noticed yet
    assert _pool(2)._dead_for_good({0, 1}, died=set(), wait_s=30.0) == set()
    assert t.reads == {"a0": 1, "a1": 1}


def test_died_actors_are_waited_for_until_the_table_knows(table):
    t = table({"a0": ["ALIVE", "ALIVE", "ALIVE", "DEAD"], "a1": ["ALIVE", "RESTARTING"]})
    assert _pool(2)._dead_for_good({0, 1}, died={0, 1}, wait_s=30.0) == {0}
    assert t.reads == {"a0": 4, "a1": 2}  # each read until it stopped saying ALIVE


def test_unavailable_actor_already_dead_in_the_table_is_replaced(table):
    table({"a0": ["DEAD"], "a1": ["RESTARTING"], "a2": ["ALIVE"]})
    assert _pool(3)._dead_for_good({0, 1, 2}, died=set()) == {0}


def test_died_actors_share_one_deadline(table):
    """Two actors the table keeps calling ALIVE: both are read in every round, so the
    pool gives up on both after one ``wait_s``, not one ``wait_s`` each."""
    t = table({"a0": ["ALIVE"], "a1": ["ALIVE"]})
    assert _pool(2)._dead_for_good({0, 1}, died={0, 1}, wait_s=0.3) == set()
    assert t.reads["a0"] > 1 and abs(t.reads["a0"] - t.reads["a1"]) <= 1
