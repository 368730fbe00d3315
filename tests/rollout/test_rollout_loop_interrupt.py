"""Ctrl-C stops a collection's event loop even when a task will not finish cancelling.

``asyncio.run`` waits without a limit for every task to unwind after Ctrl-C; a task that
swallows its cancellation (as a shielded connection close waiting for a reply that never
comes does) then hangs the run. ``run_bounded`` must stop anyway, after running the main
coroutine's ``finally`` (where a run keeps what finished).
"""

from __future__ import annotations

import signal
import subprocess
import sys

_CHILD = """
import asyncio
from agentgym.rollout.loop import run_bounded

async def stubborn():
    while True:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            continue  # never lets itself be cancelled

async def main():
    asyncio.ensure_future(stubborn())
    try:
        print("ready", flush=True)
        await asyncio.sleep(3600)
    finally:
        print("main finally ran", flush=True)

try:
    run_bounded(main(), grace_s=0.5)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_ctrl_c_stops_the_loop_although_a_task_ignores_its_cancellation():
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)  # asyncio.run would wait here forever
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert out.splitlines() == ["main finally ran", "interrupted"], (out, err)
    assert "Traceback" not in err and "destroyed" not in err, err


def test_without_ctrl_c_the_result_comes_back_and_errors_propagate():
    import asyncio

    import pytest

    from agentgym.rollout.loop import run_bounded

    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    async def fail() -> None:
        raise ValueError("boom")

    assert run_bounded(answer()) == 42
    with pytest.raises(ValueError, match="boom"):
        run_bounded(fail())
