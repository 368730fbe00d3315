"""Sessions are forked by the zygote, a quiet copy of the warm worker (see ``Zygote`` in
``simulators/sandbox/_jail.py``): what a session can learn of it, and that losing it loses
nothing."""

from __future__ import annotations

import json
import os
import signal
import time

from agentgym.simulators.sandbox import SandboxConfig, SandboxPool

from tests.sandbox.conftest import host_pid, leak_free

_PARENT = (
    "import os, json\n"
    "p = os.getppid()\n"
    "try:\n"
    "    os.kill(p, 0)\n"
    "    sig = 'sent'\n"
    "except PermissionError:\n"
    "    sig = 'refused'\n"
    "except ProcessLookupError:\n"
    "    sig = 'absent'\n"
    "print(json.dumps({'ppid': p, 'signal': sig, 'proc': os.path.exists(f'/proc/{p}/status'),\n"
    "                  'fds': sorted(int(f) for f in os.listdir('/proc/self/fd')),\n"
    "                  'uid': os.getuid()}))"
)


def _parent_view(s) -> dict:

    r = s.run(_PARENT)
    assert r.ok, r
    return json.loads(r.stdout)


def test_a_session_is_the_zygotes_child_and_can_neither_see_nor_signal_it(one) -> None:
    """The session's parent is the zygote (not the worker), a root process: the session cannot
    signal it or read its /proc entry, holds no fd of it (only stdin, stdout, stderr, its
    control socket and the fd of its own listing) and runs under its own uid."""
    w = one.workers[0]
    with leak_free(one):
        zygote = w.call({"op": "ping"}, 10.0)["zygote_pid"]
        assert zygote > 0
        with one.session() as s:
            seen = _parent_view(s)
        assert seen["ppid"] == zygote
        assert seen["signal"] == "refused" and seen["proc"] is False
        assert seen["fds"][:4] == [0, 1, 2, 3] and len(seen["fds"]) == 5, seen
        assert seen["uid"] != 0


def test_sessions_of_one_zygote_each_get_their_own_random_state(one) -> None:
    """The zygote forks without Python's at-fork hooks; the session still reseeds ``random``
    as those hooks would, so two sessions draw different numbers."""
    with leak_free(one):
        a, b = one.session(), one.session()
        try:
            draw = "import random\nprint(random.getrandbits(64))"
            ra, rb = a.run(draw), b.run(draw)
            assert ra.ok and rb.ok, (ra, rb)
            assert ra.stdout != rb.stdout
        finally:
            a.close()
            b.close()


def test_a_sessions_threading_knows_its_own_main_thread(one) -> None:
    """The other at-fork hook done by hand: ``threading``'s main thread takes the session's
    own thread id (not the zygote's), which is what a cell's tracing, logging or profiling
    reads when it names the thread."""
    with leak_free(one), one.session() as s:
        r = s.run(
            "import threading\n"
            "print(threading.main_thread().native_id == threading.get_native_id())"
        )
    assert r.ok and r.stdout == "True\n", r


def test_a_killed_zygote_is_replaced_and_its_sessions_live_on(one) -> None:
    """Killing the zygote loses nothing: sessions it forked keep their state, and new
    sessions open (the next through the worker itself, then through a new zygote)."""
    w = one.workers[0]
    with leak_free(one):
        old = one.session()
        try:
            assert old.run("x = 41").ok
            first = w.call({"op": "ping"}, 10.0)["zygote_pid"]
            os.kill(host_pid(one, first), signal.SIGKILL)
            later = [one.session() for _ in range(3)]
            try:
                for s in later:
                    assert s.run("y = 1\nprint(y)").stdout == "1\n"
                assert old.run("x + 1").stdout == "42\n"
                deadline = time.monotonic() + 30.0
                info = w.call({"op": "ping"}, 10.0)
                while info["zygote_pid"] in (first, -1) and time.monotonic() < deadline:
                    time.sleep(0.05)
                    info = w.call({"op": "ping"}, 10.0)
                assert info["zygote_pid"] not in (first, -1)
                with one.session() as s:
                    assert _parent_view(s)["ppid"] == info["zygote_pid"]
            finally:
                for s in later:
                    s.close()
        finally:
            old.close()


def test_without_a_zygote_the_worker_forks_sessions_itself() -> None:
    """``SandboxConfig(zygote=False)``: sessions are the worker's own children, confined the
    same way (own uid, no signal to the parent)."""
    with SandboxPool(workers=1, config=SandboxConfig(zygote=False)) as pool:
        info = pool.workers[0].call({"op": "ping"}, 10.0)
        assert info["zygote_pid"] == -1
        with pool.session() as s:
            seen = _parent_view(s)
            assert seen["ppid"] == info["pid"]
            assert seen["signal"] == "refused" and seen["uid"] != 0
            assert s.run("x = 2\nprint(x * 21)").stdout == "42\n"


def _kernel_collapses() -> bool:
    """Whether this kernel turns 4 kB pages into a 2 MB one on ``MADV_COLLAPSE`` (6.1+, THP
    not set to ``never``): tried on memory of the test's own."""
    import ctypes
    import mmap

    size = 4 << 20
    region = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        region.write(b"x" * size)
        base = ctypes.addressof(ctypes.c_char.from_buffer(region))
        first = -(-base // (2 << 20)) * (2 << 20)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        return libc.madvise(first, 2 << 20, 25) == 0  # MADV_COLLAPSE
    finally:
        region.close()


def test_the_zygotes_heap_is_in_huge_pages_where_the_kernel_allows(one) -> None:
    """Every session is a fork of the zygote, and a fork copies one page-table entry per
    page of the parent: the zygote asks for its memory in 2 MB pages (``MADV_COLLAPSE``),
    so a fork copies one entry per 2 MB of its heap instead of 512."""
    import pytest

    if not _kernel_collapses():
        pytest.skip("this kernel does not collapse pages into huge ones (MADV_COLLAPSE)")
    w = one.workers[0]
    with leak_free(one):
        with one.session() as s:
            assert s.run("1").ok
        zygote = host_pid(one, w.call({"op": "ping"}, 10.0)["zygote_pid"])
        with open(f"/proc/{zygote}/smaps_rollup") as fh:
            huge = next(int(line.split()[1]) for line in fh if line.startswith("AnonHugePages:"))
        assert huge >= 4 << 10, f"{huge} kB of the zygote's memory in huge pages"


_STDIO_SEEN = (
    "import sys\n"
    "made = getattr(sys.modules['__main__'], '_ZYGOTE_STDIO', None)\n"
    "print(made is not None and (sys.stdin, sys.stdout, sys.stderr) == made,\n"
    "      sys.stdin.read() == '', sys.stdout.fileno(), sys.stderr.fileno())\n"
    "print('to stderr', file=sys.stderr)"
)


def test_a_session_takes_the_stdio_the_zygote_made_and_it_works(one) -> None:
    """The zygote makes the sessions' ``sys.stdin``/``stdout``/``stderr`` once, before its
    first fork, so a new session touches them instead of building its own (every object it
    builds or first touches is a page copied from the zygote): a session's stdio are those
    objects, on its own fds 0-2, stdin at end of file and both outputs reaching the cell."""
    with leak_free(one):
        a, b = one.session(), one.session()
        try:
            for s in (a, b):
                r = s.run(_STDIO_SEEN)
                assert r.ok, r
                assert r.stdout == "True True 1 2\n" and r.stderr == "to stderr\n", r
        finally:
            a.close()
            b.close()


_ENV_SEEN = (
    "import json, os, signal, subprocess\n"
    "inherited = dict(l.split('=', 1) for l in subprocess.run(['env'], capture_output=True,\n"
    "                 text=True).stdout.splitlines())\n"
    "handlers = [signal.getsignal(s) == signal.SIG_DFL\n"
    "            for s in (signal.SIGPIPE, signal.SIGTERM, signal.SIGINT, signal.SIGCHLD)]\n"
    "print(json.dumps({'environ': dict(os.environ), 'inherited': inherited,\n"
    "                  'cwd': os.getcwd(), 'default': handlers}))"
)


def test_a_session_has_only_its_own_environment_and_default_signal_actions(one) -> None:
    """The zygote sets the sessions' environment once, so a session changes only its work
    dir's two variables (each change copies pages of the zygote's): still, each session's
    environment, in Python and in what a process it starts inherits, is exactly the six
    variables, with HOME and TMPDIR its own work dir; and the signals the worker handles or
    ignores are back at their default action (set without ``signal.signal``'s enum wrapper)."""
    with leak_free(one):
        a, b = one.session(), one.session()
        try:
            seen = []
            for s in (a, b):
                r = s.run(_ENV_SEEN)
                assert r.ok, r
                seen.append(json.loads(r.stdout))
        finally:
            a.close()
            b.close()
    for view in seen:
        cwd = view["cwd"]
        expected = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": cwd, "TMPDIR": cwd,
                    "LANG": "C.UTF-8", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}  # fmt: skip
        assert view["environ"] == expected and view["inherited"] == expected, view
        assert view["default"] == [True, True, True, True], view
    assert seen[0]["cwd"] != seen[1]["cwd"]


def test_what_a_cell_wrote_to_stderr_before_it_hung_reaches_the_caller(one) -> None:
    """A session's stderr is line-buffered, as a terminal's is: a traceback or a note written
    before a cell hangs is in the result of the cell killed at its timeout, and the session
    goes on."""
    with leak_free(one), one.session() as s:
        hung = s.run(
            "import sys, time\nsys.stderr.write('before the hang\\n')\ntime.sleep(60)",
            timeout=1.0,
        )
        after = s.run("print('next')")
    assert hung.status == "timeout" and hung.stderr == "before the hang\n", hung
    assert after.ok and after.stdout == "next\n", after


def test_what_a_cell_printed_before_it_hung_reaches_the_caller(one) -> None:
    """stdout is line-buffered too: the lines a session cell or a one-shot run printed before
    it hung are in the result of the run killed at its timeout (a block buffer died with
    the process: the agent saw an empty stdout and could not tell how far its code got). The
    session goes on, rebuilt."""
    hang = "import time\nfor i in range(3):\n    print('step', i)\ntime.sleep(60)"
    with leak_free(one):
        with one.session() as s:
            hung = s.run(hang, timeout=1.0)
            after = s.run("print('next')")
        ran = one.run(hang, timeout=1.0)
    for r in (hung, ran):
        assert r.status == "timeout" and r.stdout == "step 0\nstep 1\nstep 2\n", r
    assert after.ok and after.stdout == "next\n", after


def test_a_cell_that_closes_its_stdio_leaves_the_session_working(one) -> None:
    """A cell may close ``sys.stdin``, ``sys.stdout`` and ``sys.stderr`` (or set them to
    ``None``): the session's fds 0-2 stay open, so the processes a later cell starts still
    read an empty stdin and reach the caller, and the next cell gets working streams again
    (its value is printed, an error's traceback shown), its variables kept. Before, the
    next error ended the session (its traceback went to a closed stream)."""
    with leak_free(one), one.session() as s:
        closed = s.run("import sys\nkept = 7\nsys.stdin.close(); sys.stdout.close()\n"
                       "sys.stderr.close()")  # fmt: skip
        child = s.run("import subprocess\n"
                      "subprocess.run(['sh', '-c', 'cat; echo out; echo err >&2']).returncode")  # fmt: skip
        s.run("import sys\nsys.stdout = None; sys.stderr = None")
        failing = s.run("kept + 1\nraise KeyError('shown')")
        value = s.run("kept")
    assert closed.ok, closed
    assert child.ok and child.stdout == "out\n0\n" and child.stderr == "err\n", child
    assert not failing.ok and failing.status != "dead", failing
    assert "KeyError: 'shown'" in failing.stderr, failing
    assert value.ok and value.stdout == "7\n", value


def test_a_cell_that_raises_system_exit_fails_alone_and_says_why(one) -> None:
    """``sys.exit`` in a cell (even with stderr closed first) fails that cell with a note on
    stderr, not the session: the next cell runs with the variables kept."""
    with leak_free(one), one.session() as s:
        exited = s.run("import sys\nkept = 7\nsys.exit(3)")
        closed = s.run("import sys\nsys.stderr.close()\nraise SystemExit('bye')")
        value = s.run("kept")
    for r in (exited, closed):
        assert not r.ok and r.status != "dead", r
        assert r.stderr == "SystemExit is not allowed in a session cell\n", r
    assert value.ok and value.stdout == "7\n", value
