"""Admission control (issue 22): a client holding hundreds of half-open connections cannot
shut others out or flood the log; request heads and bodies have deadlines.

The first test runs ``agentgym serve`` as a subprocess under ``RLIMIT_NOFILE`` = 256, opens
300 connections that never send a byte (more than the process can hold), and checks that
another client's ``/health`` and ``/reset`` are answered and the log stays small. The
server this replaced logged a traceback per failed ``accept`` (20 MB in 5 s here) and left
``/health`` unanswered.
"""

from __future__ import annotations

import contextlib
import resource
import socket
import subprocess
import sys
import time

import httpx

from agentgym.server import ServerLimits, ServerThread, create_app

from .conftest import ENV_ID

FD_LIMIT, HALF_OPEN = 256, 300


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _low_fd_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


def _wait_healthy(url: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the server exited"
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(url + "/health", timeout=5).status_code == 200:
                return
        time.sleep(0.1)
    raise AssertionError("the server never answered /health")


def _half_open(port: int, n: int) -> list[socket.socket]:
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            s.connect(("127.0.0.1", port))
        socks.append(s)
    return socks


def test_300_half_open_connections_under_256_fds_leave_health_and_reset_answering(tmp_path):
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentgym", "serve", ENV_ID, "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=_low_fd_limit,
        )
    socks: list[socket.socket] = []
    try:
        _wait_healthy(url, proc)
        socks = _half_open(port, HALF_OPEN)
        with httpx.Client(base_url=url, timeout=30) as c:  # a bound, not a timing claim
            health = c.get("/health")
            reset = c.post("/reset", json={"seed": 1, "episode_id": "other-client"})
            assert health.status_code == 200 and reset.status_code == 200, reset.text
            deadline = time.monotonic() + 60  # until the server has met all 300 (bounded)
            while True:
                conns = c.get("/health").json()["connections"]
                if conns["evicted"] > 0 or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
        assert conns["max_connections"] == FD_LIMIT - 64
        assert conns["evicted"] > 0  # the oldest idle connections made room
        assert reset.json()["observation"]["episode_id"] == "other-client"
    finally:
        for s in socks:
            s.close()
        proc.terminate()
        proc.wait(timeout=30)
    assert log.stat().st_size < 16_000, log.read_text(errors="replace")[:2000]


def test_a_connection_that_never_finishes_its_request_head_is_closed():
    with ServerThread(create_app(ENV_ID), header_timeout_s=0.2) as srv:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")  # no blank line: never ends
            assert s.recv(1024) == b""  # the server closed it (recv waits until then)
        health = httpx.get(srv.url + "/health", timeout=30).json()
    assert health["connections"]["head_timeouts"] == 1


def test_a_body_that_never_arrives_is_a_408():
    limits = ServerLimits(body_timeout_s=0.2)
    with ServerThread(create_app(ENV_ID, limits=limits), header_timeout_s=30) as srv:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as s:
            s.sendall(
                b"POST /reset HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b'Content-Length: 100\r\n\r\n{"seed": 1'
            )
            reply = b""
            while b"\r\n\r\n" not in reply:
                chunk = s.recv(4096)
                assert chunk, "closed without a reply"
                reply += chunk
        health = httpx.get(srv.url + "/health", timeout=30).json()
    assert reply.startswith(b"HTTP/1.1 408"), reply[:200]
    assert health["active_sessions"] == 0  # no env was built for it
