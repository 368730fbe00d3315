"""A real ``agentgym serve`` process on a free 127.0.0.1 port, restartable on the same port
(a restart loses every session, as a crashed or redeployed server does)."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time

import httpx

from agentgym.rollout import ServeEnvSource


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServeProcess:
    """``agentgym serve ENV_ID`` in a child process; a context manager."""

    def __init__(self, env_id: str, *, max_sessions: int = 64, start_timeout_s: float = 120.0):
        self.env_id, self.max_sessions = env_id, max_sessions
        self.start_timeout_s = start_timeout_s
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.restarts = 0

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agentgym", "serve", self.env_id, "--port", str(self.port),
             "--max-sessions", str(self.max_sessions)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "agentgym serve exited"
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(self.url + "/health", timeout=5).status_code == 200:
                    return
            time.sleep(0.1)  # polling the server's start, with a deadline
        self.stop()
        raise AssertionError("agentgym serve never answered /health")

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        """Stop and start again on the same port: every session is lost."""
        self.stop()
        self.start()
        self.restarts += 1

    def active_sessions(self) -> int:
        return int(httpx.get(self.url + "/health", timeout=10).json()["active_sessions"])

    def source(self) -> ServeEnvSource:
        return ServeEnvSource(self.url)

    def __enter__(self) -> ServeProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
