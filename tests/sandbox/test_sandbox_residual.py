"""What a session can still observe of the host and of other sessions, pinned as it is.

docs/sandbox.md's threat model lists these as residual: they carry totals, existence or
timing, never another session's data. Each test pins the line it backs, so a change that
widens (or narrows) what is visible shows up here.
"""

from __future__ import annotations

import json
import threading

import pytest
from agentgym.simulators.sandbox import SandboxPool

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("one_leak_free")]


def test_host_totals_are_visible_and_are_the_hosts(one: SandboxPool) -> None:
    """/proc/meminfo, /proc/stat, /proc/loadavg and the free space of the work dir's tmpfs
    are the host's (or the jail's) totals: what everything running adds up to."""
    with open("/proc/meminfo") as fh:
        total = fh.readline()
    with one.session() as s:
        r = s.run(
            "import os, json\n"
            "print(json.dumps([open('/proc/meminfo').readline(), os.path.exists('/proc/stat'),\n"
            "                  len(open('/proc/loadavg').read().split()),\n"
            "                  os.statvfs('.').f_blocks > 0]))"
        )
    assert r.ok, r
    assert json.loads(r.stdout) == [total, True, 5, True]


def test_a_session_can_tell_a_pid_exists_but_learns_nothing_about_it(one: SandboxPool) -> None:
    """Pids are numbers in the worker's one pid namespace: ``kill(pid, 0)`` tells a live
    process of another session (refused) from a free pid (no such process); every read of
    that process is refused as if it did not exist."""
    a, b = one.session(), one.session()
    try:
        victim = int(a.run("import os\nos.getpid()").stdout)
        r = b.run(
            "import os, json\nout = []\n"
            f"for call in (lambda: os.kill({victim}, 0), lambda: os.kill(4_000_000, 0),\n"
            f"             lambda: os.getpriority(os.PRIO_PROCESS, {victim})):\n"
            "    try:\n        call()\n        out.append('ok')\n"
            "    except OSError as e:\n        out.append(type(e).__name__)\n"
            "print(json.dumps(out))"
        )
        assert r.ok, r
        assert json.loads(r.stdout) == [
            "PermissionError", "ProcessLookupError", "ProcessLookupError"
        ]  # fmt: skip
    finally:
        a.close()
        b.close()


def test_forks_of_one_session_reach_each_others_files_and_signals_not_proc(
    one: SandboxPool,
) -> None:
    """Branches of one session share its uid: a branch reads its parent's files by path and
    can signal it (inside its own cell's time: the parent is frozen between calls), but not
    read its /proc entries (the session processes are not dumpable)."""
    a = one.session()
    fork = a.fork()
    try:
        r = a.run(
            "import ctypes, os\nctypes.CDLL(None).prctl(15, b'branch-a', 0, 0, 0)\n"
            "open('note', 'w').write('from a')\nprint(os.getpid(), os.path.abspath('note'))"
        )
        assert r.ok, r
        parent, note = r.stdout.split()
        r = fork.run(
            "import json, os\nout = [open(NOTE).read()]\n"
            "os.kill(PARENT, 0)\nout.append('signalled')\n"
            "try:\n    out.append(open('/proc/PARENT/comm').read())\n"
            "except OSError as e:\n    out.append(type(e).__name__)\nprint(json.dumps(out))".replace(
                "NOTE", repr(note)
            ).replace("PARENT", parent)
        )
        assert r.ok, r
        assert json.loads(r.stdout) == ["from a", "signalled", "FileNotFoundError"]
    finally:
        fork.close()
        a.close()


_FLOOD = (
    "import fcntl, time\nf = open('/usr/lib/python3.11/os.py', 'rb')\nn = 0\n"
    "end = time.monotonic() + 8\nwhile time.monotonic() < end:\n"
    "    fcntl.flock(f, fcntl.LOCK_SH)\n    n += 1\nprint(n)"
)


def test_a_flood_of_lock_calls_holds_no_other_sessions_cells(one: SandboxPool) -> None:
    """Every lock call waits for the syscall guard (one helper process per worker): a
    session that loops on them slows other sessions' lock calls, not their cells. Cells of a
    neighbour, and its own lock calls on its own files, complete while the flood runs."""
    flood, other = one.session(timeout=30.0), one.session(timeout=30.0)
    try:
        assert other.run("import fcntl\nx = 0").ok
        done: list = []
        t = threading.Thread(target=lambda: done.append(flood.run(_FLOOD)))
        t.start()
        for i in range(3):
            r = other.run(
                "x += 1\nwith open('own', 'w') as f:\n    fcntl.flock(f, fcntl.LOCK_EX)\nx"
            )
            assert r.ok and r.stdout == f"{i + 1}\n", r
        assert not done, "the neighbour's cells waited for the flood to end"
        t.join()
        assert done[0].ok and int(done[0].stdout) > 0, done[0]
    finally:
        flood.close()
        other.close()


def test_work_dir_free_space_is_the_jails(one: SandboxPool) -> None:
    """The work dirs share one tmpfs per worker: its free space goes down with every
    session's files (a total, like the host's memory)."""
    a, b = one.session(), one.session()
    try:
        free = "import os\nst = os.statvfs('.')\nst.f_bfree * st.f_frsize"
        before = int(b.run(free).stdout)
        assert a.run("for i in range(5):\n    open(f'big{i}', 'wb').write(b'x' * (15 << 20))").ok
        after = int(b.run(free).stdout)
        assert before - after >= 60 << 20
    finally:
        a.close()
        b.close()
