"""Nothing is orphaned, and nothing slow happens on the worker's loop (issue 38).

The sweep after a call counts the processes that are really alive in the lineage's cgroup
against the members that are really alive; closing a session kills everything of its
lineage that no live member is. Removing a closed session's files happens in a helper
process while the worker serves other cells; its uid is not reused until the removal ends.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from agentgym.simulators.sandbox import SandboxPool

from tests.sandbox.conftest import host_pid, leak_free

pytestmark = [pytest.mark.sandbox]

_GONE = (
    "try:\n    state = open(f'/proc/{PID}/stat').read().rsplit(')', 1)[1].split()[0]\n"
    "except OSError:\n    state = 'gone'\n"
    "print('gone' if state in ('gone', 'Z', 'X') else 'alive')"
)


@pytest.mark.usefixtures("one_leak_free")
def test_a_child_started_after_killing_a_fork_dies_with_the_cell(one: SandboxPool) -> None:
    """A session kills and reaps its own fork, then starts a background child. Before, the
    sweep compared the cgroup's count with the registered members (the dead fork still
    counted), so the child ran on after the cell and after close()."""
    a = one.session(timeout=10.0)
    fork = a.fork()
    try:
        fpid = int(fork.run("import os\nos.getpid()").stdout)
        r = a.run(
            "import os, signal, subprocess, sys\n"
            f"os.kill({fpid}, signal.SIGKILL)\nos.waitpid({fpid}, 0)\n"
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
            "print(p.pid)"
        )
        assert r.ok, r
        child = int(r.stdout)
        assert "1 background process(es) still running when the cell ended were killed" in (
            r.stderr
        ), r
        check = _GONE.replace("PID", str(child))
        deadline = time.monotonic() + 60.0  # the kill is sent; the kernel runs it when it can
        r = a.run(check)
        while r.stdout.strip() == "alive" and time.monotonic() < deadline:
            time.sleep(0.05)
            r = a.run(check)
        assert r.stdout.strip() == "gone", r
        assert fork.run("1").status == "dead"  # the killed fork is known to be gone
    finally:
        fork.close()
        a.close()  # no_leaks: no process of the uid is left


@pytest.mark.usefixtures("one_leak_free")
def test_closing_the_last_live_member_ends_the_lineage(one: SandboxPool) -> None:
    """A session kills its fork, then is closed. Before, the dead fork still counted as a
    member: the lineage (uid, cgroups, dir) lived on until someone closed the dead fork's
    handle. Now closing the last live member ends the lineage at once."""
    w = one.workers[0]
    a = one.session(timeout=10.0)
    fork = a.fork()
    try:
        fpid = int(fork.run("import os\nos.getpid()").stdout)
        assert a.run(
            f"import os, signal\nos.kill({fpid}, signal.SIGKILL)\nos.waitpid({fpid}, 0)"
        ).ok
        a.close()
        info = w.call({"op": "ping"}, 30.0)
        assert (info["sessions"], info["lineages"]) == (0, 0), info
    finally:
        a.close()
        fork.close()


@pytest.mark.usefixtures("one_leak_free")
def test_a_dozen_background_processes_all_die_with_the_cell(one: SandboxPool) -> None:
    """Twelve sleepers left by a cell are all killed when it ends (the sweep reads the
    cgroup's count of tasks, two digits here, before it looks at which they are)."""
    with one.session(timeout=20.0) as s:
        r = s.run(
            "import subprocess, sys\n"
            "ps = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
            "      for _ in range(12)]\nprint(' '.join(str(p.pid) for p in ps))"
        )
        assert r.ok and "12 background process(es)" in r.stderr, r
        pids = r.stdout.split()
        check = (
            "import os\nalive = []\n"
            f"for pid in {pids!r}:\n"
            "    try:\n"
            "        state = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[0]\n"
            "    except OSError:\n        continue\n"
            "    if state not in ('Z', 'X'):\n        alive.append(pid)\nprint(len(alive))"
        )
        deadline = time.monotonic() + 60.0
        r = s.run(check)
        while r.stdout.strip() != "0" and time.monotonic() < deadline:
            time.sleep(0.05)
            r = s.run(check)
        assert r.ok and r.stdout.strip() == "0", r


_FORGE_GRANDCHILD = r"""
import __main__, json, os, socket, subprocess, sys
def evil(ctl, *rest):
    # runs during the fork call: a child that starts a grandchild, both alive until the
    # call ends; the reply names the grandchild (same uid, not a child of this process)
    mid = subprocess.Popen([sys.executable, '-c',
        "import subprocess, sys, time\n"
        "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print(g.pid, flush=True)\ntime.sleep(60)"], stdout=subprocess.PIPE, text=True)
    payload = json.dumps({'pid': int(mid.stdout.readline())}).encode()
    a, b = socket.socketpair()
    fds = [a.fileno(), os.dup(1), os.dup(2)]
    socket.send_fds(ctl, [len(payload).to_bytes(4, 'big') + payload], fds)
    return ctl
__main__._session_fork = evil
print('armed')
"""


@pytest.mark.usefixtures("one_leak_free")
def test_a_forged_fork_naming_a_grandchild_is_refused(one: SandboxPool) -> None:
    """The worker adopts as a fork only a live child of the session process, of its uid: a
    forged reply naming a live grandchild (same uid, not a child) ends the forging session
    and adopts nothing; the directory made for the copy goes, the lineage's other member
    stays."""
    w = one.workers[0]
    a = one.session(timeout=10.0)
    branch = a.fork()
    try:
        r = a.run(_FORGE_GRANDCHILD)
        assert r.ok and r.stdout == "armed\n", r
        before = w.call({"op": "ping"}, 10.0)["sessions"]
        forged = a.fork()
        forged.close()
        assert w.call({"op": "ping"}, 10.0)["sessions"] == before - 1  # a gone, nothing adopted
        r = branch.run("import os\nsorted(os.listdir('..')) == [os.path.basename(os.getcwd())]")
        assert r.ok and r.stdout == "True\n", r  # the lineage dir holds the branch's own dir only
    finally:
        branch.close()
        a.close()


def test_a_big_removal_does_not_hold_a_neighbours_cell(one: SandboxPool) -> None:
    """Closing a session with thousands of files used to run ``rmtree`` on the worker's
    event loop: every neighbour's cell waited for it (3.6-5 s for 250,000 files). The
    removal is done by a helper process now. With that process paused, a neighbour's cell
    completes while the removal is still pending (so it cannot have waited for it), and the
    closed session's uid is not handed out meanwhile; resumed, it leaves nothing behind."""
    w = one.workers[0]
    with leak_free(one):
        neighbour = one.session(timeout=30.0)
        hog = one.session(timeout=60.0)
        try:
            assert neighbour.run("x = 1").ok
            r = hog.run(
                "import os\nfor i in range(20):\n    os.mkdir(f'd{i}')\n"
                "    for j in range(200):\n        open(f'd{i}/f{j}', 'w').close()\n"
                "os.getuid()"
            )
            assert r.ok, r
            hog_uid = int(r.stdout)
            remover = host_pid(one, w.call({"op": "ping"}, 10.0)["remover_pid"])
            os.kill(remover, signal.SIGSTOP)
            try:
                hog.close()  # answered at once: the files only moved to the trash
                r = neighbour.run("x + 1")
                assert r.ok and r.stdout == "2\n", r
                info = w.call({"op": "ping"}, 20.0)  # (waits a few seconds: uid still held)
                assert info["removing"] >= 1 and info["trash"] >= 1, info
                assert info["reaping"] == 1, "the closed session's uid was released early"
                other = one.session()
                try:
                    assert int(other.run("import os\nos.getuid()").stdout) != hog_uid
                finally:
                    other.close()
            finally:
                os.kill(remover, signal.SIGCONT)
        finally:
            hog.close()
            neighbour.close()


def test_a_dead_remover_is_replaced_and_finishes_the_work(one: SandboxPool) -> None:
    """If the remover process dies with removals pending, the worker starts another and
    gives it what was left."""
    w = one.workers[0]
    with leak_free(one):
        s = one.session()
        assert s.run("open('f', 'w').write('x' * 1000)").ok
        first = w.call({"op": "ping"}, 10.0)["remover_pid"]
        remover = host_pid(one, first)
        os.kill(remover, signal.SIGSTOP)
        s.close()
        os.kill(remover, signal.SIGKILL)
        deadline = time.monotonic() + 30.0
        info = w.call({"op": "ping"}, 10.0)
        while info["remover_pid"] == first and time.monotonic() < deadline:
            time.sleep(0.05)
            info = w.call({"op": "ping"}, 10.0)
        assert info["remover_pid"] != first


def test_many_closes_at_once_each_free_their_uid(one: SandboxPool) -> None:
    """Sixteen sessions closed from threads together: all their dirs and uids come back."""
    with leak_free(one):
        sessions = [one.session() for _ in range(16)]
        for s in sessions:
            assert s.run("open('f', 'w').write('x')").ok
        threads = [threading.Thread(target=s.close) for s in sessions]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
