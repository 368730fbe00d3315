"""Ctrl-C during web episodes stops quietly (issue 26, point 10).

Ctrl-C sends SIGINT to the whole foreground process group, so the Playwright driver gets it
too and closes Chromium on its way out. The envs' worker threads, still stepping, used to
see a dead browser and relaunch it over and over ("Chromium is gone; relaunching it", once
per call) while the interrupt unwound. The runtime now tells an exiting driver from a crash
and does not relaunch then.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHILD = """
import sys
from agentgym.agents.scripted import make_policy
from agentgym.episodes import play

told = []

def on_step(event):
    if not told:
        told.append(True)
        print("stepping", flush=True)

try:
    play("agentgym/WebTodo-v0", make_policy("random"), episodes=500, num_envs=3,
         on_step=on_step, progress=False)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
print("finished", flush=True)
"""


def _default_sigint() -> None:
    # As in a terminal: a shell starts background jobs with SIGINT ignored.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_on_threaded_web_envs_does_not_relaunch_chromium(runtime):
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, like a terminal's foreground job
        preexec_fn=_default_sigint,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "stepping"  # blocks until episodes run
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert "interrupted" in out, (out, err[-2000:])
    assert proc.returncode == 130
    assert "relaunch" not in err, err[-2000:]
    assert "Future exception was never retrieved" not in err, err[-2000:]
