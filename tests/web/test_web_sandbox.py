"""Chromium runs with its own sandbox where the kernel allows it, also as root (issue 15).

The sandbox is checked on the real processes: the renderers (which run page JavaScript) must
sit under a seccomp-bpf filter (``Seccomp: 2``) in their own user namespace, and no Chromium
process may run as root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from agentgym.simulators.browser.sandbox import SANDBOX_ENV, UNPRIVILEGED_UID, sandbox_mode

pytestmark = pytest.mark.browser


def _user_namespaces_work() -> bool:
    """Can an unprivileged process create a user namespace here (what the sandbox needs)?"""
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    argv = [unshare, "--user", "true"]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            return False
        argv = [
            setpriv,
            f"--reuid={UNPRIVILEGED_UID}",
            f"--regid={UNPRIVILEGED_UID}",
            "--clear-groups",
            *argv,
        ]
    return subprocess.run(argv, capture_output=True, timeout=10).returncode == 0


def _status(pid: int) -> dict[str, str]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        out[key] = value.strip()
    return out


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(_status(int(entry))["PPid"])
            except (OSError, KeyError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def test_renderers_run_in_chromiums_sandbox_and_nothing_as_root(runtime):
    if not _user_namespaces_work():
        pytest.skip("this kernel allows no unprivileged user namespaces: no Chromium sandbox")
    import gymnasium as gym

    env = gym.make("agentgym/WebWidgets-v0")
    env.reset(seed=0)  # at least one renderer is up
    assert runtime.sandboxed is True
    (main,) = runtime.browser_pids()
    procs = _descendants(main)
    renderers = [p for p in procs if b"--type=renderer" in Path(f"/proc/{p}/cmdline").read_bytes()]
    assert renderers
    own_userns = os.readlink("/proc/self/ns/user")
    for pid in renderers:
        assert _status(pid)["Seccomp"] == "2", pid
        assert os.readlink(f"/proc/{pid}/ns/user") != own_userns, pid
    for pid in procs:
        if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"/bin/sh"):
            continue
        assert _status(pid)["Uid"].split()[0] != "0", "a Chromium process runs as root"
    if os.geteuid() == 0:  # through the wrapper: Chromium's temp dirs go away with it
        environ = dict(
            item.split(b"=", 1)
            for item in Path(f"/proc/{main}/environ").read_bytes().split(b"\0")
            if b"=" in item
        )
        home = environ[b"HOME"].decode()
        assert environ[b"TMPDIR"].decode() == f"{home}/tmp"
        assert Path(home).parent.name.startswith(f"agentgym-chromium-{os.getpid()}-")
    env.close()


def test_sandbox_setting_from_argument_and_environment(monkeypatch):
    monkeypatch.delenv(SANDBOX_ENV, raising=False)
    assert sandbox_mode(None) is None
    assert sandbox_mode(False) is False
    monkeypatch.setenv(SANDBOX_ENV, "0")
    assert sandbox_mode(None) is False
    assert sandbox_mode(True) is True
    monkeypatch.setenv(SANDBOX_ENV, "1")
    assert sandbox_mode(None) is True


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="the setpriv wrapper is only used as root")
def test_without_setpriv_root_falls_back_with_a_warning_or_fails_when_required(
    runtime, monkeypatch, tmp_path, caplog
):
    from agentgym.simulators.browser.runtime import BrowserRuntime

    monkeypatch.setenv("PATH", str(tmp_path))  # no setpriv to drop root with
    with pytest.raises(RuntimeError, match=r"sandbox could not start.*docs/web\.md"):
        BrowserRuntime(sandbox=True)
    fallback = BrowserRuntime(sandbox=None)
    try:
        assert fallback.sandboxed is False
        assert "running it with --no-sandbox" in caplog.text
        (main,) = fallback.browser_pids()
        assert b"--no-sandbox" in Path(f"/proc/{main}/cmdline").read_bytes()
    finally:
        fallback.close()


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()  # reaped: the pid names no process
    return proc.pid


def test_a_killed_process_wrapper_dir_is_swept_by_the_next_launcher(tmp_path, monkeypatch):
    """A process killed with its browser open never cleans its wrapper directory up; the
    next launcher removes it, and leaves live processes' directories and other names alone."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("the wrapper is made only as root, with setpriv")
    import tempfile

    from agentgym.simulators.browser.sandbox import WRAPPER_PREFIX, SandboxLauncher

    dead = tmp_path / f"{WRAPPER_PREFIX}{_dead_pid()}-abc"
    (dead / "home" / ".config").mkdir(parents=True)
    (dead / "chromium").write_text("#!/bin/sh\n")
    live = tmp_path / f"{WRAPPER_PREFIX}{os.getpid()}-def"
    live.mkdir()
    unowned = tmp_path / f"{WRAPPER_PREFIX}no-owner"
    unowned.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    launcher = SandboxLauncher("/bin/true")
    try:
        ours = Path(launcher.executable).parent
        assert ours.parent == tmp_path and ours.name.startswith(f"{WRAPPER_PREFIX}{os.getpid()}-")
        assert not dead.exists()
        assert live.is_dir() and unowned.is_dir()
    finally:
        launcher.cleanup()
    assert not ours.exists()
