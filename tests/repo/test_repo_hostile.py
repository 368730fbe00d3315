"""A hostile agent's tools change nothing outside its own session.

Each case runs hostile ``bash`` commands in one workspace while a neighbour workspace (another
session, maybe on the same worker) holds a project; afterwards the neighbour's files and shell
are untouched, the host is untouched, and (``leak_free``, the sandbox suite's own check) no
process, work dir, cgroup or uid of the pool is left over.
"""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest
from agentgym.simulators.repo import Workspace, load_project

from tests.sandbox.conftest import leak_free

pytestmark = pytest.mark.sandbox

FILES = {"app/__init__.py": "VALUE = 1\n", "README.md": "neighbour\n"}


@pytest.fixture
def pair(pool):
    """(attacker, neighbour) workspaces, checked for leaks after the case."""
    with leak_free(pool):
        attacker = Workspace.open(pool, FILES, git=False)
        neighbour = Workspace.open(pool, FILES, git=False)
        before = neighbour.digest
        try:
            yield attacker, neighbour
            assert neighbour.bash("cat README.md").text == "neighbour\n"
            assert neighbour.digest == before
            assert attacker.bash("echo alive").text == "alive\n"  # the attacker survives too
        finally:
            attacker.close()
            neighbour.close()


def _processes(ws: Workspace) -> list[str]:
    """The session's processes besides the probe itself, once SIGKILLed ones are gone (on a
    busy host the kernel may take seconds to reap them, so this polls with a deadline)."""
    deadline = time.monotonic() + 60.0
    while True:
        names = [n for n in ws.bash("ps -e -o comm=").text.split() if n not in ("bash", "ps")]
        if not names or time.monotonic() > deadline:
            return names
        time.sleep(0.2)


def test_fork_bomb_is_contained(pair):
    attacker, _ = pair
    result = attacker.bash(":(){ :|:& };:", timeout=10)
    assert "fork" in result.text or result.timed_out
    assert _processes(attacker) == []


def test_sleeping_and_spinning_processes_do_not_outlive_the_call(pair):
    attacker, neighbour = pair
    started = attacker.bash(
        "sleep 1000 & (while :; do :; done) & nohup sleep 999 >/dev/null 2>&1 & "
        "setsid sleep 998 & echo started",
        timeout=20,
    )
    assert started.text == "started\n"
    assert _processes(attacker) == []
    assert neighbour.bash("echo quick", timeout=20).text == "quick\n"


def test_writes_outside_the_work_dir_are_refused(pair, tmp_path):
    attacker, _ = pair
    target = tmp_path / "host-file"
    target.write_text("host\n")
    script = (
        f"echo x > {target}; echo x > /tmp/x; echo x > /usr/x; echo x > /etc/x; "
        "ls /tmp/sbx; for d in /tmp/sbx/*/*; do echo x > $d/x; done; echo done"
    )
    result = attacker.bash(script)
    assert result.text.endswith("done\n")
    assert (
        result.text.count("Permission denied")
        + result.text.count("Read-only")
        + result.text.count("No such file")
        >= 5
    )
    assert target.read_text() == "host\n"


def test_the_hidden_tests_are_not_in_the_jail(pair):
    """agentgym (its projects, task table and this suite) is neither mounted nor importable."""
    import agentgym.simulators.repo as repo_pkg
    from agentgym.simulators.repo.tasks import TABLE_FILE

    attacker, _ = pair
    hidden = load_project("chrono")
    assert "def test_parse_clock_with_seconds" in hidden.files["tests/test_durations.py"]
    host_paths = [
        os.path.dirname(repo_pkg.__file__),
        str(TABLE_FILE),
        os.path.join(os.path.dirname(repo_pkg.__file__), "projects", "chrono", "tests"),
        os.path.dirname(os.path.abspath(__file__)),
    ]
    script = "; ".join(f"cat {p} || ls {p}" for p in host_paths) + (
        "; python -c 'import agentgym' 2>&1 | tail -1; "
        "python -c 'import importlib.util as u; print(u.find_spec(\"agentgym\"))'; echo end"
    )
    result = attacker.bash(script, timeout=60)
    assert result.text.count("No such file or directory") == 2 * len(host_paths)
    assert result.text.endswith("ModuleNotFoundError: No module named 'agentgym'\nNone\nend\n")


def test_no_network_not_even_the_host_loopback(pair):
    attacker, _ = pair
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    accepted: list[object] = []
    thread = threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True)
    thread.start()
    try:
        code = (
            "import socket\ntry:\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=3)\n"
            "    print('CONNECTED')\nexcept OSError as e:\n    print('refused', type(e).__name__)\n"
        )
        attacker.create("probe.py", code)
        result = attacker.bash("python probe.py; getent hosts example.com || echo no-dns")
        assert result.text == "refused PermissionError\nno-dns\n"
        assert accepted == []
    finally:
        server.close()


def test_processes_left_running_die_when_the_episode_ends(pool):
    import gymnasium as gym

    with leak_free(pool):
        env = gym.make("agentgym/RepoFix-v0", pool=pool)
        try:
            env.reset(seed=0)
            launch = '{"name": "bash", "arguments": {"command": "nohup sleep 1000 >/dev/null 2>&1 & setsid sleep 999 & echo ok"}}'
            env.step(f"<tool_call>{launch}</tool_call>")
            _, _, terminated, _, info = env.step(
                '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'
            )
            assert terminated and info["grading_status"] == "ok"
            assert env.unwrapped.workspace is None  # the session is closed at the end
        finally:
            env.close()
