"""A fake OpenAI-compatible chat-completions server on 127.0.0.1, shared by the tests.

Stands in for vLLM, SGLang or a hosted API: ``POST /v1/chat/completions`` answers every
request that carries ``tools`` with a structured tool call (``move`` up, Sokoban's tool),
one whose last message is ``"fail"`` with HTTP 500, and any other with ``"echo <last>"``.
Tests read what was asked (:attr:`FakeOpenAI.requests`), how many requests were in flight
at once (:attr:`FakeOpenAI.max_in_flight`), and can queue error statuses to answer first
(:attr:`FakeOpenAI.statuses`). ``stall_after=N`` makes every request after the first N hang
until the server closes (a model server stuck on a long generation; :attr:`FakeOpenAI.stalled`
is set when the first one arrives), and ``reject_tool_messages`` answers HTTP 400 to a request
holding ``role: tool`` messages, as servers without native tool messages do. The
``fake_openai`` fixture in ``tests/conftest.py`` starts one per test.

``python -m tests.fake_openai --port P --content TEXT --log FILE`` runs one in the foreground
that replies ``TEXT`` to every request and appends each request body to ``FILE`` (JSON lines):
the docs test starts it in place of the model server a page tells the reader to run.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[dict[str, Any]], dict[str, Any]]


def move_up_or_echo(body: dict[str, Any]) -> dict[str, Any]:
    """The default reply: a ``move`` tool call when tools were sent, else an echo."""
    if body.get("tools"):
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_0",
                    "type": "function",
                    "function": {"name": "move", "arguments": json.dumps({"direction": "up"})},
                }
            ],
        }
    return {"role": "assistant", "content": f"echo {body['messages'][-1]['content']}"}


class FakeOpenAI:
    """The server; ``url`` is its ``/v1`` root (what ``--base-url`` takes).

    Args:
        reply: Builds the assistant message from a request body.
        delay_s: Seconds each reply waits, so concurrent requests overlap measurably.
        port: The port on 127.0.0.1 (0: any free one).
    """

    def __init__(
        self,
        reply: Reply = move_up_or_echo,
        delay_s: float = 0.0,
        port: int = 0,
        *,
        stall_after: int | None = None,
        reject_tool_messages: bool = False,
    ):
        self.reply = reply
        self.delay_s = delay_s
        self.stall_after = stall_after
        self.reject_tool_messages = reject_tool_messages
        self.stalled = threading.Event()
        """Set when the first request past ``stall_after`` arrives."""
        self._closing = threading.Event()
        self.requests: list[tuple[str, str | None, dict[str, Any]]] = []
        self.statuses: list[int] = []
        """HTTP error statuses to answer the next requests with, in order, before replying."""
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _answer(self, path: str, auth: str | None, body: dict[str, Any]) -> tuple[int, bytes]:
        with self._lock:
            self.requests.append((path, auth, body))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            status = self.statuses.pop(0) if self.statuses else 200
            stall = self.stall_after is not None and len(self.requests) > self.stall_after
        try:
            if stall:
                self.stalled.set()
                self._closing.wait()
                return 503, b"server closed"
            time.sleep(self.delay_s)
            if self.reject_tool_messages and any(m.get("role") == "tool" for m in body["messages"]):
                return 400, b'{"error": {"message": "unexpected role tool"}}'

            if status != 200:
                return status, json.dumps({"error": {"message": f"status {status}"}}).encode()
            if body["messages"][-1].get("content") == "fail":
                return 500, b"boom"
            reply = {
                "choices": [
                    {
                        "message": self.reply(body),
                        "finish_reason": "stop",
                        "logprobs": {
                            "content": [
                                {"token": "a", "logprob": -0.5},
                                {"token": "b", "logprob": -1.5},
                            ]
                        },
                    }
                ],
                "usage": {"completion_tokens": 2},
            }
            return 200, json.dumps(reply).encode()
        finally:
            with self._lock:
                self.in_flight -= 1

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, data = owner._answer(self.path, self.headers.get("Authorization"), body)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    if status == 429:
                        self.send_header("Retry-After", "0")  # a rate limit the client may retry
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client left (an interrupted run): nobody to answer

            def log_message(self, *args: object) -> None:
                pass

        return Handler

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()


def _serve_forever() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="A stand-in OpenAI-compatible server.")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--content", required=True, help="the assistant's reply to every request")
    parser.add_argument("--log", required=True, help="append each request body here (JSONL)")
    args = parser.parse_args()

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        with open(args.log, "a") as log:
            log.write(json.dumps(body) + "\n")
        return {"role": "assistant", "content": args.content}

    with FakeOpenAI(reply, port=args.port) as server:
        server._thread.join()


if __name__ == "__main__":
    _serve_forever()
