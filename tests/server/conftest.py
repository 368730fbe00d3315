"""Fixtures for the env server tests: a real env (Sokoban-Tiny) behind a real server on
127.0.0.1, wrapped so a test can hold a step open, make it slow, and count envs built and
closed."""

from __future__ import annotations

import threading
import time

import gymnasium
import pytest

from agentgym.integrations.session import TextSession
from agentgym.parsing import render_tool_call

ENV_ID = "agentgym/Sokoban-Tiny-v0"
UP = render_tool_call("move", {"direction": "up"})


class Gated(gymnasium.Wrapper):
    """Sokoban whose step blocks on ``BLOCK`` (until released) or sleeps on ``SLEEP <s>``,
    and which, like any env that owns a sandbox or a browser page, fails once closed."""

    def __init__(self, env, counts: Counts):
        super().__init__(env)
        self.metadata = {**env.metadata, "blocking": True}  # its steps wait: run on threads
        self.counts = counts
        self.closed = False
        self.in_step = False

    def step(self, action):
        if self.closed:
            raise RuntimeError("step on a closed env")
        self.in_step = True
        try:
            if action == "BLOCK":
                self.counts.blocked.release()
                self.counts.gate.wait(30)
            elif action.startswith("SLEEP "):
                time.sleep(float(action.split()[1]))
            return self.env.step(action)
        finally:
            self.in_step = False

    def close(self):
        if self.in_step:  # a real env's sandbox or page would be torn down mid-step
            with self.counts.lock:
                self.counts.closed_mid_step += 1
        if not self.closed:
            self.closed = True
            with self.counts.lock:
                self.counts.closed += 1
        super().close()


class Counts:
    """Envs built and closed through :meth:`factory`, and the gate ``BLOCK`` steps wait on."""

    def __init__(self):
        self.lock = threading.Lock()
        self.built = 0
        self.closed = 0
        self.closed_mid_step = 0
        self.gate = threading.Event()
        self.blocked = threading.Semaphore(0)

    def factory(self) -> TextSession:
        with self.lock:
            self.built += 1
        return TextSession(Gated(gymnasium.make(ENV_ID), self))

    def wait_closed(self, timeout_s: float = 20.0) -> None:
        """Wait until every env built was closed (bounded); fail with the counts otherwise."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self.lock:
                if self.closed == self.built:
                    return
            time.sleep(0.02)
        raise AssertionError(f"{self.built} envs built but only {self.closed} closed")


@pytest.fixture
def counts():
    c = Counts()
    yield c
    c.gate.set()  # never leave a worker thread waiting
