"""A bounded load generator for ``agentgym serve``: many WebSocket clients, a few slow ones.

Used by the slow-marked load test and ``benchmarks/bench_server.py``. Each client opens one
WebSocket to one server, resets, and plays ``steps`` turns (resetting whenever an episode
ends) with a fixed, cheap policy: the first admissible action when the env lists some,
otherwise a short ``python`` cell or an ``<answer>``. A *slow* client sends ``slow_action``
instead (e.g. a cell that only sleeps), the behaviour issue 15 (V6) found starving the others.

Client-side round-trip times of benign steps are what the benchmark reports; errors are
every error frame, refused connection, unexpected close or malformed reply.

Examples:
    >>> import asyncio
    >>> from agentgym.server import ServerThread, create_app
    >>> from agentgym.server.load import ClientPlan, run_clients
    >>> with ServerThread(create_app("agentgym/Sokoban-Tiny-v0")) as srv:  # doctest: +SKIP
    ...     stats = asyncio.run(run_clients([ClientPlan(srv.url, steps=5)] * 4))
"""

from __future__ import annotations

import asyncio
import time
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
    server it measures: requests are written as UTF-8 bytes sent as text frames (what a
    client's ``send(str)`` puts on the wire, without the extra encode), replies are parsed
    from the frame's bytes, and nothing else is built per step but the timing.
    """
    import websockets

    stats = ClientStats(plan)
    ws_url = plan.url.replace("http://", "ws://").replace("https://", "wss://") + "/ws"
    try:
        async with websockets.connect(
            ws_url, open_timeout=open_timeout_s, max_size=None, proxy=None
        ) as ws:

            async def call(request: bytes, kind: str) -> dict:
                await ws.send(request, text=True)
                reply = _loads(await ws.recv(decode=False))
                if reply.get("type") == "error":
                    raise RuntimeError(f"{kind}: {reply['data']}")
                return reply["data"]

            seed = plan.seed
            first = await call(_encode("reset", {"seed": seed}), "reset")
            obs, tools = first["observation"], first["observation"].get("tools")
            stats.resets += 1
            if opened is not None:
                gate, opened = opened, None
                await gate(True)
            clock = time.perf_counter
            for _ in range(plan.steps):
                action = plan.slow_action or _benign_action(obs, tools)
                t0 = clock()
                out = await call(_encode("step", {"text": action}), "step")
                stats.step_s.append(clock() - t0)
                stats.queue_ms.append(float((out.get("timing") or {}).get("queue_ms", 0.0)))
                obs = out["observation"]
                if out["done"]:
                    seed += 1000
                    first = await call(_encode("reset", {"seed": seed}), "reset")
                    obs, tools = first["observation"], first["observation"].get("tools")
                    stats.resets += 1
            await ws.send(_encode("close", None), text=True)
    except Exception as exc:  # every failure is a finding, never a crash of the harness
        stats.errors.append(f"{type(exc).__name__}: {exc}"[:300])
    if opened is not None:  # failed before the session was open
        await opened(False)
    return stats


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
