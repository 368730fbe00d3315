"""Sessions as the unit of isolation and scheduling (issue 21), through the real pool.

Each test plays what an RL run or a hostile agent does with many sessions at once: cells of
different sessions must run at the same time, share nothing (IPC included), run no agent code
between cells, and keep the jail's internals out of what the model sees.
"""

from __future__ import annotations

import json
import os
import threading

import pytest
from agentgym.simulators.sandbox import SandboxPool, Session

pytestmark = [pytest.mark.sandbox]

_STAMPED_SLEEP = (
    "import time, json\nt0 = time.time()\ntime.sleep({secs})\nprint(json.dumps([t0, time.time()]))"
)


def _run_together(sessions: list[Session], code: str) -> list:
    """Send one cell to every session from its own thread, all released at once."""
    results: list = [None] * len(sessions)
    gate = threading.Barrier(len(sessions))

    def go(i: int) -> None:
        gate.wait()
        results[i] = sessions[i].run(code, timeout=30.0)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(sessions))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def _overlap(results: list) -> tuple[float, float]:
    """(latest start, earliest end) of cells that printed [start, end]: they all ran at the
    same moment exactly when the first is before the second."""
    spans = [json.loads(r.stdout) for r in results]
    return max(s for s, _ in spans), min(e for _, e in spans)


def _sessions(pool: SandboxPool, n: int) -> list[Session]:
    sessions = [pool.session(timeout=30.0) for _ in range(n)]
    for s in sessions:
        assert s.run("import time, json").ok
    return sessions


@pytest.mark.usefixtures("no_leaks")
def test_sleeping_cells_of_eight_sessions_on_one_worker_overlap(one: SandboxPool) -> None:
    """Before, a worker ran one cell at a time: eight 1 s sleeps ended at 1, 2, ... 8 s."""
    sessions = _sessions(one, 8)
    try:
        results = _run_together(sessions, _STAMPED_SLEEP.format(secs=1.0))
        assert [r.status for r in results] == ["ok"] * 8, results
        latest_start, earliest_end = _overlap(results)
        assert latest_start < earliest_end, "some cell started only after another had ended"
    finally:
        for s in sessions:
            s.close()


@pytest.mark.slow
@pytest.mark.usefixtures("no_leaks")
def test_sleeping_cells_of_64_sessions_overlap(pool: SandboxPool) -> None:
    sessions = _sessions(pool, 64)
    try:
        results = _run_together(sessions, _STAMPED_SLEEP.format(secs=2.0))
        assert [r.status for r in results] == ["ok"] * 64, [r for r in results if not r.ok]
        latest_start, earliest_end = _overlap(results)
        assert latest_start < earliest_end
    finally:
        for s in sessions:
            s.close()


@pytest.mark.usefixtures("no_leaks")
def test_one_shot_runs_overlap_and_never_share_a_uid(one: SandboxPool) -> None:
    code = (
        "import os, time, json\n"
        "t0 = time.time()\n"
        "time.sleep(0.5)\n"
        "print(json.dumps([t0, time.time(), os.getuid()]))"
    )
    results = one.run_many([code] * 6, timeout=30.0)
    assert [r.status for r in results] == ["ok"] * 6, results
    spans = [json.loads(r.stdout) for r in results]
    assert max(s for s, _, _ in spans) < min(e for _, e, _ in spans)
    assert len({uid for _, _, uid in spans}) == 6, "two runs alive at once shared a uid"


@pytest.mark.usefixtures("no_leaks")
def test_a_spinning_neighbour_does_not_hold_back_other_cells(one: SandboxPool) -> None:
    """A cell that spins to its timeout used to block every later request on its worker."""
    spinner, other = one.session(timeout=4.0), one.session(timeout=30.0)
    try:
        assert spinner.run("x = 1").ok and other.run("y = 0").ok
        started = threading.Event()
        outcome: list = []

        def spin() -> None:
            started.set()
            outcome.append(spinner.run("while True:\n    pass"))

        t = threading.Thread(target=spin)
        t.start()
        started.wait()
        for i in range(4):
            r = other.run("y += 1\ny")
            assert r.ok and r.stdout.strip() == str(i + 1), r
        assert not outcome, "the neighbour's cells waited for the spinning cell to time out"
        t.join()
        assert outcome[0].status == "timeout"
    finally:
        spinner.close()
        other.close()


_IPC_WRITER = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
made = {}
for name, args in (("shmget", (0x5EC, 1 << 20, 0o1600)), ("msgget", (0x5EC, 0o1600)),
                   ("semget", (0x5EC, 1, 0o1600))):
    ident = getattr(libc, name)(*args)
    made[name] = [ident, ctypes.get_errno()]
    if name == "shmget" and ident >= 0:
        addr = libc.shmat(ident, None, 0)
        ctypes.memmove(addr, b"SECRET-FROM-A", 13)
try:
    rt = ctypes.CDLL("librt.so.1", use_errno=True)
    made["mq_open"] = [rt.mq_open(b"/secret", 0o100 | 2, 0o600, None), ctypes.get_errno()]
except OSError:
    pass
import json
print(json.dumps(made))
"""

_IPC_READER = r"""
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
seen = {kind: open(f"/proc/sysvipc/{kind}").read().splitlines()[1:]
        for kind in ("shm", "msg", "sem")}
ident = libc.shmget(0x5EC, 0, 0)
if ident >= 0:
    seen["secret"] = ctypes.string_at(libc.shmat(ident, None, 0o10000), 13).decode()
print(json.dumps(seen))
"""


@pytest.mark.usefixtures("no_leaks")
def test_no_ipc_object_is_shared_between_sessions_or_runs(one: SandboxPool) -> None:
    """Sessions and one-shot runs of a worker shared its IPC namespace: a segment that
    session A wrote was readable by session B, by one-shot runs and by the next episode."""
    import errno

    a, b = one.session(), one.session()
    try:
        wrote = a.run(_IPC_WRITER)
        assert wrote.ok, wrote
        made = json.loads(wrote.stdout)
        assert {"shmget", "msgget", "semget"} <= set(made)
        for name, (ident, err) in made.items():
            assert ident == -1 and err == errno.EPERM, (name, made)
        nothing = {"shm": [], "msg": [], "sem": []}
        for reader in (b.run(_IPC_READER), one.run(_IPC_READER)):
            assert reader.ok, reader
            assert json.loads(reader.stdout) == nothing
        a.close()
        c = one.session()  # the next episode, maybe on A's uid
        after = c.run(_IPC_READER)
        c.close()
        assert after.ok and json.loads(after.stdout) == nothing
    finally:
        a.close()
        b.close()


_TIMER = (
    "import signal, time, json\n"
    "ticks = []\n"
    "def busy(*_):\n"
    "    ticks.append(time.time())\n"
    "    end = time.process_time() + 0.005\n"
    "    while time.process_time() < end:\n"
    "        pass\n"
    "signal.signal(signal.SIGALRM, busy)\n"
    "signal.setitimer(signal.ITIMER_REAL, 0.1, 0.1)\n"
    "time.sleep(0.35)\n"
    "print(json.dumps([len(ticks), time.time()]))"
)


@pytest.mark.usefixtures("no_leaks")
def test_no_agent_code_runs_between_cells(one: SandboxPool) -> None:
    """A timer armed by a cell used to fire ten times a second while no cell ran, each
    tick running agent code (here 5 ms of CPU: more starves the cell itself on a loaded
    host) outside any cell's time and CPU limits."""
    import time

    with one.session() as s:
        first = s.run(_TIMER)
        returned = time.time()  # the session is stopped before its answer is sent
        assert first.ok, first
        ticks_then, _ = json.loads(first.stdout)
        assert ticks_then >= 2  # the timer does fire while a cell runs
        time.sleep(1.5)  # the idle time between two cells (the scenario, not a wait)
        resumed = time.time()  # the session is woken after this
        second = s.run("signal.setitimer(signal.ITIMER_REAL, 0)\nprint(json.dumps(ticks))")
        assert second.ok, second
        ticks = json.loads(second.stdout)
        idle = [t for t in ticks if returned + 0.01 < t < resumed - 0.01]
        assert idle == [], f"{len(idle)} timer ticks ran agent code between two cells"


@pytest.mark.usefixtures("no_leaks")
def test_breaking_the_control_socket_shows_no_jail_frames(one: SandboxPool) -> None:
    """Pointing fd 3 (the session's control socket) at /dev/null used to print a traceback
    through the jail's own code and path."""
    with one.session() as s:
        assert s.run("x = 5").ok
        r = s.run("import os\nos.dup2(os.open('/dev/null', os.O_RDWR), 3)")
        for leak in ("jail", "/opt/agentgym", "_session_main", "_reply", "Traceback"):
            assert leak not in r.stderr, r.stderr
        again = s.run("x + 1")  # the session is rebuilt from its history
        assert again.ok and again.stdout.strip() == "6", again


@pytest.mark.usefixtures("no_leaks")
def test_each_session_has_its_own_memory_pids_and_cpu_cgroups(one: SandboxPool) -> None:
    code = (
        "import json\n"
        "lines = open('/proc/self/cgroup').read().splitlines()\n"
        "print(json.dumps({l.split(':')[1]: l.split(':')[2] for l in lines}))"
    )
    sessions = [one.session() for _ in range(3)]
    try:
        groups = [json.loads(s.run(code).stdout) for s in sessions]
    finally:
        for s in sessions:
            s.close()
    for controller in ("memory", "pids", "cpu"):
        paths = [g.get(controller) for g in groups]
        assert all(p and p != "/" for p in paths), (controller, groups)
        assert len(set(paths)) == 3, (controller, paths)


@pytest.mark.usefixtures("no_leaks")
def test_code_with_a_lone_surrogate_gets_a_syntax_error_not_a_compiler_traceback(
    one: SandboxPool,
) -> None:
    """Half an emoji in a cell used to print a traceback through the host's ``ast.py``."""
    note = "the code holds a character that is not valid text (a lone surrogate, '\\ud83d')"
    with one.session() as s:
        results = [(one.run("print('a\ud83d')"), 1), (s.run("x = 1\ny = 'a\ud83d'"), 2)]
    for r, line in results:
        assert r.status == "error"
        assert r.stderr == f"SyntaxError: line {line}: {note}\n", r.stderr


def test_the_worker_weighs_one_process_per_running_cell_up_to_one_per_cpu(
    one: SandboxPool,
) -> None:
    """Against the host's other processes, a worker's cpu group weighs one process per
    running cell, up to one per CPU (inside it, sessions get equal shares): one group for all
    sessions would give every cell of the sandbox together one process's share of a busy
    host; a weight per cell without a cap would let spinning cells starve the env driver."""
    import time

    (shares_file,) = [
        os.path.join(p, "cpu.shares") for p in one.workers[0].cgroup.paths if "/cpu/" in p
    ]

    def shares() -> int:
        with open(shares_file) as fh:
            return int(fh.read())

    def wait_for(value: int) -> int:
        deadline = time.monotonic() + 20.0
        while shares() != value and time.monotonic() < deadline:
            time.sleep(0.01)
        return shares()

    cpus = os.cpu_count() or 1
    assert wait_for(1024) == 1024
    sessions = _sessions(one, cpus + 1)
    try:
        t = threading.Thread(target=_run_together, args=(sessions, "time.sleep(3)"))
        t.start()
        assert wait_for(1024 * cpus) == 1024 * cpus
        assert shares() == 1024 * cpus  # cpus + 1 cells run: still one process per CPU
        t.join()
        assert wait_for(1024) == 1024
    finally:
        for s in sessions:
            s.close()
