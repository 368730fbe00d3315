"""Hostile tests for isolation between sessions (issue 13, S1-S8), through the real pool.

Each test plays the attacker the issue describes and asserts that the victim (another
session, another pool, the worker, the time limit) is unaffected.
"""

from __future__ import annotations

import json
import os
import threading
import time

import pytest
from agentgym.envs.code.codemath import CodeMathEnv
from agentgym.simulators.sandbox import Limits, SandboxPool
from agentgym.simulators.sandbox import worker as worker_mod

from agentgym.parsing import render_tool_call

pytestmark = [pytest.mark.sandbox]


def _uid_of_procs(lo: int, hi: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if lo <= os.stat(f"/proc/{name}").st_uid < hi:
                    out.append(int(name))
            except OSError:
                pass
    return out


@pytest.mark.slow
def test_s1_no_session_reads_another_at_64_sessions(pool: SandboxPool) -> None:
    """64 concurrent sessions (32 per worker): each uid is its own, every guessed path of a
    neighbour (open or closed) is unreadable."""
    sessions = [pool.session(timeout=10.0) for _ in range(64)]
    try:
        info = []
        for i, s in enumerate(sessions):
            r = s.run(
                "import os, json\n"
                f"open('secret.txt', 'w').write('secret-{i}')\n"
                "print(json.dumps([os.getuid(), os.path.abspath('secret.txt')]))"
            )
            assert r.ok, r
            info.append(json.loads(r.stdout))
        uids = [u for u, _ in info]
        assert len(set(uids)) == len(uids), "two live sessions share a uid"
        paths = [p for _, p in info]
        sessions[1].close()  # a closed session's files must not stay readable either
        probe = (
            "import json\nfound = []\n"
            f"for p in {paths!r}:\n"
            "    try:\n        found.append(open(p).read())\n    except OSError:\n        pass\n"
            "print(json.dumps(found))"
        )
        for i in (0, 31, 32, 63):
            r = sessions[i].run(probe)
            assert r.ok, r
            assert json.loads(r.stdout) == [f"secret-{i}"], f"session {i} read a neighbour"
    finally:
        for s in sessions:
            s.close()


def test_s2_snapshot_branches_do_not_share_files(pool: SandboxPool) -> None:
    """Files written after a snapshot do not survive restore and are not seen by siblings."""
    env = CodeMathEnv(levels=(1,), pool=pool)
    other = CodeMathEnv(levels=(1,), pool=pool)
    py = lambda code: render_tool_call("python", {"code": code})  # noqa: E731
    ls = py("import os\nsorted(os.listdir('.'))")
    try:
        env.reset(seed=1)
        env.step(py("open('before.txt', 'w').write('x')"))
        snap = env.snapshot()
        env.step(py("open('after.txt', 'w').write('x')"))
        env.restore(snap)
        obs, *_ = env.step(ls)
        assert obs["text"].strip() == "['before.txt']"
        env.step(py("open('branch_a.txt', 'w').write('a')"))
        other.reset(seed=1)
        other.restore(snap)
        obs, *_ = other.step(ls)
        assert obs["text"].strip() == "['before.txt']", "a sibling branch saw another's file"
    finally:
        env.close()
        other.close()


def test_s3_background_processes_and_threads_die_with_the_cell(pool: SandboxPool) -> None:
    with pool.session(timeout=10.0) as s:
        r = s.run(
            "import subprocess, sys\n"
            "p = subprocess.Popen([sys.executable, '-c', 'while True: pass'])\n"
            "pid = p.pid\nprint('started')"
        )
        assert r.ok and "started" in r.stdout, r
        assert "background process" in r.stderr  # the observation says what happened
        # SIGKILL went out when the cell ended; the process is gone once the kernel has run
        # it (a busy host may take a while to schedule a process of an idle cell's cgroup)
        check = (
            "try:\n    state = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[0]\n"
            "except OSError:\n    state = 'gone'\n"
            "print('gone' if state in ('gone', 'Z', 'X') else 'alive')"
        )
        deadline = time.monotonic() + 60.0
        r = s.run(check)
        while r.stdout.strip() == "alive" and time.monotonic() < deadline:
            time.sleep(0.05)
            r = s.run(check)
        assert r.stdout.strip() == "gone", r
        s.run("x = 41")
        r = s.run(
            "import threading\nt = threading.Thread(target=lambda: [0 for _ in iter(int, 1)])\nt.start()"
        )
        assert r.status == "dead" and "threads" in r.stderr, r
        assert "background" not in r.stderr, r  # nothing else was running
        r = s.run("x + 1")  # rebuilt from the cells before the one that left a thread
        assert r.ok and r.stdout.strip() == "42", r


@pytest.mark.slow
def test_s4_disk_and_memory_quota_per_session(one: SandboxPool) -> None:
    """A session filling its disk is stopped at its own quota; a neighbour on the same worker
    still allocates 320 MB and one-shot runs still work."""
    small = Limits(timeout=20.0, memory=128 << 20, disk=64 << 20)
    neighbour = one.session(timeout=20.0)
    hog = one.session(limits=small)
    try:
        assert neighbour.run("x = 1").ok
        r = hog.run(
            "n = 0\ntry:\n"
            "    for i in range(1700):\n"
            "        with open(f'f{i}', 'wb') as fh:\n            fh.write(b'x' * (1 << 20))\n"
            "        n += 1\nexcept OSError as e:\n    print('refused', type(e).__name__)\n"
            "print('wrote', n)"
        )
        wrote = [int(w.split()[1]) for w in r.stdout.splitlines() if w.startswith("wrote")]
        assert r.status != "ok" or (wrote and wrote[0] < 400), r
        assert "quota" in r.stderr or "refused" in r.stdout, r  # the observation says why
        r = neighbour.run("b = bytearray(320 << 20)\nlen(b) >> 20")
        assert r.ok and r.stdout.strip() == "320", r
        assert one.run("print('alive')").stdout == "alive\n"
    finally:
        hog.close()
        neighbour.close()


def _forge_fork(pid_expr: str) -> str:
    """Agent code that replaces the session's fork handler with one reporting ``pid_expr``."""
    return (
        "import __main__, json, os, socket\n"
        "def evil(ctl, *rest):\n"
        f"    payload = json.dumps({{'pid': {pid_expr}}}).encode()\n"
        "    a, b = socket.socketpair()\n"
        "    fds = [a.fileno(), os.dup(1), os.dup(2)]\n"
        "    socket.send_fds(ctl, [len(payload).to_bytes(4, 'big') + payload], fds)\n"
        "    return ctl\n"
        "__main__._session_fork = evil\n"
    )


@pytest.mark.parametrize("target", ["victim", "worker"])
def test_s5_forged_fork_reply_kills_nobody_else(one: SandboxPool, target: str) -> None:
    gen = one.workers[0].generation
    victim = one.session(timeout=10.0)
    attacker = one.session(timeout=10.0)
    try:
        victim_pid = int(victim.run("import os\nv = 7\nos.getpid()").stdout)
        pid_expr = str(victim_pid) if target == "victim" else "os.getppid()"
        assert attacker.run(_forge_fork(pid_expr)).ok
        forged = attacker.fork()
        forged.close()  # closing what the worker took for the copy must hurt nobody
        r = victim.run("v * 6")
        assert r.ok and r.stdout.strip() == "42", r
        assert victim.rebuilds == 0, "the victim session was killed"
        assert one.workers[0].generation == gen, "the worker was killed and restarted"
    finally:
        victim.close()
        attacker.close()


def test_s6_junk_on_the_control_channel_stalls_nobody(one: SandboxPool) -> None:
    gen = one.workers[0].generation
    victim = one.session(timeout=10.0)
    attacker = one.session(timeout=1.0)
    try:
        assert victim.run("v = 7").ok
        # the worker finds its reply behind the junk: the cell ends normally, no stall
        r = attacker.run("import os\nos.write(3, b'\\x00\\x00\\x10\\x00x')")
        assert r.status == "ok", r
        r = attacker.run("os.write(3, b'\\xff\\xff\\xff\\xff' + b'junk' * 5000)")
        assert r.status == "ok", r
        r = victim.run("v * 6")
        assert r.ok and r.stdout.strip() == "42", r
        assert victim.rebuilds == 0
        assert one.workers[0].generation == gen, "the worker was restarted"
        assert attacker.run("1 + 1").stdout.strip() == "2"  # the attacker only hurt itself
    finally:
        victim.close()
        attacker.close()


@pytest.mark.slow
def test_s7_pools_never_share_uids() -> None:
    """Two pools whose worker slots differ by 16 (and any pools at all) get disjoint uids, so
    one pool's processes never count against the other's process limit."""
    a = SandboxPool(workers=1)
    for _ in range(15):
        next(worker_mod._slot_counter)
    b = SandboxPool(workers=1)
    try:
        ra = {(w.uid_base, w.uid_base + getattr(w, "n_uids", 64)) for w in a.workers}
        rb = {(w.uid_base, w.uid_base + getattr(w, "n_uids", 64)) for w in b.workers}
        for lo, hi in ra:
            for lo2, hi2 in rb:
                assert hi <= lo2 or hi2 <= lo, "two pools share uids"
        hog = a.session(timeout=20.0)
        done = threading.Event()

        def spawn_many() -> None:
            hog.run(
                "import subprocess, sys, time\n"
                "ps = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])"
                " for _ in range(50)]\ntime.sleep(4)"
            )
            done.set()

        t = threading.Thread(target=spawn_many)
        t.start()
        lo, hi = next(iter(ra))
        deadline = time.monotonic() + 15
        while len(_uid_of_procs(lo, hi)) < 40 and time.monotonic() < deadline:
            time.sleep(0.05)
        s = b.session(timeout=20.0)
        r = s.run(
            "import subprocess, sys\n"
            "ps = [subprocess.Popen([sys.executable, '-c', 'pass']) for _ in range(20)]\n"
            "print(sum(p.wait() == 0 for p in ps))"
        )
        assert r.ok and r.stdout.strip() == "20", r
        s.close()
        t.join()
        hog.close()
    finally:
        a.close()
        b.close()


@pytest.mark.slow
def test_s8_replay_after_a_timeout_stays_within_the_limit(pool: SandboxPool) -> None:
    with pool.session(timeout=1.0) as s:
        for _ in range(3):
            assert s.run("import time\ntime.sleep(0.8)").ok
        assert s.run("while True: pass").status == "timeout"
        start = time.monotonic()
        r = s.run("y = 2")
        elapsed = time.monotonic() - start
        # the old replay ran 2.4 s of history on top of the 1 s limit
        assert elapsed < 2.2, (elapsed, r)
        assert r.status == "dead" and "restarted empty" in r.stderr, r
        r = s.run("y = 2\ny")
        assert r.ok and r.stdout.strip() == "2"


def test_tracebacks_show_no_jail_frames(pool: SandboxPool) -> None:
    with pool.session() as s:
        r = s.run("def f():\n    return 1 / 0\nf()")
        assert "ZeroDivisionError" in r.stderr and "<cell>" in r.stderr
        assert "jail" not in r.stderr and "_run_cell" not in r.stderr, r.stderr
        r = s.run("def (")
        assert "SyntaxError" in r.stderr and "jail" not in r.stderr, r.stderr
    r = pool.run("raise KeyError('k')")
    assert "KeyError" in r.stderr and "jail" not in r.stderr, r.stderr


def test_s1_a_full_worker_refuses_rather_than_share_a_uid() -> None:
    """With room for 2 sessions (3 uids: one for one-shot runs), a third session is refused
    with a clear error instead of getting a neighbour's uid."""
    from agentgym.simulators.sandbox import SandboxFullError

    p = SandboxPool(workers=1)
    try:
        w = p.workers[0]
        w.n_uids = 3
        with w.lock:
            w.start()
        a, b = p.session(), p.session()
        uids = {int(s.run("import os\nos.getuid()").stdout) for s in (a, b)}
        assert len(uids) == 2
        with pytest.raises(SandboxFullError, match="sessions"):
            p.session()
        a.close()
        c = p.session()  # a closed session's uid is free again, with nothing of it left
        r = c.run("import os\nsorted(os.listdir('.'))")
        assert r.ok and r.stdout.strip() == "[]", r
        c.close()
        b.close()
    finally:
        p.close()
