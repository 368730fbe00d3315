"""A bounded load generator for ``agentgym serve``: many WebSocket clients, a few slow ones.

Used by the slow-marked load tests and the serving benchmarks; it is a test harness, so it
lives with the benchmarks, not in the library. Each client opens one
WebSocket to one server, resets, and plays ``steps`` turns (resetting whenever an episode
ends) with a fixed, cheap policy: the first admissible action when the env lists some,
otherwise a short ``python`` cell or an ``<answer>``. A *slow* client sends ``slow_action``
instead (e.g. a cell that only sleeps), the behaviour issue 15 (V6) found starving the others.

Client-side round-trip times of benign steps are what the benchmark reports; errors are
every error frame, refused connection, unexpected close or malformed reply.

Examples:
    >>> import asyncio
    >>> from agentgym.server import ServerThread, create_app
    >>> from benchmarks.serve_clients import ClientPlan, run_clients
    >>> with ServerThread(create_app("agentgym/Sokoban-Tiny-v0")) as srv:  # doctest: +SKIP
    ...     stats = asyncio.run(run_clients([ClientPlan(srv.url, steps=5)] * 4))
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from agentgym.parsing import render_tool_call
from agentgym.server.payloads import dumps_bytes as _dumps
from agentgym.server.payloads import loads as _loads

CELL = render_tool_call("python", {"code": "print(6 * 7)"})


def sleeping_cell(seconds: float) -> str:
    """A ``python`` tool call whose cell only sleeps (the slow client of issue 15, V6)."""
    return render_tool_call("python", {"code": f"import time; time.sleep({seconds})"})


@dataclass(frozen=True)
class ClientPlan:
    """One client: which server, how many steps, and the action it repeats if slow."""

    url: str
    steps: int = 50
    seed: int = 0
    slow_action: str | None = None
    label: str = ""


@dataclass
class ClientStats:
    """What one client saw."""

    plan: ClientPlan
    step_s: list[float] = field(default_factory=list)
    queue_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    resets: int = 0


def _benign_action(obs: dict, tools: list | None) -> str:
    info = obs.get("info") or {}
    admissible = info.get("admissible_actions") or []
    if admissible:
        return str(admissible[0])
    names = {t.get("function", {}).get("name") for t in tools or []}
    return CELL if "python" in names else "<answer>42</answer>"


_DATA = ("TEXT", "BINARY", "CONT")  # opcode names of a message's frames


class LeanWebSocket(asyncio.Protocol):
    """A WebSocket client connection: the ``websockets`` package's own protocol (handshake,
    masking, permessage-deflate offered as its client does by default, pings answered)
    driven straight from asyncio's transport callbacks, without the per-message tasks,
    locks and futures of its asyncio client. In a benchmark the clients share the machine
    with the server they measure, so what they cost per message is taken from the server.
    No keepalive pings of its own (the server's are answered)."""

    def __init__(self, url: str):
        from websockets.client import ClientProtocol
        from websockets.extensions.permessage_deflate import enable_client_permessage_deflate
        from websockets.uri import parse_uri

        self.uri = parse_uri(url)
        self.protocol = ClientProtocol(
            self.uri, extensions=enable_client_permessage_deflate(None), max_size=None
        )
        self.transport: asyncio.Transport | None = None
        self.inbox: deque[bytes] = deque()
        self.waiter: asyncio.Future[None] | None = None
        self.opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.lost: BaseException | None = None
        self._parts: list[bytes] = []

    @classmethod
    async def connect(cls, url: str, open_timeout_s: float) -> LeanWebSocket:
        """Open ``url`` (``ws://host:port/path``) and finish the opening handshake."""
        loop = asyncio.get_running_loop()
        conn = cls(url)
        async with asyncio.timeout(open_timeout_s):
            await loop.create_connection(
                lambda: conn, conn.uri.host, conn.uri.port, ssl=conn.uri.secure or None
            )
            await conn.opened
        return conn

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.protocol.send_request(self.protocol.connect())
        self._flush()

    def data_received(self, data: bytes) -> None:
        from websockets.frames import Frame
        from websockets.http11 import Response
        from websockets.protocol import State

        self.protocol.receive_data(data)
        self._flush()  # pongs, the closing handshake
        for event in self.protocol.events_received():
            if isinstance(event, Response):
                if self.protocol.handshake_exc is not None:
                    self._fail(self.protocol.handshake_exc)
                elif not self.opened.done():
                    self.opened.set_result(None)
            elif isinstance(event, Frame) and event.opcode.name in _DATA:
                self._parts.append(bytes(event.data))
                if event.fin:
                    self.inbox.append(b"".join(self._parts))
                    self._parts = []
                    self._wake()
        if self.protocol.state is State.CLOSED and self.lost is None:
            self._fail(self.protocol.close_exc)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(exc or ConnectionError("the server closed the connection"))

    def _fail(self, exc: BaseException) -> None:
        if self.lost is None:
            self.lost = exc
        if not self.opened.done():
            self.opened.set_exception(exc)
        self._wake()

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def _flush(self) -> None:
        for data in self.protocol.data_to_send():
            if self.transport is None or self.transport.is_closing():
                return
            if data:
                self.transport.write(data)
            elif self.transport.can_write_eof():
                self.transport.write_eof()

    def send_text(self, payload: bytes) -> None:
        """Send ``payload`` (UTF-8) as one text frame."""
        if self.lost is not None:
            raise ConnectionError(f"connection lost: {self.lost}")
        self.protocol.send_text(payload)
        self._flush()

    async def recv(self) -> bytes:
        """The next message's bytes."""
        while not self.inbox:
            if self.lost is not None:
                raise ConnectionError(f"connection lost: {self.lost}")
            self.waiter = asyncio.get_running_loop().create_future()
            await self.waiter
        return self.inbox.popleft()

    def close(self) -> None:
        """Start the closing handshake; the transport closes when the server answers."""
        if self.lost is None and self.transport is not None:
            self.protocol.send_close(1000)
            self._flush()
        if self.transport is not None:
            self.transport.close()


def _encode(kind: str, data: object) -> bytes:
    return _dumps({"type": kind, "data": data})


async def run_client(
    plan: ClientPlan,
    *,
    open_timeout_s: float = 60.0,
    opened: Callable[[bool], Awaitable[None]] | None = None,
) -> ClientStats:
    """Play ``plan`` over one WebSocket; never raises (failures land in ``errors``).

    ``opened``, when given, is awaited once the first reset answered (with True) or the
    connection or that reset failed (with False), before any step: a benchmark holds every
    client there until all sessions are open, so that thousands of sessions really step at
    once and the opening handshakes are not measured as step throughput.

    The client is kept cheap per step, since in a benchmark it shares the machine with the
    server it measures: one :class:`LeanWebSocket`, requests written by orjson as UTF-8
    bytes sent as text frames, replies parsed from the frame's bytes, nothing else built per
    step but the timing.
    """
    stats = ClientStats(plan)
    ws_url = plan.url.replace("http://", "ws://").replace("https://", "wss://") + "/ws"
    ws: LeanWebSocket | None = None
    try:
        ws = await LeanWebSocket.connect(ws_url, open_timeout_s)
        await _play(ws, plan, stats, opened)
        ws.send_text(_encode("close", None))
    except Exception as exc:  # every failure is a finding, never a crash of the harness
        stats.errors.append(f"{type(exc).__name__}: {exc}"[:300])
    finally:
        if ws is not None:
            ws.close()
    if opened is not None and stats.resets == 0:  # failed before the session was open
        # (after the first reset, _play has already awaited opened(True))
        await opened(False)
    return stats


async def _call(ws: LeanWebSocket, request: bytes, kind: str) -> dict:
    """Send one request and return its reply's ``data`` (an error frame raises)."""
    ws.send_text(request)
    reply = _loads(await ws.recv())
    if reply.get("type") == "error":
        raise RuntimeError(f"{kind}: {reply['data']}")
    return reply["data"]


async def _play(
    ws: LeanWebSocket,
    plan: ClientPlan,
    stats: ClientStats,
    opened: Callable[[bool], Awaitable[None]] | None,
) -> None:
    """The episodes of :func:`run_client` on an open connection, counted into ``stats``."""
    seed = plan.seed
    first = await _call(ws, _encode("reset", {"seed": seed}), "reset")
    obs, tools = first["observation"], first["observation"].get("tools")
    stats.resets += 1
    if opened is not None:
        await opened(True)
    clock = time.perf_counter
    for _ in range(plan.steps):
        action = plan.slow_action or _benign_action(obs, tools)
        t0 = clock()
        out = await _call(ws, _encode("step", {"text": action}), "step")
        stats.step_s.append(clock() - t0)
        stats.queue_ms.append(float((out.get("timing") or {}).get("queue_ms", 0.0)))
        obs = out["observation"]
        if out["done"]:
            seed += 1000
            first = await _call(ws, _encode("reset", {"seed": seed}), "reset")
            obs, tools = first["observation"], first["observation"].get("tools")
            stats.resets += 1


async def run_clients(plans: Sequence[ClientPlan]) -> list[ClientStats]:
    """Run every plan concurrently; results in plan order."""
    return list(await asyncio.gather(*(run_client(p) for p in plans)))


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) by nearest rank; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]
