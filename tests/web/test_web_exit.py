"""Interpreter exit after a web env is clean (issue 23): no ``unclosed event loop``.

The browser runtime runs its asyncio loop on a thread; stopping that loop at exit without
closing it left ``ResourceWarning: unclosed event loop`` (and its self-pipe sockets) on
stderr of every program that used a web env, closed or not.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.browser

SCRIPT = """
import gymnasium as gym
import agentgym
env = gym.make("agentgym/WebWidgets-v0")
env.reset(seed=0)
if {close}:
    env.close()
print("done")
"""


@pytest.mark.parametrize("close", [True, False], ids=["closed", "left-open"])
def test_exit_after_a_web_env_leaves_no_resource_warning(runtime, close):
    proc = subprocess.run(
        [sys.executable, "-X", "dev", "-W", "always::ResourceWarning", "-c",
         SCRIPT.format(close=close)],
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0 and proc.stdout.strip() == "done", proc.stderr
    assert "ResourceWarning" not in proc.stderr, proc.stderr
    assert "unclosed" not in proc.stderr, proc.stderr
