"""One shared sandbox pool for the sandbox tests, and the leak check run after each case."""

from __future__ import annotations

import contextlib
import gc
import os
import time
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
    """Host processes running under any uid of the pool's slots (executions left over).

    Zombies are not counted: a killed session's children are reparented to the jail's init,
    which reaps them when the kernel gets to run it; a zombie holds nothing but its pid."""
    ranges = [(w.uid_base, w.uid_base + w.n_uids) for w in pool.workers]
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            uid = os.stat(f"/proc/{name}").st_uid
            with open(f"/proc/{name}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X") and any(lo <= uid < hi for lo, hi in ranges):
            found.append((int(name), uid))
    return found


def open_fds() -> dict[int, str]:
    """This process's open file descriptors and what each points to."""
    fds = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            fds[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # the directory's own fd, closed by the time it is read
            continue
    return fds


def host_state(pool: SandboxPool) -> dict[str, object]:
    """What must not change across a hostile run: mounts, cgroups, /tmp, processes.

    Open fds are compared apart (``no_leaks``): a case may not add one, but garbage
    collection of earlier tests' objects may close some while it runs.
    """
    with open("/proc/self/mounts") as fh:
        mounts = fh.read()
    return {
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
    with leak_free(pool):
        yield


@contextlib.contextmanager
def leak_free(pool: SandboxPool) -> Iterator[None]:
    """The check of ``no_leaks`` for any pool (modules with a pool of their own use it)."""
    for w in pool.workers:  # make sure all workers are up before the baseline
        w.call({"op": "ping"}, 10.0)
    gc.collect()  # close what earlier tests left for the collector before the baseline
    before, fds_before = host_state(pool), open_fds()
    yield
    for w in pool.workers:
        info = w.call({"op": "ping"}, 10.0)
        deadline = time.monotonic() + 60.0  # killed processes of a closed session may take
        while (info.get("reaping") or info.get("removing")) and time.monotonic() < deadline:
            time.sleep(0.02)  # (a ping waits itself while a uid is being released)
            info = w.call({"op": "ping"}, 10.0)  # a while to be scheduled, files to go
        assert info["status"] == "ok"
        assert not info.get("reaping"), "a closed session's processes never went away"
        assert info["workdirs"] == info["lineages"], "a run's work dir was left behind"
        assert info["trash"] == 0 and info["removing"] == 0, "a removed dir was left behind"
        assert info["cgroups"] == info["lineages"] * len(w.cgroup.paths if w.cgroup else [])
        r = w.call({"op": "exec", "code": "print('alive')", "timeout": 10.0}, 10.0)
        assert r["status"] == "ok" and r["stdout"] == "alive\n", r
    deadline = time.monotonic() + 30.0  # (a SIGKILLed process ends when it next runs)
    while _uids_in_use(pool) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _uids_in_use(pool) == [], "processes of a sandbox uid survived the run"
    assert host_state(pool) == before
    deadline = time.monotonic() + 2.0  # a pipe may still be closing in another thread
    while True:
        gc.collect()
        opened = {fd: t for fd, t in open_fds().items() if fds_before.get(fd) != t}
        if not opened or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert opened == {}, f"the case left file descriptors open in the host process: {opened}"


@pytest.fixture(scope="module")
def one() -> Iterator[SandboxPool]:
    """A pool of one worker for one test module: every session of its cases shares the
    worker (attacker and victim, spy and secret), and it is closed with the module."""
    try:
        p = SandboxPool(workers=1)
    except SandboxUnavailableError as exc:  # pragma: no cover - only off CI hosts
        pytest.skip(f"the sandbox cannot isolate code here: {exc}")
    yield p
    p.close()


@pytest.fixture()
def one_leak_free(one: SandboxPool) -> Iterator[None]:
    """The leak check of ``no_leaks``, on the module's own one-worker pool."""
    with leak_free(one):
        yield


def host_pid(pool: SandboxPool, jail_pid: int) -> int:
    """The host pid of the worker's process ``jail_pid`` (a pid inside the jail)."""
    cg = pool.workers[0].cgroup
    assert cg is not None
    for pid in cg.pids():
        try:
            with open(f"/proc/{pid}/status") as fh:
                ns = next(line.split()[1:] for line in fh if line.startswith("NSpid:"))
        except (OSError, StopIteration):
            continue
        if ns and int(ns[-1]) == jail_pid:
            return pid
    raise AssertionError(f"no process {jail_pid} in the jail")
