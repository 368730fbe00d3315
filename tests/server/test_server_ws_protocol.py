"""The WebSocket protocol under clients that break it (issue 38).

* A client that sends pings and never reads: uvicorn wrote a pong per ping straight to the
  transport, so the server's write buffer (its memory) grew without bound, about 9 MB/s.
  Now the server stops reading from a client whose replies fill its write buffer: what it
  holds for the connection stays under a bound however much the client sends.
* Invalid UTF-8 in text frames: uvicorn logged a full traceback for each (394 KB for 800
  connections), outside any limit. Now each is one line through the rate-limited log, and the
  client still gets close code 1007.

Raw sockets on 127.0.0.1: these are frames no WebSocket client library would send.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import logging
import os
import socket
import struct

import httpx
import websockets

from agentgym.server import ServerThread, create_app

from .conftest import ENV_ID, UP

PING_PAYLOAD = b"p" * 125  # the largest control frame: 131 bytes in, a 127-byte pong out
FLOOD_BYTES = 48 << 20
HELD_BOUND = 1 << 20  # high-water mark (64 KiB) plus the pongs of one read, with room


def _handshake(port: int, path: str = "/ws") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
        "Sec-WebSocket-Version: 13\r\n\r\n".encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, "the server closed during the handshake"
        head += chunk
    assert head.startswith(b"HTTP/1.1 101"), head[:80]
    return sock


def _frame(opcode: int, payload: bytes) -> bytes:
    """One masked client frame (FIN set) with a payload under 126 bytes."""
    assert len(payload) < 126
    mask = os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + masked


def _ws_connections(srv: ServerThread) -> list:
    return [c for c in srv.server.server_state.connections if "WebSocket" in type(c).__name__]


async def _one_episode(url: str) -> dict:
    async with websockets.connect(url.replace("http", "ws") + "/ws") as ws:
        await ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
        await ws.recv()
        await ws.send(json.dumps({"type": "step", "data": {"text": UP}}))
        return json.loads(await ws.recv())


def test_a_client_that_pings_and_never_reads_cannot_grow_the_servers_buffers():
    with ServerThread(create_app(ENV_ID)) as srv:
        sock = _handshake(srv.port)
        sock.settimeout(2.0)  # a send that makes no progress for 2 s: the server stopped reading
        burst = _frame(0x9, PING_PAYLOAD) * 2000
        sent = 0
        with contextlib.suppress(TimeoutError):
            while sent < FLOOD_BYTES:
                sock.sendall(burst)
                sent += len(burst)
        (conn,) = _ws_connections(srv)
        held = conn.transport.get_write_buffer_size()
        assert held <= HELD_BOUND, f"{held} bytes of pongs buffered after {sent} bytes of pings"
        assert sent < FLOOD_BYTES  # the flood was stopped by the server, not by this test
        assert not conn.transport.is_reading()
        # the server still serves everyone else meanwhile
        assert httpx.get(srv.url + "/health", timeout=30).status_code == 200
        step = asyncio.run(_one_episode(srv.url))
        assert step["data"]["observation"]["info"]["action_valid"] is True
        sock.close()


def _close_code(sock: socket.socket) -> int:
    """The code of the close frame the server sends next (skipping nothing else)."""
    data = b""
    while len(data) < 4:
        chunk = sock.recv(64)
        assert chunk, "the server dropped the connection without a close frame"
        data += chunk
    assert data[0] == 0x88, data[:8]  # FIN + close
    return struct.unpack("!H", data[2:4])[0]


def test_invalid_utf8_frames_are_one_rate_limited_line_each_and_close_1007():
    with ServerThread(create_app(ENV_ID)) as srv:
        captured = io.StringIO()
        handler = logging.StreamHandler(captured)
        handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
        watched = [logging.getLogger("uvicorn.error"), logging.getLogger("agentgym")]
        for lg in watched:
            lg.addHandler(handler)
        try:
            codes = []
            for _ in range(100):
                sock = _handshake(srv.port)
                sock.sendall(_frame(0x1, b"\xff\xfe not UTF-8"))
                codes.append(_close_code(sock))
                sock.close()
            assert httpx.get(srv.url + "/health", timeout=30).status_code == 200
        finally:
            for lg in watched:
                lg.removeHandler(handler)
        assert codes == [1007] * 100
        text = captured.getvalue()
        lines = [ln for ln in text.splitlines() if ln.strip()]
        assert "Traceback" not in text
        assert 1 <= len(lines) <= 3, lines[:5]  # the first, then at most one per 10 s
        assert "Invalid UTF-8" in lines[0] and "UnicodeDecodeError" in lines[0]
