"""The pool: batched and async runs, ordering, crash recovery, recycling, refusal to run bare."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
from agentgym.simulators.sandbox import (
    SandboxConfig,
    SandboxPool,
    SandboxUnavailableError,
    layers,
)
from agentgym.simulators.sandbox.cgroups import CONTROLLERS, live_cgroups

pytestmark = [pytest.mark.sandbox]


@pytest.mark.usefixtures("no_leaks")
def test_run_many_keeps_input_order(pool: SandboxPool) -> None:
    results = pool.run_many([f"print({i} * {i})" for i in range(20)])
    assert [r.stdout for r in results] == [f"{i * i}\n" for i in range(20)]


@pytest.mark.usefixtures("no_leaks")
def test_async_api(pool: SandboxPool) -> None:
    async def main() -> list[str]:
        rs = await asyncio.gather(*(pool.arun(f"print('a{i}')") for i in range(6)))
        return [r.stdout for r in rs]

    assert asyncio.run(main()) == [f"a{i}\n" for i in range(6)]


@pytest.mark.usefixtures("no_leaks")
def test_files_are_placed_in_the_work_dir(pool: SandboxPool) -> None:
    r = pool.run("print(open('data.txt').read())", files={"../../data.txt": "hello"})
    assert r.stdout == "hello\n"


def test_crashed_worker_is_restarted() -> None:
    with SandboxPool(workers=1) as p:
        w = p.workers[0]
        assert w.proc is not None
        w.proc.send_signal(signal.SIGKILL)
        w.proc.wait()
        r = p.run("print('back')")
        assert r.status in ("ok", "crashed")
        assert p.run("print('back')").stdout == "back\n"
        assert w.generation == 2
    assert not [c for c in live_cgroups(os.getpid()) if w.name in c]


def test_worker_is_recycled_after_n_runs() -> None:
    with SandboxPool(workers=1, config=SandboxConfig(recycle_after=3)) as p:
        w = p.workers[0]
        for _ in range(4):
            assert p.run("pass").ok
        assert w.generation == 2


def test_backpressure_bounds_pending_jobs() -> None:
    with SandboxPool(workers=1, max_pending=2) as p:
        futures = [p.submit("import time; time.sleep(0.05)") for _ in range(5)]
        assert all(f.result().ok for f in futures)


def test_refuses_to_run_without_isolation(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = dict(layers.detect_layers())
    fake["namespaces"] = layers.Layer("namespaces", False, "bubblewrap is not installed")
    monkeypatch.setattr(layers, "detect_layers", lambda: fake)
    with pytest.raises(SandboxUnavailableError, match="allow_unisolated"):
        SandboxPool(workers=1)


def test_unisolated_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """With namespaces missing and explicit consent, runs still get uid/seccomp/Landlock."""
    fake = dict(layers.detect_layers())
    fake["namespaces"] = layers.Layer("namespaces", False, "pretend bwrap is missing")
    monkeypatch.setattr(layers, "detect_layers", lambda: fake)
    with SandboxPool(workers=1, config=SandboxConfig(allow_unisolated=True)) as p:
        r = p.run("import os\nprint(os.getuid() != 0, os.path.exists('/work'))")
        assert r.stdout == "True True\n"
        r = p.run("import socket\nsocket.socket()")
        assert r.status == "error" and "PermissionError" in r.stderr


def test_layers_are_reported() -> None:
    found = layers.detect_layers()
    assert set(found) == set(layers.LAYER_DOCS)
    assert found["rlimits"].active
    if os.geteuid() == 0:
        assert found["uid"].active


_OWNER = """
import json, os, threading, time
from agentgym.simulators.sandbox import SandboxPool
p = SandboxPool(workers=1)
w = p.workers[0]

def sleepers():  # the processes started below: their command line, the worker's cgroups
    n, mine = 0, "/" + os.path.basename(w.cgroup.paths[0]) + "/"
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            ours = mine in open(f"/proc/{name}/cgroup").read()
            n += ours and "time.sleep(607)" in open(f"/proc/{name}/cmdline").read()
        except OSError:
            pass
    return n

s = p.session()
if BUSY:  # a session's cell and a one-shot run, each waiting ten minutes on a child
    wait = "import subprocess, sys\\n" + (
        "subprocess.run([sys.executable, '-c', 'import time; time.sleep(607)'])"
    )
    threading.Thread(target=s.run, args=(wait,), kwargs={"timeout": 600.0}, daemon=True).start()
    p.submit(wait, timeout=600.0)
    deadline = time.monotonic() + 60
    while sleepers() < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
else:
    s.run("x = 1")
print(json.dumps({"paths": w.cgroup.paths, "running": sleepers()}), flush=True)
os._exit(0)
"""


@pytest.mark.parametrize("busy", [False, True], ids=["idle-session", "cell-and-run-under-way"])
def test_workers_exit_when_their_owner_dies(tmp_path, busy: bool) -> None:  # type: ignore[no-untyped-def]
    """A host process killed without cleanup leaves no running worker behind, and nothing
    its sessions and one-shot runs started (a cell and a run under way, each with ten
    minutes left on its clock)."""
    import json
    import subprocess
    import sys
    import time

    script = tmp_path / "owner.py"
    script.write_text(f"BUSY = {busy}\n" + _OWNER)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    owner = json.loads(out.stdout.strip().splitlines()[-1])
    paths = owner["paths"]
    worker = os.path.basename(paths[0])
    assert owner["running"] == (2 if busy else 0)  # both were under way when it died
    assert {p.split("/")[4] for p in paths} == set(CONTROLLERS)
    deadline = time.monotonic() + 60.0  # SIGKILLed processes end when they next run
    while _processes_in(worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_in(worker) == []
    procs = os.path.join(paths[0], "cgroup.procs")
    for _ in range(200):  # poll (up to ~20 s) until the orphaned worker has exited
        with open(procs) as fh:
            if not fh.read().split():
                break
        time.sleep(0.1)
    with open(procs) as fh:
        assert fh.read().split() == []
    for path in paths:  # the worker removed its session cgroups before it exited
        assert [d for d in os.listdir(path) if os.path.isdir(os.path.join(path, d))] == []
        os.rmdir(path)


def test_installed_agentgym_is_hidden_in_the_jail(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A site dir the jail needs may also hold an installed agentgym (tasks, hidden tests)."""
    import subprocess

    from agentgym.simulators.sandbox.worker import _bwrap_command

    if not layers.detect_layers()["namespaces"].active:
        pytest.skip("needs bubblewrap")
    site = tmp_path / "site-packages"
    (site / "agentgym").mkdir(parents=True)
    (site / "agentgym" / "tasks.jsonl").write_text("hidden")
    (site / "numpy_stub.py").write_text("visible")
    script = f"cat {site}/numpy_stub.py; cat {site}/agentgym/tasks.jsonl"
    out = subprocess.run(
        [*_bwrap_command([str(site)], os.geteuid() == 0), "/bin/sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout == "visible" and "No such file" in out.stderr


def _processes_in(cgroup: str) -> list[int]:
    """Live (not zombie) processes in cgroup ``cgroup`` (a worker's directory name) or below
    it, in any hierarchy: the worker, the jail's init and all they started."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/cgroup") as fh:
                groups = fh.read()
            with open(f"/proc/{name}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        inside = f"/{cgroup}/" in groups or f"/{cgroup}\n" in groups
        if inside and state not in ("Z", "X"):
            found.append(int(name))
    return found
