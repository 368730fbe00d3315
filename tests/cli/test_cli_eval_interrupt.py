"""Ctrl-C on ``agentgym eval`` keeps the finished episodes (issue 26, point 3).

A real SIGINT goes to a real ``agentgym eval`` process once the fake server holds a request
it will never answer (the test waits for that, never for a guessed time). The run must write
``--out`` and the summary for the episodes that finished and exit although the request is
still in flight.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from tests.fake_openai import FakeOpenAI

ENV = "agentgym/Sokoban-Tiny-v0"


def _agentgym(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "agentgym", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},  # SIGABRT dumps every thread's stack
    )


def _interrupt(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """SIGINT, then the process's output once it has exited. One that never exits is
    aborted, and the test fails with the stacks of all its threads (where it hung)."""
    proc.send_signal(signal.SIGINT)
    try:
        return proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        _out, err = proc.communicate(timeout=30)
        pytest.fail(f"still running 120 s after Ctrl-C; its threads:\n{err[-6000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_ctrl_c_on_eval_writes_the_finished_episodes_with_a_request_in_flight(tmp_path):
    out = tmp_path / "eval.jsonl"
    # two-turn episodes one at a time: requests 1-4 finish episodes 0 and 1, request 5 hangs
    with FakeOpenAI(stall_after=4) as server:
        proc = _agentgym(
            "eval", ENV, "--policy", "openai", "--base-url", server.url, "--model", "m",
            "--env-kwargs", '{"max_turns": 2}', "--episodes", "6", "--num-envs", "1",
            "--out", str(out), "--no-progress",
        )  # fmt: skip
        while not server.stalled.wait(0.1):
            assert proc.poll() is None, proc.communicate()
        stdout, stderr = _interrupt(proc)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted: 2 of 6 episodes finished" in stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["seed"], r["turns"]) for r in rows] == [(0, 2), (1, 2)]
    greedy = next(line.split() for line in stdout.splitlines() if line.startswith("greedy"))
    assert greedy[1] == "2", stdout
    assert f"per-episode results: {out}" in stdout
