"""The sandbox's limits hold at their numbers: the deadline, the output cap, the memory cap.

The hostile tests check that a limit stops a run; these pin where it stops it. Durations are
the ones the sandbox itself measures for the run (``ExecResult.duration``), compared with the
limit plus a generous slack, so a deadline stretched by a second or more fails the test.
"""

from __future__ import annotations

import time

import pytest
from agentgym.simulators.sandbox import Limits, SandboxPool

pytestmark = pytest.mark.sandbox

SLACK_S = 2.0  # scheduling on a loaded two-core host; a deadline stretched to 3 s or more fails


def test_a_run_past_its_deadline_ends_at_the_deadline(pool: SandboxPool):
    r = pool.run("while True:\n    pass\n", timeout=1.0)
    assert r.status == "timeout"
    assert 1.0 <= r.duration < 1.0 + SLACK_S


def test_a_run_within_its_deadline_finishes_ok(pool: SandboxPool):
    r = pool.run("import time\ntime.sleep(0.2)\nprint('done')\n", timeout=3.0)
    assert (r.status, r.stdout) == ("ok", "done\n")
    assert 0.2 <= r.duration < 3.0


def test_output_is_cut_at_the_cap_and_the_rest_is_counted(pool: SandboxPool):
    limits = Limits(output=1000)
    r = pool.run("import sys\nsys.stdout.write('x' * 5000)\n", limits=limits, timeout=5.0)
    assert r.status == "ok"
    assert r.stdout == "x" * 1000
    assert r.stdout_dropped == 4000 and r.truncated
    assert r.text().endswith("[... 4000 more bytes of stdout dropped]")


def test_output_exactly_at_the_cap_is_kept_whole(pool: SandboxPool):
    r = pool.run("import sys\nsys.stdout.write('y' * 1000)\n", limits=Limits(output=1000))
    assert (r.status, r.stdout, r.stdout_dropped, r.truncated) == ("ok", "y" * 1000, 0, False)


def test_dropping_exactly_sixteen_times_the_cap_is_not_yet_a_flood(pool: SandboxPool):
    r = pool.run("import sys\nsys.stdout.write('w' * 17000)\n", limits=Limits(output=1000))
    assert r.status == "ok"
    assert r.stdout == "w" * 1000 and r.stdout_dropped <= 16000


def test_an_output_flood_is_stopped_just_past_sixteen_times_the_cap(pool: SandboxPool):
    cap = 100_000
    code = "import sys\nwhile True:\n    sys.stdout.write('z' * 65536)\n    sys.stdout.flush()\n"
    r = pool.run(code, limits=Limits(output=cap), timeout=20.0)
    assert r.status == "output_limit"
    assert r.stdout == "z" * cap
    # stopped on the pipe read (at most 64 KiB) that took the dropped bytes past 16 x cap
    assert 16 * cap < r.stdout_dropped <= 16 * cap + 65536
    assert r.duration < 20.0


def test_memory_past_the_cap_is_refused_and_below_it_allowed(pool: SandboxPool):
    limits = Limits(memory=128 << 20)
    small = pool.run("x = bytearray(16 << 20)\nprint(len(x))\n", limits=limits, timeout=10.0)
    assert (small.status, small.stdout) == ("ok", f"{16 << 20}\n")
    big = pool.run("x = bytearray(1 << 30)\nprint('ALLOCATED')\n", limits=limits, timeout=10.0)
    assert big.status in ("error", "killed")
    assert "ALLOCATED" not in big.stdout


RESULT_CAP = 16 << 20  # bytes of graded return values a run may send back


def test_a_graded_result_under_the_16_mib_cap_comes_back_whole(pool: SandboxPool):
    n = RESULT_CAP - (1 << 20)
    r, results = pool.grade_raw("def f(n):\n    return 'x' * n\n", "f", [[n]], timeout=30.0)
    assert r.status == "ok", r.stderr
    assert results[0] is not None and results[0]["ok"] and len(results[0]["value"]) == n


def test_a_graded_result_over_the_16_mib_cap_is_dropped(pool: SandboxPool):
    n = RESULT_CAP + (256 << 10)  # past the cap by more than one 64 KiB pipe read
    r, results = pool.grade_raw("def f(n):\n    return 'x' * n\n", "f", [[n]], timeout=30.0)
    assert r.status == "ok", r.stderr
    assert results == [None]  # cut at the cap: no well-formed result line, so no result


_TICKS = (
    "import time\n"
    "for i in range(1, 61):\n"
    "    time.sleep(STEP)\n"
    "    print(time.monotonic(), flush=True)\n"
    "print('MARKER')\n"
)


def test_a_session_call_ends_at_its_own_deadline(pool: SandboxPool):
    """A call with ``timeout=T`` in a session opened with a long default: its cell prints the
    machine's monotonic clock (one clock for the jail and the test) every T/20 for up to 3T,
    then a marker. It ends with status timeout, and the cell was still printing past 0.7T
    after the call began (not cut early, e.g. at half the deadline) and never past 1.6T (not
    doubled, not ignored: the marker after 3T never comes). The bounds are on times the cell
    itself read, so a loaded machine that is late to start the cell or to read its output
    cannot move them. A cell whose work ends at 0.6T in the same session is not cut."""
    t = 4.0
    with pool.session(timeout=60.0) as s:
        assert s.run("x = 'kept'").ok
        began = time.monotonic()
        r = s.run(_TICKS.replace("STEP", str(t / 20)), timeout=t)
        assert r.status == "timeout", r
        assert "MARKER" not in r.stdout
        printed = [float(x) - began for x in r.stdout.split()]
        assert printed and printed == sorted(printed), r.stdout
        assert printed[-1] >= 0.7 * t, f"the cell's last tick was {printed[-1]:.2f} s in"
        assert printed[-1] < 1.6 * t, f"the cell still ran {printed[-1]:.2f} s in"
        inside = s.run(f"import time\ntime.sleep({0.6 * t})\nprint(x)", timeout=t)
        assert (inside.status, inside.stdout) == ("ok", "kept\n"), inside
