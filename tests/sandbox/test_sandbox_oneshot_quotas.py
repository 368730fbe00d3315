"""Every run is a session for the kernel: one-shot runs get quotas of their own (issue 38).

``pool.run`` (what CodeTests' ``run_tests`` and ``submit`` use) used to run in the worker's
own cgroups: one run kept 1,023 MB of files against a 256 MB disk limit, filling the worker
got a neighbour session OOM-killed, and 30 spinning children outweighed a neighbour's cell.
Each run now has a memory (+ files), pids and cpu cgroup like a session's.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator

import pytest
from agentgym.simulators.sandbox import Limits, SandboxConfig, SandboxPool, SandboxUnavailableError

from tests.sandbox.conftest import leak_free

pytestmark = [pytest.mark.sandbox]

WORKER_MEMORY = 1 << 30
_WRITE = (
    "n = 0\ntry:\n"
    "    for i in range(COUNT):\n"
    "        with open(f'f{i}', 'wb') as fh:\n            fh.write(b'x' * (1 << 20))\n"
    "        n += 1\nexcept OSError as e:\n    print('refused', type(e).__name__)\n"
    "print('wrote', n, flush=True)"
)


@pytest.fixture(scope="module")
def small() -> Iterator[SandboxPool]:
    """One worker with 1 GiB for everything it runs."""
    try:
        p = SandboxPool(workers=1, config=SandboxConfig(worker_memory=WORKER_MEMORY))
    except SandboxUnavailableError as exc:  # pragma: no cover - only off CI hosts
        pytest.skip(f"the sandbox cannot isolate code here: {exc}")
    yield p
    p.close()


def _wrote(stdout: str) -> int | None:
    got = [int(line.split()[1]) for line in stdout.splitlines() if line.startswith("wrote")]
    return got[0] if got else None


def test_a_one_shot_run_keeps_its_files_within_its_quota(small: SandboxPool) -> None:
    """A run allowed 64 MB of memory and 64 MB of files tries to write 600 MB: it is stopped
    near its own quota (memory + disk + 64 MB of slack), and told why."""
    with leak_free(small):
        limits = Limits(timeout=30.0, memory=64 << 20, disk=64 << 20)
        r = small.run(_WRITE.replace("COUNT", "600"), limits=limits)
        wrote = _wrote(r.stdout)
        assert wrote is None or wrote < 200, r
        assert "quota of 128 MB" in r.stderr or "refused" in r.stdout, r


@pytest.mark.slow
def test_a_one_shot_run_cannot_get_a_neighbour_session_killed(small: SandboxPool) -> None:
    """A session holds 300 MB; a one-shot run writes files toward 900 MB in the same 1 GiB
    worker. Before, the run's files filled the worker and the OOM killer took the session
    (the largest process). Now the run stops at its own quota; the session is untouched."""
    with leak_free(small):
        neighbour = small.session(timeout=30.0)
        try:
            held = neighbour.run("b = b'x' * (300 << 20)\nlen(b) >> 20")
            assert held.ok and held.stdout == "300\n", held
            limits = Limits(timeout=60.0, memory=128 << 20, disk=128 << 20)
            r = small.run(_WRITE.replace("COUNT", "900"), limits=limits)
            wrote = _wrote(r.stdout)
            assert wrote is None or wrote < 400, r
            after = neighbour.run("len(b) >> 20")
            assert after.ok and after.stdout == "300\n", after
            assert neighbour.rebuilds == 0, "the neighbour session was killed and rebuilt"
        finally:
            neighbour.close()


@pytest.mark.slow
def test_a_session_killed_because_the_worker_is_full_is_not_blamed_for_its_quota(
    small: SandboxPool,
) -> None:
    """Two sessions, each well inside its quota, fill the 1 GiB worker together (600 MB
    each): the OOM killer takes the larger, idle one. Its next call used to say it reached its own quota;
    it says the worker ran out of memory now."""
    roomy = Limits(timeout=60.0, memory=768 << 20)  # each quota: 768 + 256 + 64 MB > 1 GiB
    with leak_free(small):
        idle, busy = small.session(limits=roomy), small.session(limits=roomy)
        try:
            held = idle.run("b = b'x' * (600 << 20)\nlen(b) >> 20")
            assert held.ok and held.stdout == "600\n", held
            grow = busy.run(
                "chunks = []\nfor _ in range(600):\n    chunks.append(b'y' * (1 << 20))\nlen(chunks)"
            )
            assert grow.ok and grow.stdout == "600\n", grow
            r = idle.run("len(b) >> 20")
            assert r.status == "dead", r
            assert "the sandbox worker ran out of memory" in r.stderr, r
            assert "quota" not in r.stderr.replace("this session's quota", ""), r
        finally:
            idle.close()
            busy.close()


_SHOW = (
    "import json, os, subprocess, sys, time\n"
    "kids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "        for _ in range(3)]\n"
    "groups = dict(l.split(':', 2)[1:] for l in open('/proc/self/cgroup').read().splitlines())\n"
    "print(json.dumps([os.getuid(), os.getpid(), [k.pid for k in kids], groups]), flush=True)\n"
    "time.sleep(WAIT)\n"
)


def _host_view(pool: SandboxPool, uid: int) -> dict[str, dict[str, str]]:
    """The limits and processes of cgroup ``u<uid>`` in each of the worker's hierarchies."""
    cg = pool.workers[0].cgroup
    assert cg is not None
    out = {}
    for root in cg.paths:
        controller = root.split("/")[4]
        path = os.path.join(root, f"u{uid}")
        out[controller] = {}
        for name in ("memory.limit_in_bytes", "pids.max", "cpu.shares", "cgroup.procs"):
            if os.path.exists(os.path.join(path, name)):
                with open(os.path.join(path, name)) as fh:
                    out[controller][name] = fh.read().strip()
    return out


@pytest.mark.parametrize("kind", ["run", "session"])
def test_runs_and_sessions_get_their_limits_in_cgroups_of_their_own(
    small: SandboxPool, kind: str
) -> None:
    """What the kernel enforces, read on the host while the code runs: memory + files
    (with 64 MB of slack), processes and one CPU weight, with every process of the run or
    session inside."""
    limits = Limits(timeout=30.0, memory=96 << 20, disk=32 << 20, processes=12)
    want = {"memory.limit_in_bytes": str((96 + 32 + 64) << 20), "pids.max": "12",
            "cpu.shares": "1024"}  # fmt: skip
    with leak_free(small):
        code = _SHOW.replace("WAIT", "8")
        out: list = []
        if kind == "run":
            t = threading.Thread(target=lambda: out.append(small.run(code, limits=limits)))
        else:
            s = small.session(limits=limits)
            t = threading.Thread(target=lambda: out.append(s.run(code)))
        t.start()
        try:
            deadline = time.monotonic() + 60.0
            seen = None
            while seen is None and time.monotonic() < deadline:
                for uid in _pool_uid_pids(small):
                    view = _host_view(small, uid)
                    if len(view["pids"].get("cgroup.procs", "").split()) >= 4:
                        seen = uid, view
                time.sleep(0.05)
            assert seen is not None, "the run never showed up"
            uid, view = seen
            for controller, values in view.items():
                for name, value in want.items():
                    if name in values:
                        assert values[name] == value, (controller, name, values)
            procs = {c: set(v["cgroup.procs"].split()) for c, v in view.items() if v}
            assert all(len(p) == 4 for p in procs.values()), procs  # the run and its 3 kids
            assert len({frozenset(p) for p in procs.values()}) == 1, procs
        finally:
            t.join()
            if kind == "session":
                s.close()
        r = out[0]
        assert r.ok and "was killed:" not in r.stderr, (
            r
        )  # (no note of an OOM kill that did not happen)
        _, _, _, groups = json.loads(r.stdout)
        assert {groups[c] for c in ("memory", "pids", "cpu")} == {f"/u{uid}"}, groups
        # and a cgroup v2 group, a run's as a session's: cgroup.kill ends every process of it
        # at once (a fork made during the kill too), not pid by pid
        assert groups[""] == f"/u{uid}", groups


def _pool_uid_pids(pool: SandboxPool) -> dict[int, list[int]]:
    """The processes of each of the worker's uids, by uid."""
    w = pool.workers[0]
    found: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                uid = os.stat(f"/proc/{name}").st_uid
            except OSError:
                continue
            if w.uid_base <= uid < w.uid_base + w.n_uids:
                found.setdefault(uid, []).append(int(name))
    return found


@pytest.mark.parametrize(
    ("peak_below_limit", "cause"),
    [(0, "own"), (1 << 20, "own"), ((1 << 20) + 4096, "worker"), (64 << 20, "worker")],
)
def test_an_oom_kill_is_the_cgroups_own_when_its_peak_came_within_a_mib_of_its_limit(
    tmp_path, peak_below_limit: int, cause: str
) -> None:
    """The cgroup v1 memory files as the kernel writes them: a peak within 1 MiB of the
    limit (the boundary included) blames the session's own quota, a lower one the worker
    as a whole; no OOM kill, no cause."""
    from agentgym.simulators.sandbox._jail import _oom_cause

    limit = 256 << 20
    memory = tmp_path / "memory"
    memory.mkdir()
    (memory / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
    (memory / "memory.max_usage_in_bytes").write_text(f"{limit - peak_below_limit}\n")
    (memory / "memory.limit_in_bytes").write_text(f"{limit}\n")
    assert _oom_cause([str(tmp_path / "missing"), str(memory)]) == cause
    (memory / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 0\n")
    assert _oom_cause([str(memory)]) is None
