"""Crash safety: a real writer process killed with SIGKILL mid-write loses at most one frame."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import agentgym.trajectory as trj

# The child records episodes as fast as it can: steps of varied size (up to ~1.5 MB, so
# kills land inside large writes too), each carrying its sequence number and a checksum of
# its own padding, so the parent can tell a gap or a damaged frame from the frame in flight.
CHILD = r"""
import hashlib, sys
from agentgym.trajectory import Recorder
rec = Recorder(sys.argv[1])
seq = 0
while True:
    ep = rec.start_episode(env_id="agentgym/Sokoban-Tiny-v0", obs={"text": "start"}, info={})
    for step in range(5):
        seq += 1
        pad = ("%d-" % seq) * ((seq * 7919) % 500_000)
        rec.record_step(ep, action="move %d" % seq, obs={"text": pad}, reward=1.0,
                        terminated=step == 4, truncated=False,
                        info={"seq": seq, "sha": hashlib.sha256(pad.encode()).hexdigest()})
        if seq == 3:
            print("ready", flush=True)
    rec.end_episode(ep)
"""


def _kill_writer_after(path: Path, delay: float) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL


def _check_intact(path: Path) -> int:
    """Every frame read back is whole and in order; at most the last one is missing."""
    import hashlib

    with trj.open(path) as reader:
        steps = list(reader.steps())
        problems = list(reader.problems)
    assert [p.kind for p in problems] in ([], ["incomplete_tail"]), problems
    seqs = [s["info"]["seq"] for s in steps]
    assert seqs == list(range(1, len(seqs) + 1))  # no gap: nothing before the tail was lost
    for s in steps:
        text = s["observation"]["text"]
        assert hashlib.sha256(text.encode()).hexdigest() == s["info"]["sha"]
    return len(seqs)


@pytest.mark.parametrize("delay", [0.05, 0.3, 0.8])
def test_sigkill_mid_write_loses_at_most_the_frame_in_flight(tmp_path: Path, delay: float) -> None:
    path = tmp_path / "crash.agtr"
    _kill_writer_after(path, delay)
    steps_before = _check_intact(path)
    assert steps_before >= 3

    # reopening for append cuts the torn tail; the file then reads clean end to end
    with trj.Recorder(path, mode="a") as rec:
        ep = rec.start_episode(env_id="agentgym/Sokoban-Tiny-v0", obs={"text": "after"}, info={})
        rec.record_step(
            ep,
            action="a",
            obs={"text": "b"},
            reward=0.0,
            terminated=True,
            truncated=False,
            info={"seq": steps_before + 1, "sha": ""},
        )
        rec.end_episode(ep)
    with trj.open(path) as reader:
        episodes = list(reader.episodes())
        assert reader.problems == []
    assert any(e.complete and e.start["observation"]["text"] == "after" for e in episodes)
    # the episode cut off by the kill is still readable, just without an end
    assert sum(not e.complete for e in episodes) <= 1
