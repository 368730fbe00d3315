"""Env slots out of a source: how many, and giving them back off the event loop.

The engine asks a source for a slot only while fewer than the source's live ``capacity``
are out (lent to episodes, or on their way back), so a source whose envs were retired is
never asked for more than it has, and an episode waits for a slot instead of failing. A
slot goes back in a worker thread: a release may restart a worker process or close a
server session, and must not stall the event loop; the count drops once it is back.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from agentgym.rollout.sources import EnvSlot, EnvSource


class SlotLedger:
    """Slots of ``source`` that are out; see the module docstring."""

    def __init__(self, source: EnvSource):
        self.source = source
        self.inline = bool(getattr(source, "lends_inline", False))
        """The source lends a slot and takes a healthy one back with a lock and a list
        operation (``lends_inline``): both happen on the event loop, no thread hop."""
        self.takes_back_inline = self.inline or bool(getattr(source, "takes_back_inline", False))
        """The source takes a healthy slot back with a lock and a list operation (it may
        still lend through a thread: making an env can be slow). Done on the event loop,
        the slot is free again before the episode that replaces its user asks for one;
        through a thread, that ask could come first and make one more env."""
        self.out = 0
        """Slots lent to episodes or on their way back to the source."""
        self.release_errors: list[BaseException] = []
        """Exceptions a source raised while taking a slot back (the slot is counted back)."""
        self._lock = threading.Lock()
        self._pending: set[Future[None]] = set()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._threads = ThreadPoolExecutor(max_workers=4, thread_name_prefix="rollout-release")

    def live_capacity(self) -> int | None:
        """The source's capacity now (None: unbounded); it shrinks as envs are retired."""
        return self.source.capacity

    def try_take(self) -> bool:
        """Count one more slot out when the source has one to lend; False when it has not."""
        capacity = self.source.capacity
        with self._lock:
            if capacity is not None and self.out >= capacity:
                return False
            self.out += 1
            return True

    def untake(self) -> None:
        """A slot is back, or a counted slot never came (the acquire failed or was
        dropped): count it back and wake the episodes waiting for one."""
        with self._lock:
            self.out -= 1
            waiters, self._waiters = self._waiters, []
        for loop, waiter in waiters:
            if not loop.is_closed():
                loop.call_soon_threadsafe(_settle, waiter)

    async def returned(self, timeout_s: float) -> None:
        """Wait until a slot comes back (at once when one is free already), at most
        ``timeout_s`` (the source may also grow back on its own)."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        with self._lock:
            capacity = self.source.capacity
            if capacity is None or self.out < capacity:
                return
            self._waiters.append((loop, waiter))
        try:
            await asyncio.wait({waiter}, timeout=timeout_s)
        finally:
            with self._lock:
                if (loop, waiter) in self._waiters:
                    self._waiters.remove((loop, waiter))

    def give_back(self, slot: EnvSlot, *, healthy: bool) -> None:
        """Return ``slot`` to the source in a worker thread (inline once closed, or when
        the source takes a healthy slot back with a list operation: ``takes_back_inline``
        or ``lends_inline``)."""
        if healthy and self.takes_back_inline:
            self._release(slot, healthy)
            return
        try:
            future = self._threads.submit(self._release, slot, healthy)
        except RuntimeError:  # closed: nobody waits on a thread any more
            self._release(slot, healthy)
            return
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._forget)

    def give_back_unclaimed(self, acquiring: Future[Any]) -> None:
        """Done callback of an acquire whose episode stopped waiting for it (a timeout, a
        cancelled call): the slot, if one came, goes back unused."""
        if acquiring.cancelled() or acquiring.exception() is not None:
            self.untake()
        else:
            self.give_back(acquiring.result(), healthy=True)

    def drain(self, timeout_s: float) -> None:
        """Wait (at most ``timeout_s``) until every slot on its way back is back."""
        with self._lock:
            pending = set(self._pending)
        if pending:
            wait(pending, timeout=timeout_s)

    def close(self, timeout_s: float = 60.0) -> None:
        """Wait for the slots on their way back, then stop the release threads."""
        self.drain(timeout_s)
        self._threads.shutdown(wait=False)

    def _release(self, slot: EnvSlot, healthy: bool) -> None:
        try:
            self.source.release(slot, healthy=healthy)
        except Exception as exc:  # counted back all the same: the slot is gone either way
            self.release_errors.append(exc)
        finally:
            self.untake()

    def _forget(self, future: Future[None]) -> None:
        with self._lock:
            self._pending.discard(future)


def _settle(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
