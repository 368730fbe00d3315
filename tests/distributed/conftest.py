"""One Ray per test session (starting Ray costs seconds), shut down at the end.

It is the head node of a ``ray.cluster_utils.Cluster``, so the multi-node tests can add
worker nodes on this machine and kill them; the other tests see an ordinary local Ray.
"""

from __future__ import annotations

import pytest

#: Resources of the head node. ``agentgym_test_slot`` exists only there;
#: ``agentgym_test_env`` is offered by every node, as an env resource on a real cluster is.
HEAD_RESOURCES = {"agentgym_test_slot": 2, "agentgym_test_env": 8}

#: Ray's health checks decide when a silent node is dead (default: 5 failed checks 3 s
#: apart, 15 s or more). Here 5 checks 1 s apart: a killed node is declared dead after
#: about 5 s, while a raylet slowed by a loaded machine still has 5 s to answer each check.
FAST_HEALTH_CHECKS = {
    "health_check_period_ms": 1000,
    "health_check_timeout_ms": 5000,
    "health_check_failure_threshold": 5,
}


@pytest.fixture(scope="session")
def ray_cluster():
    """The session's Ray cluster (None if Ray was already running in this process)."""
    ray = pytest.importorskip("ray")
    if ray.is_initialized():  # someone else's Ray: use it as is, without extra nodes
        yield None
        return
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        connect=True,
        head_node_args={
            "num_cpus": 2,
            "resources": HEAD_RESOURCES,
            "include_dashboard": False,
            "_system_config": FAST_HEALTH_CHECKS,
        },
    )
    yield cluster
    ray.shutdown()
    cluster.shutdown()


@pytest.fixture(scope="session")
def ray_session(ray_cluster):
    import ray

    return ray
