"""Progress bars drawn by the Python API stay out of redirected stderr (logs of a training job)."""

import subprocess
import sys

_PLAY = """
from agentgym.agents.scripted import make_policy
from agentgym.episodes import play
out = play("agentgym/Sokoban-Tiny-v0", make_policy("oracle"), episodes=3, progress=True)
print(sum(s.success for s in out))
"""


def test_play_with_progress_on_writes_no_bar_into_a_pipe():
    done = subprocess.run(
        [sys.executable, "-c", _PLAY], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3"  # the episodes ran, all solved by the oracle
    assert "\r" not in done.stderr and "ep/s" not in done.stderr, done.stderr[-500:]
