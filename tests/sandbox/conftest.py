"""One shared sandbox pool for the sandbox tests, and the leak check run after each case."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from agentgym.simulators.sandbox import SandboxPool, SandboxUnavailableError, default_pool
from agentgym.simulators.sandbox.cgroups import live_cgroups


@pytest.fixture(scope="session")
def pool() -> Iterator[SandboxPool]:
    try:
        p = default_pool()
    except SandboxUnavailableError as exc:  # pragma: no cover - only off CI hosts
        pytest.skip(f"the sandbox cannot isolate code here: {exc}")
    yield p


def _uids_in_use(pool: SandboxPool) -> list[tuple[int, int]]:
    """Host processes running under any uid of the pool's slots (executions left over)."""
    ranges = [(w.uid_base, w.uid_base + w.n_uids) for w in pool.workers]
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            uid = os.stat(f"/proc/{name}").st_uid
        except OSError:
            continue
        if any(lo <= uid < hi for lo, hi in ranges):
            found.append((int(name), uid))
    return found


def host_state(pool: SandboxPool) -> dict[str, object]:
    """What must not change across a hostile run: fds, mounts, cgroups, /tmp, processes."""
    with open("/proc/self/mounts") as fh:
        mounts = fh.read()
    return {
        "fds": len(os.listdir("/proc/self/fd")),
        "mounts": mounts,
        "cgroups": live_cgroups(os.getpid()),
        "tmp": sorted(
            n for n in os.listdir("/tmp") if n.startswith(f"agentgym-sbx-{os.getpid()}-")
        ),
        "worker_pids": [len(w.cgroup.pids()) if w.cgroup else 0 for w in pool.workers],
        "worker_generations": [w.generation for w in pool.workers],
    }


@pytest.fixture()
def no_leaks(pool: SandboxPool) -> Iterator[None]:
    """Assert a case left nothing behind and that every worker still serves."""
    for w in pool.workers:  # make sure all workers are up before the baseline
        w.call({"op": "ping"}, 10.0)
    before = host_state(pool)
    yield
    for w in pool.workers:
        info = w.call({"op": "ping"}, 10.0)
        assert info["status"] == "ok"
        assert info["workdirs"] == info["lineages"], "a run's work dir was left behind"
        assert info["cgroups"] == info["lineages"] * len(w.cgroup.paths if w.cgroup else [])
        r = w.call({"op": "exec", "code": "print('alive')", "timeout": 10.0}, 10.0)
        assert r["status"] == "ok" and r["stdout"] == "alive\n"
    assert _uids_in_use(pool) == [], "processes of a sandbox uid survived the run"
    after = host_state(pool)
    assert after == before
