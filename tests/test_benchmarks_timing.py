"""The benchmarks' CPU reader: what it reports for a process is what the kernel counts."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from benchmarks.timing import process_cpu


def test_a_process_cpu_is_its_user_plus_system_time_and_its_parent():
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:  # some CPU of both kinds to count
        os.stat(".")
    before = os.times()
    got = process_cpu(os.getpid())
    after = os.times()
    assert got is not None
    ppid, cpu = got
    assert ppid == os.getppid()
    # /proc counts in clock ticks: within one tick of each of user and system time
    tick = 1 / os.sysconf("SC_CLK_TCK")
    assert before.user + before.system - 2 * tick <= cpu <= after.user + after.system + 2 * tick
    assert cpu >= 0.3 - 2 * tick


def test_a_process_that_has_ended_reads_as_none():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: its /proc entry is gone
    assert process_cpu(child.pid) is None
    assert process_cpu("self") is not None
