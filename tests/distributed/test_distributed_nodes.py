"""The Ray pool across two Ray nodes on this machine: placement, and a node killed mid-run.

Issue 22: the pool had only ever run on one local Ray node. Here a second node joins the
session's cluster (``ray.cluster_utils.Cluster``); actors are placed by resources and
spread over both nodes, and the second node is killed (its raylet and every worker on it,
SIGKILL) in the middle of the episodes. Its envs come back truncated with
``info["env_error"]``, the envs on the head node go on with their episodes untouched, and
capacity comes back: the lost actors are restarted by Ray (or replaced by the pool) on the
surviving node. The session cluster declares a silent node dead after about 5 s (see
``conftest.FAST_HEALTH_CHECKS``).
"""

from __future__ import annotations

import time

import gymnasium as gym
import pytest
import ray

from agentgym.error import InvalidConfigError
from agentgym.parsing import render_tool_call
from agentgym.pools import RayEnvPool
from tests.distributed.ray_test_envs import kill_node

pytestmark = [pytest.mark.ray, pytest.mark.slow]

ENV_ID = "agentgym/Sokoban-Tiny-v0"
MOVES = [render_tool_call("move", {"direction": d}) for d in ("up", "left", "down", "right")]
ENV = {"agentgym_test_env": 1}  # offered by every node of the session cluster


def _second_node(cluster):
    """Add a Ray node (1 CPU) to the session cluster, wait until it is up, and yield it."""
    if cluster is None:
        pytest.skip("Ray was started outside this test session; cannot add nodes to it")
    node = cluster.add_node(
        num_cpus=1, resources={"agentgym_test_env": 8, "agentgym_test_node_b": 4}
    )
    cluster.wait_for_nodes()
    # the node is up before the scheduler sees its resources; "spread" places only on nodes
    # it sees, so wait until the cluster offers node B's resource (this node's 4 alone: a
    # node removed just before may linger in the totals for a few seconds)
    deadline = time.monotonic() + 60.0
    while not (
        ray.cluster_resources().get("agentgym_test_node_b", 0)
        == ray.available_resources().get("agentgym_test_node_b", 0)
        == 4
    ):
        assert time.monotonic() < deadline, "node B's resources never showed in the cluster"
        time.sleep(0.1)
    yield node
    if node in cluster.worker_nodes:  # not killed by the test
        cluster.remove_node(node)


@pytest.fixture(scope="module")
def node_b(ray_cluster):
    """A second node shared by the placement tests."""
    yield from _second_node(ray_cluster)


@pytest.fixture
def doomed_node(ray_cluster, node_b):
    """A second node of its own for a test that kills it (the shared one is removed first)."""
    if node_b in ray_cluster.worker_nodes:
        ray_cluster.remove_node(node_b)
    yield from _second_node(ray_cluster)


def _head(ray_cluster) -> str:
    return ray_cluster.head_node.node_id


def _local_keys(seed: int, rounds: list[dict[int, str]], i: int) -> list[str]:
    """State keys of env ``i`` stepped in this process by the same actions (the reference)."""
    env = gym.make(ENV_ID)
    try:
        env.reset(seed=seed)
        return [env.step(r[i])[4]["state_key"] for r in rounds]
    finally:
        env.close()


def test_spread_puts_actors_on_both_nodes(ray_cluster, node_b):
    with RayEnvPool.from_id(
        ENV_ID, 4, num_cpus=0.25, resources=ENV, placement="spread", timeout_s=60
    ) as pool:
        nodes = pool.actor_nodes()
        assert set(nodes) == {_head(ray_cluster), node_b.node_id}, nodes
        pool.reset(seeds=[0, 1, 2, 3])
        res = pool.step({i: MOVES[i] for i in range(4)})
        assert all(r.info["action_valid"] and "env_error" not in r.info for r in res.values())


def test_resources_place_actors_on_the_nodes_that_offer_them(ray_cluster, node_b):
    with RayEnvPool.from_id(
        ENV_ID, 3, num_cpus=0.1, resources={"agentgym_test_node_b": 1}, timeout_s=60
    ) as pool:
        assert pool.actor_nodes() == [node_b.node_id] * 3
    with RayEnvPool.from_id(
        ENV_ID, 2, num_cpus=0.1, resources={"agentgym_test_slot": 1}, timeout_s=60
    ) as pool:
        assert pool.actor_nodes() == [_head(ray_cluster)] * 2


def test_placement_is_checked():
    with pytest.raises(InvalidConfigError, match="placement must be one of"):
        RayEnvPool.from_id(ENV_ID, 1, placement="everywhere")
    with pytest.raises(InvalidConfigError, match="pass only one"):
        RayEnvPool.from_id(
            ENV_ID, 1, placement="spread", actor_options={"scheduling_strategy": "DEFAULT"}
        )


@pytest.mark.parametrize("max_restarts", [-1, 0], ids=["ray-restarts", "pool-replaces"])
def test_node_killed_mid_run(ray_cluster, doomed_node, max_restarts):
    """Kill node B mid-episode: its envs fail, the head's go on, capacity comes back.

    ``max_restarts=-1``: Ray restarts the lost actors elsewhere; ``0``: Ray declares them
    dead and the pool replaces them. Either way they end up on the surviving head node.
    """
    seeds = [11, 12, 13, 14]
    rounds = [{i: MOVES[(r + i) % 4] for i in range(4)} for r in range(3)]
    with RayEnvPool.from_id(
        ENV_ID,
        4,
        num_cpus=0.25,
        resources=ENV,
        placement="spread",
        max_restarts=max_restarts,
        replace_backoff_s=0.1,
        timeout_s=60,
        start_timeout_s=120,
    ) as pool:
        head = _head(ray_cluster)
        nodes = pool.actor_nodes()
        on_b = sorted(i for i, n in enumerate(nodes) if n == doomed_node.node_id)
        on_head = sorted(set(range(4)) - set(on_b))
        assert on_b and on_head, nodes
        pool.reset(seeds=seeds)
        keys: dict[int, list[str]] = {i: [] for i in range(4)}
        for i, r in pool.step(rounds[0]).items():
            keys[i].append(r.info["state_key"])

        kill_node(ray_cluster, doomed_node)  # mid-episode: every env has taken one step
        res = pool.step(rounds[1])
        for i in on_b:
            assert res[i].truncated and not res[i].info["success"], res[i].info
            assert "env_error" in res[i].info
        for i in on_head:  # the step went through
            assert "env_error" not in res[i].info and res[i].info["action_valid"]
            keys[i].append(res[i].info["state_key"])

        # capacity comes back: the lost envs take new episodes, on the surviving node
        pool.reset(on_b, seeds=[seeds[i] for i in on_b])
        assert pool.actor_nodes() == [head] * 4
        assert sum(pool.replacements) == (len(on_b) if max_restarts == 0 else 0)
        res = pool.step(rounds[2])
        assert not any("env_error" in r.info for r in res.values())
        for i in on_head:  # the survivors' episodes went on as if nothing had happened
            keys[i].append(res[i].info["state_key"])
            assert keys[i] == _local_keys(seeds[i], rounds, i)
        for i in on_b:  # the new episodes are the same as on a fresh env
            assert res[i].info["state_key"] == _local_keys(seeds[i], rounds[2:], i)[0]
