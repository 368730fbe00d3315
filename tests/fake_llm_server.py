"""A fake OpenAI-compatible model server with long-tailed latency and injected failures.

Used by the rollout engine's tests (``tests/rollout``) and its benchmark
(``benchmarks/bench_rollout.py``). Unlike ``tests/fake_openai.py`` (fixed delay, scripted
statuses), every reply here takes a latency drawn from a lognormal whose p99 is 10x its p50
(:class:`LognormalLatency`), as generation lengths of a real model server do, and a ``fault``
rule can answer a request with HTTP 500 or drop its connection without an answer.

:func:`scripted_reply` is a deterministic "model": the action depends only on the messages
and tools of the request, so the same episode gets the same actions whatever the timing,
and :class:`ScriptedChatPolicy` is the same model as a local batched policy for the lockstep
reference loop.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from agentgym.agents.base import Generation, PolicyInput
from agentgym.agents.http import reply_to_text

Fault = Callable[[dict[str, Any]], str | None]
"""A request body -> ``"500"`` (answer HTTP 500), ``"drop"`` (close without answering) or None."""

Z99 = 2.3263478740408408  # the standard normal's 0.99 quantile


class LognormalLatency:
    """Seconds per reply, lognormal with median ``p50_s`` and p99 = ``tail`` x p50.

    >>> lat = LognormalLatency(0.01, seed=0)
    >>> round(lat.quantile(0.5), 6), round(lat.quantile(0.99), 6)
    (0.01, 0.1)
    """

    def __init__(self, p50_s: float, *, tail: float = 10.0, seed: int = 0):
        self.p50_s = p50_s
        self.sigma = math.log(tail) / Z99
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()

    def quantile(self, q: float) -> float:
        from statistics import NormalDist

        return self.p50_s * math.exp(self.sigma * NormalDist().inv_cdf(q))

    def __call__(self) -> float:
        with self._lock:
            return float(self.p50_s * math.exp(self.sigma * self._rng.standard_normal()))


def _digest(obj: Any) -> int:
    return int.from_bytes(
        hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).digest()[:8], "little"
    )


def scripted_reply(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]) -> dict:
    """The assistant message a deterministic fake model writes for this chat.

    With tools: one call of a tool picked by a hash of the messages, its arguments filled
    from the schema (an enum member, else ``"1"``); one time in six, and always without
    tools, a final ``<answer>N</answer>`` instead.
    """
    rng = np.random.default_rng(_digest(list(messages)))
    if not tools or rng.random() < 1 / 6:
        return {"role": "assistant", "content": f"<answer>{int(rng.integers(10))}</answer>"}
    fn = tools[int(rng.integers(len(tools)))]["function"]
    args = {}
    for name, spec in (fn.get("parameters") or {}).get("properties", {}).items():
        args[name] = str(rng.choice(spec["enum"])) if "enum" in spec else "1"
    call = {"name": fn["name"], "arguments": json.dumps(args)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_0", "type": "function", "function": call}],
    }


class ScriptedChatPolicy:
    """:func:`scripted_reply` as a local batched policy (the lockstep reference)."""

    def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]:
        return [
            Generation(text=reply_to_text(scripted_reply(i.messages, i.info.get("tools") or [])))
            for i in inputs
        ]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # hundreds of episodes connect at once

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (a cancelled request, a closed pool) is not an error."""


class FakeLLMServer:
    """The server; ``url`` is its ``/v1`` root. Use it as a context manager.

    Args:
        latency: seconds each reply takes (e.g. :class:`LognormalLatency`); None: none.
        fault: which requests fail and how (see :data:`Fault`); None: none.

    Counters: ``requests``, ``answered``, ``errors_500``, ``dropped``, ``max_in_flight``,
    ``busy_s`` (seconds of request handling summed over requests, for utilisation) and
    ``connections`` (TCP connections accepted; keep-alive clients reuse theirs).
    """

    def __init__(self, *, latency: Callable[[], float] | None = None, fault: Fault | None = None):
        self.latency = latency
        self.fault = fault
        self.requests = self.answered = self.errors_500 = self.dropped = 0
        self.in_flight = self.max_in_flight = self.connections = 0
        self.busy_s = 0.0
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def reset_counters(self) -> None:
        with self._lock:
            self.requests = self.answered = self.errors_500 = self.dropped = 0
            self.max_in_flight, self.busy_s, self.connections = self.in_flight, 0.0, 0

    def _answer(self, body: dict[str, Any]) -> tuple[int, bytes | None]:
        start = time.perf_counter()
        with self._lock:
            self.requests += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            what = self.fault(body) if self.fault else None
            if self.latency is not None:
                time.sleep(self.latency())
            if what == "drop":
                with self._lock:
                    self.dropped += 1
                return 0, None
            if what == "500":
                with self._lock:
                    self.errors_500 += 1
                return 500, b'{"error": {"message": "injected failure"}}'
            message = scripted_reply(body["messages"], body.get("tools") or [])
            text = reply_to_text(message)
            reply = {
                "choices": [{"message": message, "finish_reason": "stop"}],
                "usage": {"completion_tokens": max(1, len(text) // 4)},
            }
            with self._lock:
                self.answered += 1
            return 200, json.dumps(reply).encode()
        finally:
            with self._lock:
                self.in_flight -= 1
                self.busy_s += time.perf_counter() - start

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: no new connection per request

            def setup(self) -> None:  # one handler per connection
                super().setup()
                with owner._lock:
                    owner.connections += 1

            def do_POST(self) -> None:
                try:
                    body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                except (ValueError, OSError):  # the client cancelled while sending
                    self.close_connection = True
                    return
                status, data = owner._answer(body)
                if data is None:  # a dropped connection: no status line at all
                    self.close_connection = True
                    return
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up on this request (a cancelled one)

            def log_message(self, *args: object) -> None:
                pass

        return Handler

    def __enter__(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class FailFirstAttempts:
    """A :data:`Fault` rule: the first ``times`` requests with the same body fail, the kind
    picked by a hash of the body (``kinds``), one request body in ``every``; the retries then
    succeed. Deterministic whatever the timing."""

    def __init__(self, *, every: int = 3, times: int = 1, kinds: Sequence[str] = ("500", "drop")):
        self.every, self.times, self.kinds = every, times, tuple(kinds)
        self._seen: dict[int, int] = {}
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str | None:
        key = _digest(body["messages"])
        with self._lock:
            n = self._seen[key] = self._seen.get(key, 0) + 1
        if key % self.every or n > self.times:
            return None
        return self.kinds[(key // self.every) % len(self.kinds)]
