"""Asynchronous policies: ``await policy.act(item) -> Generation``, one request per episode.

The rollout engine (:mod:`agentgym.rollout.engine`) asks for ONE episode's next action at a
time and never waits for the other episodes, so its policy interface is per item and async:

* :class:`AsyncHTTPPolicy` — any OpenAI-compatible chat-completions server through
  ``httpx.AsyncClient``, with :class:`~agentgym.agents.http.HTTPPolicy`'s request code
  (:class:`~agentgym.agents.http.ChatCompletions`): HTTP 429/5xx and dropped connections
  are retried with exponential backoff, and what still fails raises
  :class:`~agentgym.agents.http.PolicyRequestError` (the engine marks that episode
  ``infra_failure``). An ``HTTPPolicy`` itself is used the same way (:func:`as_async`).
* :class:`BatchingPolicy` — wraps any batched synchronous :class:`~agentgym.agents.Policy`
  (scripted, oracle, a local model): requests that arrive while a batch runs are queued and
  sent together as the next batch, in a worker thread, so the event loop never blocks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, runtime_checkable

from agentgym.agents.base import Generation, Policy, PolicyInput
from agentgym.agents.http import ChatCompletions


@runtime_checkable
class AsyncPolicy(Protocol):
    """Anything with ``async act(item) -> Generation`` for one episode's turn."""

    async def act(self, item: PolicyInput) -> Generation: ...


class AsyncHTTPPolicy(ChatCompletions):
    """Chat completions over HTTP, one async request per episode turn.

    The same request code as :class:`~agentgym.agents.http.HTTPPolicy` (body, native tool
    messages with the text fallback, retries of 429/5xx and failed connections with
    exponential backoff, reply parsing), sent through ``httpx.AsyncClient``. Arguments are
    :class:`~agentgym.agents.http.HTTPPolicy`'s; ``max_connections`` (HTTP connections
    open at once: set it to the episodes in flight) names its ``max_concurrency``. The
    connections are spread over pools of at most
    :data:`~agentgym.agents.http.CONNECTIONS_PER_CLIENT` (httpx's per-request cost grows
    with the size of its pool), each request going to the pool with the most free ones.
    """

    def __init__(self, base_url: str, model: str, *, max_connections: int = 256, **options: Any):
        super().__init__(base_url, model, max_concurrency=max_connections, **options)

    async def act(self, item: PolicyInput) -> Generation:
        """One chat completion for ``item``; raises PolicyRequestError once retries are spent."""
        return await self.arequest(item)


class PerRequestPolicy:
    """A policy with ``async arequest(item)`` (an :class:`~agentgym.agents.http.HTTPPolicy`)
    seen through the async per-item interface: one request per turn, no batching."""

    def __init__(self, policy: Any):
        self.policy = policy

    async def act(self, item: PolicyInput) -> Generation:
        return await self.policy.arequest(item)

    async def aclose(self) -> None:
        await self.policy.aclose()


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
    """``policy`` itself when it is async; a :class:`PerRequestPolicy` when it can send one
    request at a time asynchronously (``HTTPPolicy``); else a :class:`BatchingPolicy`."""
    if asyncio.iscoroutinefunction(getattr(policy, "act", None)):
        return policy  # type: ignore[return-value]
    if asyncio.iscoroutinefunction(getattr(policy, "arequest", None)):
        return PerRequestPolicy(policy)
    return BatchingPolicy(policy)  # type: ignore[arg-type]


__all__: Sequence[str] = (
    "AsyncHTTPPolicy",
    "AsyncPolicy",
    "BatchingPolicy",
    "PerRequestPolicy",
    "as_async",
)
