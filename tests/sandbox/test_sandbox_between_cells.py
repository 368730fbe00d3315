"""No agent code runs between cells, whatever the agent arms or sends (issue 38).

A session is frozen (cgroup v2 freezer, on the whole lineage) whenever none of its
operations runs: SIGCONT from a fork of the same uid cannot thaw it. Signals are blocked
between cells and whatever arrived meanwhile is dropped before the next cell, so a timer
that fell due while the session waited runs no handler before that cell either.
"""

from __future__ import annotations

import json
import time

import pytest
from agentgym.simulators.sandbox import SandboxPool

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("one_leak_free")]


_TICKING = (
    "import signal, sys, time, json\n"
    "ticks = []\n"
    "def busy(*_):\n"
    "    ticks.append(time.time())\n"
    "    end = time.process_time() + 0.005\n"
    "    while time.process_time() < end:\n"
    "        pass\n"
    "signal.signal(signal.SIGALRM, busy)\n"
    "signal.setitimer(signal.ITIMER_REAL, 0.1, 0.1)\n"
    # what agent code can do to its own interpreter: a profile hook runs after every call,
    # so the moment the session loop blocks signals, the hook unblocks SIGALRM again
    "def undo(frame, event, arg):\n"
    "    if event == 'c_return' and arg is signal.pthread_sigmask:\n"
    "        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGALRM])\n"
    "sys.setprofile(undo)\n"
    "time.sleep(0.35)\n"
    "print(len(ticks))"
)


def test_a_fork_cannot_wake_its_parent_between_cells(one: SandboxPool) -> None:
    """A session arms a timer whose handler burns CPU (and keeps SIGALRM unblocked); its
    fork sends it SIGCONT. Before, the parent, stopped only by SIGSTOP, ran on after the
    fork's cell: 30 ticks and 1.5 s of CPU with no cell running. The lineage is frozen now."""
    a = one.session(timeout=10.0)
    try:
        first = a.run(_TICKING)
        assert first.ok and int(first.stdout) >= 1, first  # the timer does tick in a cell
        fork = a.fork()
        try:
            woke = fork.run(
                "import os, signal\nos.kill(os.getppid(), signal.SIGCONT)\nprint('sent')"
            )
            assert woke.ok and woke.stdout == "sent\n", woke
            returned = time.time()
            time.sleep(1.5)  # the time between two cells (the scenario, not a wait)
            resumed = time.time()
            second = a.run(
                "signal.setitimer(signal.ITIMER_REAL, 0)\nsys.setprofile(None)\n"
                "print(json.dumps(ticks))"
            )
            assert second.ok, second
            idle = [t for t in json.loads(second.stdout) if returned + 0.01 < t < resumed - 0.01]
            assert idle == [], f"{len(idle)} timer ticks ran agent code between two cells"
        finally:
            fork.close()
    finally:
        a.close()


_TIMERS = r"""
import ctypes, json, signal, time
fired = []
for sig in (signal.SIGALRM, signal.SIGUSR1, signal.SIGCHLD):
    signal.signal(sig, lambda s, f: fired.append(signal.Signals(s).name))
signal.setitimer(signal.ITIMER_REAL, 0.2)           # a one-shot interval timer
libc = ctypes.CDLL(None, use_errno=True)
class Sigevent(ctypes.Structure):
    _fields_ = [('value', ctypes.c_void_p), ('signo', ctypes.c_int), ('notify', ctypes.c_int),
                ('pad', ctypes.c_int * 12)]
class Timespec(ctypes.Structure):
    _fields_ = [('s', ctypes.c_long), ('ns', ctypes.c_long)]
class Itimerspec(ctypes.Structure):
    _fields_ = [('interval', Timespec), ('value', Timespec)]
timer = ctypes.c_void_p()
assert libc.timer_create(1, ctypes.byref(Sigevent(None, signal.SIGUSR1, 0)), ctypes.byref(timer)) == 0
assert libc.timer_settime(timer, 0, ctypes.byref(Itimerspec(Timespec(0, 0), Timespec(0, 200_000_000))), None) == 0
print('armed')
"""


def test_a_timer_that_falls_due_between_cells_runs_no_handler_before_the_next(
    one: SandboxPool,
) -> None:
    """An interval timer and a POSIX timer armed in a cell fall due while the session waits.
    Before, their handlers ran as soon as the next call woke the session, before its cell;
    now the signals are dropped: the next cell starts with nothing having run."""
    with one.session(timeout=10.0) as s:
        armed = s.run(_TIMERS)
        assert armed.ok and armed.stdout == "armed\n", armed
        time.sleep(1.0)  # both timers fall due in here (the scenario, not a wait)
        after = s.run("print(json.dumps(fired))")
        assert after.ok and json.loads(after.stdout) == [], after
        again = s.run(  # and a timer still works inside a cell
            "signal.setitimer(signal.ITIMER_REAL, 0.05)\ntime.sleep(0.5)\nprint(json.dumps(fired))"
        )
        assert again.ok and json.loads(again.stdout) == ["SIGALRM"], again


def test_a_session_is_frozen_whenever_no_call_of_its_lineage_runs(one: SandboxPool) -> None:
    """The freezer state itself, read on the host: frozen once opened, after a cell and after
    a fork; thawed while a cell runs."""
    import os
    import threading

    a = one.session(timeout=10.0)
    try:
        uid = int(a.run("import os, time\nos.getuid()").stdout)
        (unified,) = [p for p in one.workers[0].cgroup.paths if "/unified/" in p]
        events = os.path.join(unified, f"u{uid}", "cgroup.events")

        def becomes(want: str) -> str:
            deadline = time.monotonic() + 30.0  # freezing completes asynchronously
            while True:
                with open(events) as fh:
                    state = dict(line.split() for line in fh)["frozen"]
                if state == want or time.monotonic() > deadline:
                    return state

        assert becomes("1") == "1"
        fork = a.fork()
        assert becomes("1") == "1"
        cell = threading.Thread(target=fork.run, args=("time.sleep(3)",))
        cell.start()
        assert becomes("0") == "0"  # thawed for the call
        cell.join()
        assert becomes("1") == "1"
        fork.close()
    finally:
        a.close()
