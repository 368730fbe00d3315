"""Running Chromium with its own sandbox, also when agentgym runs as root.

Chromium's sandbox puts each renderer (the process that runs a page's JavaScript) in its own
user and PID namespaces under a seccomp-bpf filter. Chromium refuses to start it as root
("Running as root without --no-sandbox is not supported"), and Debian ships no setuid
``chrome-sandbox`` helper, so the sandbox needs (a) a non-root uid and (b) unprivileged user
namespaces in the kernel.

As a non-root user, Chromium is launched as it is. As root, it is launched through a small
wrapper script that drops to an unprivileged uid with ``setpriv`` (util-linux) and hands the
profile directory Playwright created over to that uid; Playwright talks to Chromium over
inherited pipes, which the uid change keeps. Where either condition fails (no ``setpriv``,
user namespaces disabled, a ``noexec`` temp dir) the launch fails fast and the runtime falls
back to ``--no-sandbox`` with a warning, unless the sandbox was required. See docs/web.md.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import tempfile
from pathlib import Path

from agentgym.processes import pid_alive

SANDBOX_ENV = "AGENTGYM_BROWSER_SANDBOX"
"""``1`` requires the sandbox, ``0`` turns it off, unset or ``auto`` tries it and falls back."""
UNPRIVILEGED_UID = 65534
"""The uid (and gid) Chromium runs as when agentgym runs as root: ``nobody``."""
WRAPPER_PREFIX = "agentgym-chromium-"
"""Wrapper directories are named ``<prefix><owner pid>-<random>`` in the temp directory."""
_OWNED = re.compile(re.escape(WRAPPER_PREFIX) + r"(\d+)-")

_WRAPPER = """#!/bin/sh
# agentgym: run Chromium as uid {uid} so that its sandbox can start (it refuses root).
for arg in "$@"; do
  case "$arg" in
    --user-data-dir=*) chown -R {uid}:{uid} "${{arg#--user-data-dir=}}" ;;
  esac
done
export HOME={home}
export TMPDIR={home}/tmp
exec {setpriv} --reuid={uid} --regid={uid} --clear-groups --inh-caps=-all {chromium} "$@"
"""


def sandbox_mode(requested: bool | None) -> bool | None:
    """``True`` (required), ``False`` (off) or ``None`` (try, fall back): the argument, else
    the :data:`SANDBOX_ENV` variable, else ``None``."""
    if requested is not None:
        return requested
    value = os.environ.get(SANDBOX_ENV, "auto").strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    return None


class SandboxLauncher:
    """The executable to launch for a sandboxed Chromium (a wrapper when running as root).

    ``executable`` is what Playwright should start; :meth:`cleanup` removes the wrapper.
    Raises ``OSError`` when running as root without ``setpriv``.
    """

    def __init__(self, chromium: str):
        self._dir: str | None = None
        if os.geteuid() != 0:
            self.executable = chromium
            return
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            raise OSError("running as root and setpriv (util-linux) is not installed")
        sweep_stale_wrappers()
        self._dir = tempfile.mkdtemp(prefix=f"{WRAPPER_PREFIX}{os.getpid()}-")
        root = Path(self._dir)
        root.chmod(0o755)  # the unprivileged uid must reach its home inside
        home = root / "home"
        home.mkdir()
        (home / "tmp").mkdir()  # Chromium's own temp dirs: removed with the wrapper's
        for path in (home, home / "tmp"):
            os.chown(path, UNPRIVILEGED_UID, UNPRIVILEGED_UID)
        wrapper = root / "chromium"
        wrapper.write_text(
            _WRAPPER.format(
                uid=UNPRIVILEGED_UID,
                home=shlex.quote(str(home)),
                setpriv=shlex.quote(setpriv),
                chromium=shlex.quote(chromium),
            )
        )
        wrapper.chmod(0o755)
        self.executable = str(wrapper)

    def cleanup(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def sweep_stale_wrappers(directory: str | None = None) -> list[str]:
    """Remove the wrapper directories of processes that are gone; return what was removed.

    A process killed with its browser open (SIGKILL, an OOM kill) never runs
    :meth:`SandboxLauncher.cleanup`; the next launcher on the machine removes what it left.
    Directories of live processes, and names without an owner pid, are left alone.
    """
    root = directory or tempfile.gettempdir()
    removed: list[str] = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    for name in names:
        owner = _OWNED.match(name)
        if owner is None or pid_alive(int(owner.group(1))):
            continue
        path = os.path.join(root, name)
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path):
            removed.append(path)
    return removed
