"""Asynchronous policies: ``await policy.act(item) -> Generation``, one request per episode.

The rollout engine (:mod:`agentgym.rollout.engine`) asks for ONE episode's next action at a
time and never waits for the other episodes, so its policy interface is per item and async:

* :class:`AsyncHTTPPolicy` — any OpenAI-compatible chat-completions server through
  ``httpx.AsyncClient``; HTTP 429/5xx and dropped connections are retried with exponential
  backoff, and what still fails raises :class:`~agentgym.agents.http.PolicyRequestError`
  (the engine marks that episode ``infra_failure``).
* :class:`BatchingPolicy` — wraps any batched synchronous :class:`~agentgym.agents.Policy`
  (scripted, oracle, a local model): requests that arrive while a batch runs are queued and
  sent together as the next batch, in a worker thread, so the event loop never blocks.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, runtime_checkable

import numpy as np

from agentgym.agents.base import Generation, Policy, PolicyInput
from agentgym.agents.http import PolicyRequestError, reply_to_text
from agentgym.error import DependencyMissingError


@runtime_checkable
class AsyncPolicy(Protocol):
    """Anything with ``async act(item) -> Generation`` for one episode's turn."""

    async def act(self, item: PolicyInput) -> Generation: ...


def backoff_seconds(attempt: int, retry_after: str | None, base_s: float, cap_s: float) -> float:
    """Wait before retry ``attempt`` (0-based): the server's ``Retry-After`` seconds when it
    sent them, else ``base_s * 2**attempt``; never more than ``cap_s``.

    >>> backoff_seconds(0, None, 0.5, 30), backoff_seconds(3, None, 0.5, 30)
    (0.5, 4.0)
    >>> backoff_seconds(2, "1.5", 0.5, 30), backoff_seconds(9, None, 1.0, 8.0)
    (1.5, 8.0)
    """
    wait = base_s * 2.0**attempt
    if retry_after:
        with contextlib.suppress(ValueError):  # an HTTP date: backoff is good enough
            wait = float(retry_after)
    return min(max(wait, 0.0), cap_s)


def _squeeze(text: str, limit: int = 300) -> str:
    return " ".join(text.split())[:limit]


class AsyncHTTPPolicy:
    """Chat completions over HTTP, one async request per episode turn.

    Args:
        base_url: e.g. ``http://127.0.0.1:8000/v1`` (``/chat/completions`` is appended).
        model: the served model name.
        api_key: sent as ``Authorization: Bearer ...`` when given.
        temperature: sampling temperature.
        max_tokens: generation budget of one reply.
        send_tools: pass the env's ``info["tools"]`` as OpenAI ``tools``.
        logprobs: ask for token logprobs (returned in ``Generation.logprobs``).
        timeout: seconds to wait for one reply.
        max_connections: HTTP connections open at once (set it to the episodes in flight).
        retries: retries of a request answered 429 or 5xx, or whose connection dropped.
        backoff_s: first retry waits this long, then twice as long each time (at most
            ``max_backoff_s``); a ``Retry-After`` header wins.
        extra_body: merged into every request (e.g. ``{"top_p": 0.9}``).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float = 1.0,
        max_tokens: int = 512,
        send_tools: bool = True,
        logprobs: bool = False,
        timeout: float = 120.0,
        max_connections: int = 256,
        retries: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 30.0,
        extra_body: Mapping[str, Any] | None = None,
    ):
        try:
            import httpx
        except ImportError as exc:
            raise DependencyMissingError(
                "httpx (needed by AsyncHTTPPolicy)", "pip install httpx"
            ) from exc
        self._httpx = httpx
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.send_tools = send_tools
        self.logprobs = logprobs
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.extra_body = dict(extra_body or {})
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = timeout
        self._max_connections = max_connections
        self._client: Any = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self.retried = 0
        """Requests sent again after a 429/5xx or a dropped connection (all time)."""

    def _client_for_this_loop(self) -> Any:
        """An ``AsyncClient`` bound to the running loop (a new loop gets a new client)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            limits = self._httpx.Limits(
                max_connections=self._max_connections,
                max_keepalive_connections=self._max_connections,
            )
            self._client = self._httpx.AsyncClient(
                timeout=self._timeout, headers=self._headers, limits=limits
            )
            self._client_loop = loop
        return self._client

    def _body(self, item: PolicyInput) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": item.messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            **self.extra_body,
        }
        if self.send_tools and item.info.get("tools"):
            body["tools"] = item.info["tools"]
        if self.logprobs:
            body["logprobs"] = True
        return body

    async def act(self, item: PolicyInput) -> Generation:
        """One chat completion for ``item``; raises PolicyRequestError once retries are spent."""
        client = self._client_for_this_loop()
        body = self._body(item)
        why = ""
        for attempt in range(self.retries + 1):
            if attempt:
                self.retried += 1
            retry_after = None
            try:
                resp = await client.post(self.url, json=body)
            except self._httpx.TransportError as exc:  # refused, dropped, timed out
                why = f"request to {self.url} failed: {_squeeze(str(exc)) or type(exc).__name__}"
            else:
                if resp.status_code == 200:
                    return self._generation(resp)
                why = f"{self.url} answered HTTP {resp.status_code}: {_squeeze(resp.text)}"
                if resp.status_code != 429 and resp.status_code < 500:
                    raise PolicyRequestError(why, status=resp.status_code)
                retry_after = resp.headers.get("retry-after")
            if attempt < self.retries:
                await asyncio.sleep(
                    backoff_seconds(attempt, retry_after, self.backoff_s, self.max_backoff_s)
                )
        raise PolicyRequestError(f"{why} (after {self.retries} retries)")

    def _generation(self, resp: Any) -> Generation:
        try:
            data = resp.json()
            choice = data["choices"][0]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise PolicyRequestError(
                f"{self.url} answered without a chat completion (expected JSON with "
                f"'choices'): {_squeeze(resp.text)}"
            ) from exc
        lps = None
        content = (choice.get("logprobs") or {}).get("content")
        if content:
            lps = np.array([float(t.get("logprob", 0.0)) for t in content], dtype=np.float32)
        return Generation(
            text=reply_to_text(choice.get("message") or {}),
            logprobs=lps,
            meta={"finish_reason": choice.get("finish_reason"), "usage": data.get("usage", {})},
        )

    async def aclose(self) -> None:
        """Close the HTTP client (of the running loop)."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None


class BatchingPolicy:
    """A batched synchronous policy behind an async, per-item ``act``.

    Requests that arrive while a batch is running wait in a queue and go together as the
    next batch (at most ``max_batch``), in a worker thread, so a GPU model still sees large
    batches and the event loop never blocks. One batch runs at a time.

    >>> import asyncio
    >>> from agentgym.agents.base import Generation, PolicyInput
    >>> class Upper:
    ...     def act(self, inputs):
    ...         return [Generation(text=i.messages[-1]["content"].upper()) for i in inputs]
    >>> async def ask_three():
    ...     policy = BatchingPolicy(Upper())
    ...     items = [PolicyInput(messages=[{"role": "user", "content": w}]) for w in "abc"]
    ...     return [g.text for g in await asyncio.gather(*map(policy.act, items))]
    >>> asyncio.run(ask_three())
    ['A', 'B', 'C']
    """

    def __init__(self, policy: Policy, *, max_batch: int = 256):
        self.policy = policy
        self.max_batch = max_batch
        self._queue: list[tuple[PolicyInput, asyncio.Future[Generation]]] = []
        self._worker: asyncio.Task[None] | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="batching-policy")
        self.batch_sizes: list[int] = []
        """Size of every batch sent to the wrapped policy, in order."""

    async def act(self, item: PolicyInput) -> Generation:
        future: asyncio.Future[Generation] = asyncio.get_running_loop().create_future()
        self._queue.append((item, future))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self._queue:
            await asyncio.sleep(0)  # let every episode that is ready enqueue first
            batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
            batch = [(item, fut) for item, fut in batch if not fut.cancelled()]
            if not batch:
                continue
            self.batch_sizes.append(len(batch))
            items = [item for item, _ in batch]
            try:
                gens = await loop.run_in_executor(self._thread, self.policy.act, items)
            except Exception as exc:  # the whole batch failed: each episode gets the cause
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(exc)
                continue
            for (_, fut), gen in zip(batch, gens):
                if not fut.done():
                    fut.set_result(gen)

    def close(self) -> None:
        self._thread.shutdown(wait=False)


def as_async(policy: AsyncPolicy | Policy) -> AsyncPolicy:
    """``policy`` itself when it is async, else a :class:`BatchingPolicy` around it."""
    if asyncio.iscoroutinefunction(getattr(policy, "act", None)):
        return policy  # type: ignore[return-value]
    return BatchingPolicy(policy)  # type: ignore[arg-type]


__all__: Sequence[str] = (
    "AsyncHTTPPolicy",
    "AsyncPolicy",
    "BatchingPolicy",
    "as_async",
    "backoff_seconds",
)
