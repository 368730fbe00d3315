"""One local Ray per test session (starting Ray costs seconds), shut down at the end."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def ray_session():
    ray = pytest.importorskip("ray")
    from agentgym.distributed import ensure_ray

    started_here = not ray.is_initialized()
    ensure_ray(num_cpus=2, resources={"agentgym_test_slot": 2})
    yield ray
    if started_here:
        ray.shutdown()
