"""Nothing one session does can be read by another (issue 38: /proc, locks, pid syscalls).

Each test puts a secret where a session could leave one (its process name, nice value,
scheduler, CPU affinity, file locks on the shared read-only tree, /proc/locks, a pty) and
has a second session on the same worker look for it by every route the issue found. The
victim and the spy are ordinary sessions: what the spy gets is what any model could get.
"""

from __future__ import annotations

import json
import os

import pytest
from agentgym.simulators.sandbox import SandboxPool

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("one_leak_free")]


_MARK = (
    "import ctypes, os, json\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.prctl(15, b'ANSWER=42', 0, 0, 0)\n"  # PR_SET_NAME: the process's comm
    "os.nice(7)\n"
    "os.sched_setaffinity(0, {0})\n"
    "print(os.getpid(), os.getuid())"
)

_SPY = r"""
import json, os, signal
victim = VICTIM
seen = {}
for pid in [p for p in os.listdir('/proc') if p.isdigit()] + [str(victim)]:
    if int(pid) == os.getpid():
        continue
    for name in ('comm', 'stat', 'statm', 'status', 'sched', 'cgroup', 'cmdline', 'environ',
                 'io', 'wchan', 'limits'):
        try:
            with open(f'/proc/{pid}/{name}', 'rb') as fh:
                seen[f'{pid}/{name}'] = fh.read(4096).decode('latin-1')
        except OSError:
            pass
for call, fn in (('getpriority', lambda: os.getpriority(os.PRIO_PROCESS, victim)),
                 ('getpriority_pgrp', lambda: os.getpriority(os.PRIO_PGRP, victim)),
                 ('sched_getaffinity', lambda: sorted(os.sched_getaffinity(victim))),
                 ('sched_getscheduler', lambda: os.sched_getscheduler(victim)),
                 ('sched_getparam', lambda: os.sched_getparam(victim).sched_priority),
                 ('sched_rr_get_interval', lambda: os.sched_rr_get_interval(victim)),
                 ('getpgid', lambda: os.getpgid(victim)), ('getsid', lambda: os.getsid(victim)),
                 ('getpriority_user', lambda: os.getpriority(os.PRIO_USER, VICTIM_UID))):
    try:
        seen[call] = fn()
    except OSError as exc:
        seen[call + ' refused'] = exc.errno
try:
    seen['locks'] = open('/proc/locks').read()
except OSError:
    pass
print(json.dumps(seen))
"""


def test_a_session_sees_nothing_of_another_sessions_processes(one: SandboxPool) -> None:
    """Session A names its process ``ANSWER=42``, sets its nice value and CPU affinity;
    session B scans /proc (listed and by A's pid) and asks the kernel about
    A's pid. Before, B read A's name, memory, CPU and cgroup from /proc and its nice value,
    affinity and group from the pid syscalls; now every route answers "no such process"."""
    import errno

    a, b = one.session(), one.session()
    try:
        marked = a.run(_MARK)
        assert marked.ok, marked
        victim, victim_uid = map(int, marked.stdout.split())
        spy = b.run(_SPY.replace("VICTIM_UID", str(victim_uid)).replace("VICTIM", str(victim)))
        assert spy.ok, spy
        seen = json.loads(spy.stdout)
        assert "ANSWER" not in spy.stdout
        assert {k for k in seen if "/" in k} == set(), "B read /proc entries of A's process"
        assert "locks" not in seen, "/proc/locks is readable"
        refused = {k: v for k, v in seen.items() if k.endswith(" refused")}
        assert set(refused) == {
            f"{call} refused"
            for call in ("getpriority", "getpriority_pgrp", "sched_getaffinity",
                         "sched_getscheduler", "sched_getparam", "sched_rr_get_interval",
                         "getpgid", "getsid", "getpriority_user")
        }, seen  # fmt: skip
        assert set(refused.values()) == {errno.ESRCH}, refused
        # the same calls about its own process, and about its own children, still work
        own = a.run(
            "import subprocess, sys\n"
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
            "me = os.getpid()\n"
            "print(json.dumps([os.getpriority(os.PRIO_PROCESS, me),\n"
            "                  os.getpriority(os.PRIO_USER, os.getuid()),\n"
            "                  sorted(os.sched_getaffinity(me)), os.getpgid(me) == me,\n"
            "                  os.getpgid(p.pid) == me, os.getsid(p.pid) == os.getsid(0),\n"
            "                  open(f'/proc/{p.pid}/comm').read().strip()]))\n"
            "p.kill()\n_ = p.wait()"
        )
        assert own.ok, own
        assert json.loads(own.stdout) == [7, 7, [0], True, True, True, "python3.11"]
    finally:
        a.close()
        b.close()


_LOCKS = (
    "import fcntl, os, struct, json\n"
    "SHARED = ['/usr/lib/python3.11/' + n for n in ('json/__init__.py', 'os.py', 're/__init__.py',\n"
    "          'abc.py', 'ast.py', 'enum.py', 'io.py', 'types.py')]\n"
    "def rd(path):\n"
    "    return open(path, 'rb')\n"
)

_SEND = _LOCKS + (
    "held = []\n"
    "for i, path in enumerate(SHARED):\n"
    "    f = rd(path)\n"
    "    if SECRET >> i & 1:\n"
    "        fcntl.flock(f, fcntl.LOCK_EX)\n"  # a BSD lock on a file of the shared tree
    "        fcntl.lockf(f, fcntl.LOCK_SH)\n"  # and a POSIX read lock
    "    held.append(f)\n"
    "print('held')"
)

_RECEIVE = _LOCKS + (
    "byte = 0\n"
    "for i, path in enumerate(SHARED):\n"
    "    f = rd(path)\n"
    "    try:\n"
    "        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
    "        fcntl.flock(f, fcntl.LOCK_UN)\n"
    "    except BlockingIOError:\n"
    "        byte |= 1 << i\n"
    "    probe = struct.pack('hhqqi', fcntl.F_WRLCK, 0, 0, 0, 0)\n"
    "    if struct.unpack('hhqqi', fcntl.fcntl(f, fcntl.F_GETLK, probe))[0] != fcntl.F_UNLCK:\n"
    "        byte |= 1 << i\n"
    "    f.close()\n"
    "print(byte)"
)


def test_locks_on_the_shared_tree_carry_nothing_between_sessions(one: SandboxPool) -> None:
    """Session A encodes a byte in which stdlib files it holds locked (flock and a POSIX
    read lock) and stays idle between cells; session B decodes it with non-blocking flock
    and F_GETLK. Before, B read the byte back; now locks on anything but a session's own
    files succeed and lock nothing, so B reads 0 whatever A sent."""
    secret = 0b10110101
    a, b = one.session(), one.session()
    try:
        sent = a.run(_SEND.replace("SECRET", str(secret)))
        assert sent.ok and sent.stdout == "held\n", sent
        got = b.run(_RECEIVE)
        assert got.ok, got
        assert int(got.stdout) == 0, f"B decoded {int(got.stdout):#010b} from A's locks"
    finally:
        a.close()
        b.close()


_OWN_LOCKS = r"""
import fcntl, json, os, sqlite3, subprocess, sys, threading, time
out = {}
# flock between two processes of the session, on its own file: a real lock
holder = subprocess.Popen([sys.executable, '-c',
    "import fcntl, sys, time\nf = open('lock', 'w')\nfcntl.flock(f, fcntl.LOCK_EX)\n"
    "print('held', flush=True)\ntime.sleep(60)"], stdout=subprocess.PIPE, text=True)
assert holder.stdout.readline() == 'held\n'
f = open('lock', 'w')
try:
    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    out['flock'] = 'free'
except BlockingIOError:
    out['flock'] = 'held by the other process'
holder.kill()
holder.wait()
try:  # a lock call on an fd that is not open fails as it would anywhere
    fcntl.flock(9999, fcntl.LOCK_EX)
except OSError as e:
    out['bad fd'] = e.errno
# sqlite, rollback journal and WAL, with a second process kept out by the lock
for mode in ('delete', 'wal'):
    db = sqlite3.connect(f'{mode}.db', isolation_level=None)
    db.execute(f'pragma journal_mode={mode}')
    db.execute('create table t (x)')
    db.execute('begin exclusive')
    db.execute('insert into t values (1)')
    other = subprocess.run([sys.executable, '-c',
        f"import sqlite3\ndb = sqlite3.connect('{mode}.db', timeout=0)\n"
        "try:\n    db.execute('insert into t values (2)'); db.commit(); print('wrote')\n"
        "except sqlite3.OperationalError as e:\n    print(e)"], capture_output=True, text=True)
    db.execute('commit')
    out[mode] = [other.stdout.strip(), db.execute('select count(*) from t').fetchone()[0]]
    db.close()
print(json.dumps(out))
"""


def test_locks_on_a_sessions_own_files_still_exclude(one: SandboxPool) -> None:
    """The other side of the rule: within a session's own work dir, flock and sqlite's
    fcntl locks (rollback journal and WAL) keep a second process of the session out."""
    with one.session(timeout=30.0) as s:
        r = s.run(_OWN_LOCKS)
        assert r.ok, r
        assert json.loads(r.stdout) == {
            "flock": "held by the other process",
            "bad fd": 9,  # EBADF
            "delete": ["database is locked", 1],
            "wal": ["database is locked", 1],
        }


_THREADED_LOCK = r"""
import fcntl, subprocess, sys, threading, time
stop = threading.Event()
t = threading.Thread(target=stop.wait)
t.start()
f = open('lock', 'w')
fcntl.flock(f, fcntl.LOCK_EX)   # from a process with two threads
other = subprocess.run([sys.executable, '-c',
    "import fcntl\nf = open('lock', 'w')\n"
    "try:\n    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB); print('free')\n"
    "except BlockingIOError:\n    print('held')"], capture_output=True, text=True)
stop.set()
t.join()
print(other.stdout.strip())
"""


def test_a_lock_taken_by_a_threaded_process_locks_nothing(one: SandboxPool) -> None:
    """Why: the syscall guard checks the fd of a lock call, then lets the call run; another
    thread could swap that fd for one on the shared tree in between. So a multi-threaded
    process's lock calls lock nothing (they succeed): this pins that the guard never lets
    one through, which is what keeps the check above from being raced."""
    with one.session(timeout=30.0) as s:
        r = s.run(_THREADED_LOCK)
        assert r.ok and r.stdout == "free\n", r


def test_no_inotify_pty_or_shared_fd_table(one: SandboxPool) -> None:
    """Three more routes between sessions, closed: an inotify watch on a file of the shared
    tree sees every other session open and read it; opening /dev/ptmx (even read-only) adds
    an entry under /dev/pts that every session lists; a clone sharing the fd table without
    being a thread could swap an fd the syscall guard has just checked."""
    import errno

    a, b = one.session(), one.session()
    try:
        r = b.run(
            "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "print(libc.inotify_init1(0), ctypes.get_errno())"
        )
        assert r.ok and r.stdout.split() == ["-1", str(errno.EPERM)], r
        r = a.run(
            "import os\ntry:\n    os.open('/dev/ptmx', os.O_RDONLY)\n    print('opened')\n"
            "except OSError as e:\n    print(e.errno)"
        )
        assert r.ok and r.stdout.strip() != "opened", r
        r = b.run("sorted(os.listdir('/dev/pts'))")
        assert r.ok and r.stdout.strip() == "[]", r
        r = a.run(
            "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "pid = libc.syscall(56, 0x400 | 17, 0, 0, 0, 0)\n"  # clone(CLONE_FILES | SIGCHLD)
            "if pid == 0:\n    os._exit(0)\n"
            "if pid > 0:\n    os.waitpid(pid, 0)\n"
            "print(pid, ctypes.get_errno())"
        )
        assert r.ok and r.stdout.split() == ["-1", str(errno.EPERM)], r
        r = a.run(  # (and a clone into a new user namespace, as before)
            "pid = libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)\n"
            "if pid == 0:\n    os._exit(0)\n"
            "if pid > 0:\n    os.waitpid(pid, 0)\n"
            "print(pid, ctypes.get_errno())"
        )
        assert r.ok and r.stdout.split() == ["-1", str(errno.EPERM)], r
    finally:
        a.close()
        b.close()


def test_the_guard_reads_a_process_uid_that_its_name_cannot_forge() -> None:
    """The guard decides by the effective uid in ``/proc/<pid>/status``; a process that
    names itself with a forged ``Uid:`` line (its name comes first in that file) still reads
    as its real uid, and a pid that names no process reads as None."""
    import subprocess
    import sys

    from agentgym.simulators.sandbox._jail import _uid_of

    code = (
        "import ctypes, sys, time\n"
        "ctypes.CDLL(None).prctl(15, b'x\\nUid:\\t0 0 0 0', 0, 0, 0)\n"
        "print('named', flush=True)\n"
        "time.sleep(60)\n"
    )
    argv = [sys.executable, "-c", code]
    if os.geteuid() == 0:
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "named\n"
        with open(f"/proc/{child.pid}/status", "rb") as fh:
            assert fh.read().startswith(b"Name:\tx\\nUid:")  # the forged line, escaped
        assert _uid_of(child.pid) == (65534 if os.geteuid() == 0 else os.geteuid())
    finally:
        child.kill()
        child.wait()
    assert _uid_of(child.pid) is None  # reaped: gone
    assert _uid_of(0) is None and _uid_of(-1) is None
    assert _uid_of(os.getpid()) == os.geteuid()
