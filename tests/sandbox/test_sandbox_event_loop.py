"""The worker's event loop waits for no process (issue 34, density).

Every cell of every session on a worker goes through its one event loop, so anything the
loop waits for, every session waits for. It used to wait for two processes: a killed
one-shot run to die (a blocking ``waitpid``; a second or more per worker under one-shot hogs
on a loaded host) and the zygote to fork each new session (one request at a time). Here the
process in question is held in a cgroup v1 freezer of the test's own (a frozen task neither
runs nor acts on SIGKILL until thawed): it stays slow exactly as long as the test wants,
whatever the load, so the tests order events and never measure time.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest
from agentgym.simulators.sandbox import SandboxPool

from tests.sandbox.conftest import host_pid

pytestmark = [pytest.mark.sandbox]

_FREEZER = "/sys/fs/cgroup/freezer"
_HOMES: dict[int, str] = {}
"""Each frozen process's own freezer group (by host pid)."""
_TAG = f"rp{os.getpid() % 100000}"
# the run's leader sleeps; its child (same process group) floods stdout once the test
# signals it, so the worker kills the run for its output at a moment the test chooses
_HOG = (
    "import ctypes, os, signal, time\n"
    "libc = ctypes.CDLL(None)\n"
    "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})\n"
    "if os.fork() == 0:\n"
    f"    libc.prctl(15, b'{_TAG}c', 0, 0, 0)\n"
    "    signal.sigwait({signal.SIGUSR1})\n"
    "    while True:\n"
    "        os.write(1, b'x' * 65536)\n"
    f"libc.prctl(15, b'{_TAG}p', 0, 0, 0)\n"
    "time.sleep(3600)\n"
)


def _wait(cond, what: str, seconds: float = 60.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError(f"never happened: {what}")


def _named(pool: SandboxPool, name: str) -> int | None:
    """The host pid of the worker's process called ``name`` (its comm), or None."""
    cg = pool.workers[0].cgroup
    assert cg is not None
    for pid in cg.pids():
        try:
            with open(f"/proc/{pid}/comm") as fh:
                if fh.read().strip() == name:
                    return pid
        except OSError:
            continue
    return None


def _kill_pending(pid: int) -> bool:
    """Whether ``pid`` has a SIGKILL pending (sent, not yet acted on: it is frozen)."""
    with open(f"/proc/{pid}/status") as fh:
        fields = dict(line.split(":", 1) for line in fh if ":" in line)
    bit = 1 << (signal.SIGKILL - 1)
    return any(int(fields[k].strip(), 16) & bit for k in ("SigPnd", "ShdPnd"))


def _freeze(freezer: str, pid: int) -> None:
    """Move ``pid`` into the test's freezer group and freeze it (its old group is noted:
    the fixture puts a process that lives on back there)."""
    with open(f"/proc/{pid}/cgroup") as fh:
        home = next(line.split(":", 2)[2].strip() for line in fh if ":freezer:" in line)
    _HOMES[pid] = os.path.join(_FREEZER, home.lstrip("/"))
    with open(os.path.join(freezer, "cgroup.procs"), "w") as fh:
        fh.write(str(pid))
    with open(os.path.join(freezer, "freezer.state"), "w") as fh:
        fh.write("FROZEN")

    def frozen() -> bool:
        with open(os.path.join(freezer, "freezer.state")) as fh:
            return fh.read().strip() == "FROZEN"

    _wait(frozen, "the process froze")


def _thaw(freezer: str) -> None:
    with open(os.path.join(freezer, "freezer.state"), "w") as fh:
        fh.write("THAWED")


@pytest.fixture()
def freezer() -> Iterator[str]:
    """A cgroup v1 freezer group of the test's own, thawed and removed afterwards."""
    if not os.path.isdir(_FREEZER):
        pytest.skip("no cgroup v1 freezer hierarchy on this host")
    path = os.path.join(_FREEZER, f"agentgym-test-{_TAG}")
    os.makedirs(path, exist_ok=True)
    try:
        yield path
    finally:
        _thaw(path)
        with open(os.path.join(path, "cgroup.procs")) as fh:
            alive = [int(p) for p in fh.read().split()]
        for pid in alive:  # (a thawed zygote lives on: back where it was)
            home = os.path.join(_HOMES.get(pid, _FREEZER), "cgroup.procs")
            with contextlib.suppress(OSError), open(home, "w") as fh:
                fh.write(str(pid))

        def empty() -> bool:
            with open(os.path.join(path, "cgroup.procs")) as fh:
                return not fh.read().split()

        _wait(empty, "the test's freezer group emptied")
        os.rmdir(path)


@pytest.mark.usefixtures("one_leak_free")
def test_a_killed_run_still_dying_holds_up_no_other_session(one: SandboxPool, freezer: str) -> None:
    with one.session(timeout=30.0) as s:
        assert s.run("x = 1").ok
        fut = one.submit(_HOG, timeout=300.0)
        leader = _wait(lambda: _named(one, f"{_TAG}p"), "the run started")
        child = _wait(lambda: _named(one, f"{_TAG}c"), "the run forked")
        _freeze(freezer, leader)
        os.kill(child, signal.SIGUSR1)  # the flood: the worker kills the run for its output
        _wait(lambda: _kill_pending(leader), "the worker killed the run")
        # the run is killed and cannot die yet; the worker must still serve the session
        other = s.run("print(x + 1)", timeout=30.0)
        assert other.ok and other.stdout == "2\n", other
        assert not fut.done(), "a run's result came before its process was gone"
        assert _kill_pending(leader)  # (still dying: the scenario held throughout)
        _thaw(freezer)
        result = fut.result(timeout=60.0)
        assert result.status == "output_limit", result
        assert s.run("print(x + 2)").stdout == "3\n"


_PPID = "import os\nprint(os.getppid())"


def _lineage_cgroups(pool: SandboxPool) -> set[str]:
    """The worker's session lineages' cgroup v2 groups (runs and spares have none)."""
    cg = pool.workers[0].cgroup
    assert cg is not None
    return {c for p in cg.paths if "/unified/" in p for c in cg.children(p)}


@pytest.mark.usefixtures("one_leak_free")
def test_a_session_still_being_forked_holds_up_no_other_session(
    one: SandboxPool, freezer: str
) -> None:
    """The worker asked the zygote for one session at a time and waited for its answer (up
    to 10 s) with every other session's cell waiting too; a zygote that took that long was
    given up and the session forked by the worker instead."""
    w = one.workers[0]
    with one.session(timeout=30.0) as s:
        assert s.run("x = 1").ok
        zygote = w.call({"op": "ping"}, 10.0)["zygote_pid"]
        assert zygote > 0
        before = _lineage_cgroups(one)
        _freeze(freezer, host_pid(one, zygote))
        opened: list = []
        opener = threading.Thread(target=lambda: opened.append(one.session(timeout=30.0)))
        opener.start()
        try:
            # its cgroups made, the new session's request is with the (frozen) zygote
            _wait(lambda: _lineage_cgroups(one) - before, "the worker began the open")
            other = s.run("print(x + 1)", timeout=30.0)
            assert other.ok and other.stdout == "2\n", other
        finally:
            _thaw(freezer)
            opener.join(60.0)
        assert opened, "the session never opened"
        with opened[0] as new:  # forked by the zygote it waited for, not given up on
            r = new.run(_PPID)
            assert r.ok and r.stdout == f"{zygote}\n", r
        assert w.call({"op": "ping"}, 10.0)["zygote_pid"] == zygote


def _gone_or_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


@pytest.mark.usefixtures("one_leak_free")
def test_a_zygote_lost_while_a_request_for_it_waits_loses_no_session(one: SandboxPool) -> None:
    """The worker asks the zygote without waiting, so the zygote's socket is on the loop: a
    new session's request and the zygote's end can come up in one turn of it. The request
    finds the zygote gone and gives it up; the end of the given-up zygote, next in the same
    turn, must then be ignored (it used to end the worker's loop)."""
    w = one.workers[0]
    info = w.call({"op": "ping"}, 10.0)
    worker, zygote = host_pid(one, info["pid"]), host_pid(one, info["zygote_pid"])
    os.kill(worker, signal.SIGSTOP)  # both events wait for the loop's next turn, in order
    try:
        fut = w.submit({"op": "session_new"})
        os.kill(zygote, signal.SIGKILL)
        _wait(lambda: _gone_or_zombie(zygote), "the zygote died")
    finally:
        os.kill(worker, signal.SIGCONT)
    sid = fut.result(timeout=60.0).get("sid")
    assert sid, "the session was not opened"
    r = w.call({"op": "session_run", "sid": sid, "code": "print(6 * 7)", "timeout": 30.0}, 30.0)
    assert r["status"] == "ok" and r["stdout"] == "42\n", r
    w.call({"op": "session_close", "sid": sid}, 10.0)
    with one.session(timeout=30.0) as s:  # and a new zygote forks the next ones
        assert s.run("print(1)").stdout == "1\n"


@pytest.mark.usefixtures("one_leak_free")
def test_a_host_slow_to_read_its_answers_holds_up_no_other_request(one: SandboxPool) -> None:
    """Answers the host's pipe cannot take wait in the worker, in order, while its loop goes
    on: with the pipe full of unread answers, a new session still opens (its cgroup v2 group
    appears, which only sessions have). A worker that wrote its answers blocking would stop
    its whole loop, every other session's cells with it, until the host read."""
    import fcntl
    import json
    import termios

    from agentgym.simulators.sandbox import worker as worker_mod
    from agentgym.simulators.sandbox.cgroups import WorkerCgroup

    w = one.workers[0]
    chan = w._channel()
    (v2,) = [p for p in w.cgroup.paths if "/unified/" in p]
    before = set(WorkerCgroup.children(v2))
    ids = iter(range(10**9, 10**9 + 100))  # ids the channel does not know: nobody reads them

    def raw(msg: dict) -> None:
        data = json.dumps({**msg, "id": next(ids)}).encode()
        with chan.send_lock:
            chan.stdin.write(worker_mod._HDR.pack(len(data)) + data)
            chan.stdin.flush()

    def unread() -> int:
        buf = bytearray(4)
        fcntl.ioctl(chan.fd, termios.FIONREAD, buf)
        return int.from_bytes(buf, "little")

    big = "import sys\nsys.stdout.write('x' * 60000)"  # one answer: 60 kB of the pipe's 64 KiB
    for _ in range(4):
        raw({"op": "exec", "code": big, "timeout": 30.0})
    # full: within a page of its 64 KiB (a pipe holds whole pages; answers are not aligned)
    _wait(lambda: unread() > 65536 - 4096, "the host's pipe filled up with answers")
    raw({"op": "session_new"})
    _wait(lambda: set(WorkerCgroup.children(v2)) - before, "a session opened meanwhile")
    answers = [worker_mod._read_frame(chan.fd, time.monotonic() + 60.0) for _ in range(5)]
    runs = [a for a in answers if "sid" not in a]
    assert [a["status"] for a in runs] == ["ok"] * 4, runs
    assert all(a["stdout"] == "x" * 60000 for a in runs)  # whole, in one piece each
    (opened,) = [a for a in answers if "sid" in a]
    r = w.call({"op": "session_run", "sid": opened["sid"], "code": "6 * 7", "timeout": 30.0}, 30.0)
    assert r["status"] == "ok" and r["stdout"] == "42\n", r
    w.call({"op": "session_close", "sid": opened["sid"]}, 10.0)


def test_answers_still_owed_when_the_host_closes_its_input_all_reach_it(one: SandboxPool) -> None:
    """A host that closes its input and goes on reading gets every answer it was owed, in
    order, however long that reading takes: the worker drains its outbox before it exits,
    giving up only on a host that takes nothing for a while. The answer pipe is cut to one
    page, so almost every answer is still queued in the worker when the input ends (bad
    requests are answered as they are read, so all of them are owed by then)."""
    import fcntl
    import json

    from agentgym.simulators.sandbox import worker as worker_mod

    w = one.workers[0]
    w.ensure_started()
    chan = w._channel()
    fcntl.fcntl(chan.fd, 1031, 4096)  # F_SETPIPE_SZ: one page between worker and host
    ids = list(range(10**9, 10**9 + 1000))  # ids the channel does not know: nobody reads them
    data = b"".join(
        worker_mod._HDR.pack(len(d)) + d
        for d in (json.dumps({"op": "no such op", "id": i}).encode() for i in ids)
    )
    with chan.send_lock:
        chan.stdin.write(data)
        chan.stdin.close()  # the host's input ends: the worker shuts down
    got = []
    for i in range(len(ids)):
        got.append(worker_mod._read_frame(chan.fd, time.monotonic() + 60.0))
        if i % 40 == 0:
            time.sleep(0.1)  # a slow reader: 2.5 s in all, never long without reading
    assert [a["id"] for a in got] == ids  # every one, once, in order
    assert {a["status"] for a in got} == {"bad_request"}
    proc = w.proc
    assert proc is not None
    proc.wait(timeout=60.0)  # and then the worker exits
    with w.lock:
        w.stop()
    with one.session(timeout=30.0) as s:  # the pool starts a new one for the next caller
        assert s.run("print(1)").stdout == "1\n"
