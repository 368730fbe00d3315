"""``HTTPPolicy``: any OpenAI-compatible chat-completions server as a batched policy.

For evaluation and data collection with served models (vLLM, SGLang, llama.cpp, a hosted
API). One :meth:`HTTPPolicy.act` call sends the batch's requests concurrently (a thread per
request, up to ``max_concurrency``). Structured ``tool_calls`` in the reply are rendered back
to the canonical ``<tool_call>{...}</tool_call>`` text the envs parse, so the env sees the
same action whichever way the model produced it. Token logprobs are returned when the server
gives them (``logprobs=True``).

Past turns go back to the server the way chat templates expect them: an assistant turn whose
text holds tool calls becomes an assistant message with native ``tool_calls``, and the env's
reply to it a ``role: tool`` message (:func:`native_tool_messages`). A server that refuses
those (HTTP 400/422) gets the plain-text history instead, for the rest of the run.

Request threads are daemon threads and nothing waits for a request in flight on
:meth:`HTTPPolicy.close`, so Ctrl-C ends a run at once even while a slow server is thinking.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, Literal

import numpy as np

from agentgym.agents.base import Generation, PolicyInput
from agentgym.error import AgentGymError, DependencyMissingError
from agentgym.parsing import _split_tagged, render_tool_call

logger = logging.getLogger(__name__)

#: How past tool calls are sent: native messages, plain text, or native until refused.
ToolMessages = Literal["auto", "native", "text"]


class PolicyRequestError(AgentGymError, RuntimeError):
    """The model server refused or failed a request (``status``: its HTTP status, if any)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def retry_delay(
    attempt: int, header: str | None = None, base_s: float = 1.0, cap_s: float = 30.0
) -> float:
    """Seconds to wait before retry ``attempt`` (0-based).

    The server's ``Retry-After`` (seconds) when it sent one, else exponential backoff
    ``base_s * 2**attempt`` (1, 2, 4, 8... s); never more than ``cap_s``.

    >>> [retry_delay(a) for a in range(6)], retry_delay(0, "3"), retry_delay(9, None, 1.0, 8.0)
    ([1.0, 2.0, 4.0, 8.0, 16.0, 30.0], 3.0, 8.0)
    """
    backoff = base_s * 2.0**attempt
    try:
        wait = float(header) if header else backoff
    except ValueError:  # an HTTP date: not worth parsing for a retry
        wait = backoff
    return min(max(wait, 0.0), cap_s)


def _one_line(text: str, limit: int = 300) -> str:
    """A server's reply body squeezed onto one line, for an error message."""
    return " ".join(text.split())[:limit]


def reply_to_text(message: Mapping[str, Any]) -> str:
    """An assistant message (content and/or ``tool_calls``) as one action string."""
    parts = []
    if message.get("content"):
        parts.append(str(message["content"]))
    for call in message.get("tool_calls") or []:
        fn = call.get("function", {})
        raw = fn.get("arguments", "{}")
        try:
            args = json.loads(raw) if isinstance(raw, str) else dict(raw)
        except (json.JSONDecodeError, TypeError, ValueError):
            # keep the model's malformed arguments visible to the env's parser
            parts.append(
                f'<tool_call>{{"name": {json.dumps(fn.get("name", ""))}, '
                f'"arguments": {raw}}}</tool_call>'
            )
            continue
        parts.append(render_tool_call(str(fn.get("name", "")), args))
    return "\n".join(parts)


def _native_calls(text: str) -> tuple[str, list[dict[str, Any]]] | None:
    """The text outside ``<tool_call>`` blocks and the calls as OpenAI ``tool_calls``.

    ``None`` when the turn holds no call, or any call that is not a well-formed
    ``{"name": ..., "arguments": {...}}`` object: such a turn stays text, so the model sees
    exactly what it wrote (and the env's complaint about it).
    """
    bodies, outside, unclosed = _split_tagged(text, "tool_call")
    if not bodies or unclosed:
        return None
    calls = []
    for body in bodies:
        try:
            call = json.loads(body)
        except (json.JSONDecodeError, RecursionError):
            return None
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            return None
        args = call.get("arguments", {})
        if not isinstance(args, dict):
            return None
        calls.append({"name": call["name"], "arguments": json.dumps(args, ensure_ascii=False)})
    return outside.strip(), calls


def _text_and_images(content: Any) -> tuple[str, list[Any]]:
    """A message's text and its non-text content parts (images)."""
    if isinstance(content, str):
        return content, []
    texts, others = [], []
    for part in content or []:
        if isinstance(part, Mapping) and part.get("type") == "text":
            texts.append(str(part.get("text", "")))
        else:
            others.append(part)
    return "\n".join(texts), others


#: The content of the tool messages before the last when one turn made several calls: the
#: env answers a turn with one observation, which goes in the last call's message.
SEE_NEXT_RESULT = "(the result of this turn's calls is in the last tool message)"


def native_tool_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages with past tool calls as native ``tool_calls`` and ``role: tool`` replies.

    An assistant message whose text holds ``<tool_call>`` blocks becomes an assistant
    message with ``tool_calls`` (ids ``call_<message index>_<k>``) and the text outside the
    blocks as content; the user message that follows (the env's observation) becomes one
    ``role: tool`` message per call, the observation text in the last one. Images in that
    observation follow in a user message (tool messages carry text only). Other messages
    are kept as they are.

    >>> msgs = [{"role": "user", "content": "go"},
    ...         {"role": "assistant", "content": render_tool_call("move", {"d": "up"})},
    ...         {"role": "user", "content": "moved"}]
    >>> out = native_tool_messages(msgs)
    >>> out[1]["tool_calls"][0]["function"]
    {'name': 'move', 'arguments': '{"d": "up"}'}
    >>> out[2]
    {'role': 'tool', 'tool_call_id': 'call_1_0', 'content': 'moved'}
    """
    out: list[dict[str, Any]] = []
    pending: list[str] = []  # ids of the calls the next user message answers
    for index, message in enumerate(messages):
        role, content = message.get("role"), message.get("content")
        if pending and role == "user":
            text, images = _text_and_images(content)
            for k, call_id in enumerate(pending):
                body = text if k == len(pending) - 1 else SEE_NEXT_RESULT
                out.append({"role": "tool", "tool_call_id": call_id, "content": body})
            if images:
                out.append({"role": "user", "content": images})
            pending = []
            continue
        pending = []
        split = _native_calls(content) if role == "assistant" and isinstance(content, str) else None
        if split is None:
            out.append(dict(message))
            continue
        rest, calls = split
        pending = [f"call_{index}_{k}" for k in range(len(calls))]
        out.append(
            {
                "role": "assistant",
                "content": rest or None,
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": call}
                    for call_id, call in zip(pending, calls)
                ],
            }
        )
    return out


class _DaemonWorkers:
    """A bounded set of daemon threads running submitted calls.

    Unlike :class:`concurrent.futures.ThreadPoolExecutor`, whose workers the interpreter
    joins at exit, these never hold up the exit of an interrupted run: a request stuck on a
    slow server is simply abandoned.
    """

    def __init__(self, max_workers: int):
        self._max = max(1, max_workers)
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []

    def submit(self, fn: Callable[[Any], Any], arg: Any) -> Future:
        future: Future = Future()
        self._jobs.put((fn, arg, future))
        if len(self._threads) < self._max:
            thread = threading.Thread(target=self._work, daemon=True, name="HTTPPolicy")
            thread.start()
            self._threads.append(thread)
        return future

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, arg, future = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(arg))
            except BaseException as exc:  # handed to the caller through the future
                future.set_exception(exc)

    def shutdown(self) -> None:
        """Let idle workers end; a worker busy with a request ends when it returns."""
        for _ in self._threads:
            self._jobs.put(None)
        self._threads = []


CONNECTIONS_PER_CLIENT = 8
"""Connections of one ``httpx.AsyncClient`` in :class:`ChatCompletions`' async transport.

httpcore's connection pool walks all its connections (and asks each socket whether it is
still readable) on every request it sends and every reply it releases, so one pool of
hundreds of connections spends more CPU per request than the request itself: at 256
episodes in flight the client process, not the model server, set the pace. Connections are
therefore spread over several small pools (:class:`_ClientShards`)."""


class _ClientShards:
    """``total`` connections spread over ``ceil(total / CONNECTIONS_PER_CLIENT)`` clients.

    Each request goes to the client with the most free connections, so a request waits for
    a connection only when all ``total`` are busy, as with one client of ``total``.

    >>> shards = _ClientShards(lambda n: n, 20)  # "clients" that are just their sizes
    >>> shards.clients
    [7, 7, 6]
    >>> [shards.pick() for _ in range(5)], shards.busy
    ([0, 1, 0, 1, 2], [2, 2, 1])
    """

    def __init__(self, make: Callable[[int], Any], total: int):
        count = max(1, math.ceil(total / CONNECTIONS_PER_CLIENT))
        self.sizes = [total // count + (i < total % count) for i in range(count)]
        self.clients = [make(max(1, size)) for size in self.sizes]
        self.busy = [0] * count

    def pick(self) -> int:
        """The index of the client with the most free connections (it is then counted busy)."""
        free = [size - busy for size, busy in zip(self.sizes, self.busy)]
        index = free.index(max(free))
        self.busy[index] += 1
        return index

    async def post(self, url: str, **kwargs: Any) -> Any:
        index = self.pick()
        try:
            return await self.clients[index].post(url, **kwargs)
        finally:
            self.busy[index] -= 1

    async def aclose(self) -> None:
        for client in self.clients:
            await client.aclose()


class ChatCompletions:
    """The request side of an OpenAI-compatible chat-completions server, written once.

    Builds the request body, decides which failures are retried and how long to wait,
    switches past tool calls to text when the server refuses native ones, and turns the
    reply into a :class:`~agentgym.agents.base.Generation`. Two transports use it:
    :meth:`request` (a blocking ``httpx.Client``, for :class:`HTTPPolicy`'s threads) and
    :meth:`arequest` (``httpx.AsyncClient`` pools per event loop, for the rollout engine's
    :class:`~agentgym.rollout.AsyncHTTPPolicy`). The arguments are :class:`HTTPPolicy`'s.
    """

    #: HTTP statuses that say "try again later" rather than "this request is wrong" (and 5xx).
    RETRY_STATUSES = frozenset({429})

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float = 1.0,
        top_p: float | None = None,
        max_tokens: int = 512,
        send_tools: bool = True,
        logprobs: bool = False,
        timeout: float = 120.0,
        max_concurrency: int = 16,
        retries: int = 4,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        extra_body: Mapping[str, Any] | None = None,
        tool_messages: ToolMessages = "auto",
    ):
        try:
            import httpx
        except ImportError as exc:
            raise DependencyMissingError(
                f"httpx (needed by {type(self).__name__})", "pip install httpx"
            ) from exc
        if tool_messages not in ("auto", "native", "text"):
            raise ValueError(f"tool_messages must be auto, native or text, got {tool_messages!r}")
        self._httpx = httpx
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.temperature = temperature
        self.top_p = top_p
        self.max_tokens = max_tokens
        self.send_tools = send_tools
        self.logprobs = logprobs
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.max_concurrency = max_concurrency
        self.extra_body = dict(extra_body or {})
        self.tool_messages: ToolMessages = tool_messages
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = timeout
        self._sync_client: Any = None
        self._async_clients: _ClientShards | None = None
        self._async_loop: asyncio.AbstractEventLoop | None = None
        self._reached = False  # the server has answered once: connection errors are retried
        self.retried = 0
        """Requests sent again after a 429/5xx or a failed connection (all time)."""

    # ---- the request, its retries and its reply (shared) -------------------------------

    def _body(self, item: PolicyInput, native: bool) -> dict[str, Any]:
        messages = native_tool_messages(item.messages) if native else list(item.messages)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.top_p is not None:
            body["top_p"] = self.top_p
        if self.send_tools and item.info.get("tools"):
            body["tools"] = item.info["tools"]
        if self.logprobs:
            body["logprobs"] = True
        body.update(self.extra_body)
        return body

    def _retryable(self, status: int) -> bool:
        return status in self.RETRY_STATUSES or status >= 500

    def _retry_wait(self, attempt: int, resp: Any, exc: Exception | None) -> float | None:
        """After attempt ``attempt``: None to use ``resp`` as the answer, else the seconds to
        wait before trying again. A connection error is final when retries are spent, or
        when the server could not be reached and never was (most likely a wrong address)."""
        if exc is not None:
            never = not self._reached and isinstance(exc, self._httpx.ConnectError)
            transport = isinstance(exc, self._httpx.TransportError)
            if not transport or never or attempt >= self.retries:
                why = _one_line(str(exc)) or type(exc).__name__
                raise PolicyRequestError(
                    f"request to {self.url} failed: {why}. Is the server up at that address?"
                ) from exc
            logger.warning("request to %s failed (%s); retrying", self.url, exc)
            header = None
        else:
            self._reached = True
            if not self._retryable(resp.status_code) or attempt >= self.retries:
                return None
            logger.warning("%s answered HTTP %d; retrying", self.url, resp.status_code)
            header = resp.headers.get("retry-after")
        self.retried += 1
        return retry_delay(attempt, header, self.backoff_s, self.max_backoff_s)

    def _refused_native(self, resp: Any, body: dict[str, Any]) -> bool:
        """The server refused native tool messages and ``auto`` falls back to text (now and
        for the rest of the run): the request must be sent again as text."""
        if (
            resp.status_code in (400, 422)
            and self.tool_messages == "auto"
            and any(m.get("role") == "tool" for m in body["messages"])
        ):
            self.tool_messages = "text"
            logger.warning(
                "%s refused native tool messages (HTTP %d: %s); sending past tool calls as "
                "text from now on",
                self.url,
                resp.status_code,
                _one_line(resp.text, 120),
            )
            return True
        return False

    def _generation(self, resp: Any) -> Generation:
        """The final response as a generation; a typed error for anything but a completion."""
        if resp.status_code != 200:
            hint = ""
            if resp.status_code in (401, 403):
                hint = " (the server wants an API key: is the right one set?)"
            retried = (
                f" (after {self.retries} retries)" if self._retryable(resp.status_code) else ""
            )
            raise PolicyRequestError(
                f"{self.url} answered HTTP {resp.status_code}{hint}{retried}: "
                f"{_one_line(resp.text)}",
                status=resp.status_code,
            )
        try:
            data = resp.json()
            choice = data["choices"][0]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise PolicyRequestError(
                f"{self.url} answered without a chat completion (expected JSON with "
                f"'choices'): {_one_line(resp.text)}"
            ) from exc
        text = reply_to_text(choice.get("message") or {})
        lps = None
        content = (choice.get("logprobs") or {}).get("content")
        if content:
            lps = np.array([float(t.get("logprob", 0.0)) for t in content], dtype=np.float32)
        return Generation(
            text=text,
            logprobs=lps,
            meta={"finish_reason": choice.get("finish_reason"), "usage": data.get("usage", {})},
        )

    # ---- blocking transport ------------------------------------------------------------

    def _post(self, body: dict[str, Any]) -> Any:
        if self._sync_client is None:
            self._sync_client = self._httpx.Client(timeout=self._timeout, headers=self._headers)
        for attempt in itertools.count():
            resp, exc = None, None
            try:
                resp = self._sync_client.post(self.url, json=body)
            except Exception as error:
                exc = error
            wait = self._retry_wait(attempt, resp, exc)
            if wait is None:
                return resp
            time.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def request(self, item: PolicyInput) -> Generation:
        """One chat completion for ``item`` (blocking); PolicyRequestError when it fails."""
        body = self._body(item, self.tool_messages != "text")
        resp = self._post(body)
        if self._refused_native(resp, body):
            resp = self._post(self._body(item, False))
        return self._generation(resp)

    # ---- asyncio transport -------------------------------------------------------------

    def _clients_for_this_loop(self) -> _ClientShards:
        """The ``AsyncClient`` shards bound to the running loop (a new loop gets new ones)."""
        loop = asyncio.get_running_loop()
        if self._async_clients is None or self._async_loop is not loop:
            httpx, timeout, headers = self._httpx, self._timeout, self._headers

            def client(connections: int) -> Any:
                limits = httpx.Limits(
                    max_connections=connections, max_keepalive_connections=connections
                )
                return httpx.AsyncClient(timeout=timeout, headers=headers, limits=limits)

            self._async_clients = _ClientShards(client, self.max_concurrency)
            self._async_loop = loop
        return self._async_clients

    async def _apost(self, body: dict[str, Any]) -> Any:
        clients = self._clients_for_this_loop()
        for attempt in itertools.count():
            resp, exc = None, None
            try:
                resp = await clients.post(self.url, json=body)
            except Exception as error:
                exc = error
            wait = self._retry_wait(attempt, resp, exc)
            if wait is None:
                return resp
            await asyncio.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    async def arequest(self, item: PolicyInput) -> Generation:
        """One chat completion for ``item`` on the running event loop (see :meth:`request`)."""
        body = self._body(item, self.tool_messages != "text")
        resp = await self._apost(body)
        if self._refused_native(resp, body):
            resp = await self._apost(self._body(item, False))
        return self._generation(resp)

    async def aclose(self) -> None:
        """Close the async HTTP client of the running loop."""
        if self._async_clients is not None and self._async_loop is asyncio.get_running_loop():
            await self._async_clients.aclose()
        self._async_clients = self._async_loop = None


class HTTPPolicy(ChatCompletions):
    """Chat completions over HTTP, as a batched policy (one thread per request).

    Args:
        base_url: e.g. ``http://127.0.0.1:8000/v1`` (``/chat/completions`` is appended).
        model: the served model name.
        api_key: sent as ``Authorization: Bearer ...`` when given.
        send_tools: pass the env's ``info["tools"]`` as OpenAI ``tools``.
        temperature: sampling temperature (``agentgym eval`` sets 0 for its greedy mode).
        top_p: nucleus-sampling mass, sent as ``top_p`` when given.
        max_tokens: generation budget of one reply.
        logprobs: ask for token logprobs.
        timeout: seconds to wait for one reply.
        max_concurrency: requests in flight at once (one :meth:`act` batch is sent together;
            also the connection limit of :meth:`arequest`).
        retries: how often a request is retried when the server answers 429 (rate limit) or
            any 5xx, or the connection fails; after ``Retry-After`` or ``backoff_s`` * 1, 2,
            4... s (at most ``max_backoff_s``). A server that could not be reached and
            never was fails at once: it is most likely a wrong address.
        backoff_s: the first retry's wait when the server gives no ``Retry-After``.
        max_backoff_s: the longest wait before a retry.
        extra_body: merged into every request last, so it may set any field (e.g.
            ``{"chat_template_kwargs": {"enable_thinking": False}}`` for vLLM/SGLang).
        tool_messages: how past tool calls are sent: ``"native"`` (assistant ``tool_calls``
            and ``role: tool`` replies, see :func:`native_tool_messages`), ``"text"`` (as
            the model wrote them, the env's reply as a user message), or ``"auto"``
            (native until the server refuses them with HTTP 400/422, then text).

    The rollout engine uses the same object asynchronously (:meth:`arequest`, one request
    per episode turn, no batch barrier).
    """

    def __init__(self, base_url: str, model: str, **options: Any):
        super().__init__(base_url, model, **options)
        self._sync_client = self._httpx.Client(timeout=self._timeout, headers=self._headers)
        self._workers = _DaemonWorkers(self.max_concurrency)
        self._in_flight = 0
        self._lock = threading.Lock()

    def _counted(self, item: PolicyInput) -> Generation:
        with self._lock:
            self._in_flight += 1
        try:
            return self.request(item)
        finally:
            with self._lock:
                self._in_flight -= 1

    def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]:
        """Send all requests at once; results come back in input order.

        An interrupt (Ctrl-C) while waiting leaves the requests in flight to their daemon
        threads and cancels those not yet sent.
        """
        futures = [self._workers.submit(self._counted, item) for item in inputs]
        try:
            return [f.result() for f in futures]
        except BaseException:
            for f in futures:
                f.cancel()
            raise

    def close(self) -> None:
        """Release the threads and connections; never waits for a request in flight."""
        self._workers.shutdown()
        with self._lock:
            idle = self._in_flight == 0
        if idle:  # a request still in flight keeps its connection until it ends
            self._sync_client.close()
