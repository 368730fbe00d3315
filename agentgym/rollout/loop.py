"""Run a collection's event loop from synchronous code, with a bounded stop on Ctrl-C.

``asyncio.run`` cancels the main task on Ctrl-C and then waits, without a limit, for every
other task of the loop to finish cancelling. A task that shields part of its work (an HTTP
client closing a connection whose reply never comes) can make that wait last forever, and
the user's Ctrl-C then hangs instead of stopping the run. :func:`run_bounded` stops the same
way (the main task is cancelled, so its ``finally`` blocks run and what finished is kept) but
gives the remaining tasks ``grace_s`` seconds and then closes the loop regardless.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_bounded(main: Coroutine[Any, Any, T], *, grace_s: float = 2.0) -> T:
    """Run ``main`` to completion on a new event loop and return its result.

    The first Ctrl-C cancels ``main`` (raising KeyboardInterrupt here once it has unwound);
    a second one raises KeyboardInterrupt at once. On the way out every task still pending
    is cancelled and given at most ``grace_s`` seconds.
    """
    loop = asyncio.new_event_loop()
    task = loop.create_task(main)
    interrupted = False

    def on_sigint(signum: int, frame: Any) -> None:
        nonlocal interrupted
        if interrupted or task.done():
            raise KeyboardInterrupt
        interrupted = True
        loop.call_soon_threadsafe(task.cancel)

    own_handler = (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    )
    if own_handler:
        signal.signal(signal.SIGINT, on_sigint)
    try:
        return loop.run_until_complete(task)
    except asyncio.CancelledError:
        if interrupted:
            raise KeyboardInterrupt from None
        raise
    finally:
        if own_handler:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for t in pending:
                t.cancel()
            if pending:  # asyncio.wait never waits past its timeout (wait_for may)
                loop.run_until_complete(asyncio.wait(pending, timeout=grace_s))
        finally:
            # tasks that outlived the grace are dropped with the loop, without a report each
            loop.set_exception_handler(lambda _loop, _context: None)
            loop.close()


async def close_within(owner: Any, *, timeout_s: float = 2.0) -> None:
    """Await ``owner.aclose()`` (its async HTTP client, say) when it has one, for at most
    ``timeout_s`` seconds: a close that waits on a reply that never comes must not hold up
    the end of a run (``asyncio.wait``, since ``wait_for`` can wait on a shielded close
    forever). A failed close is not the run's failure; it is retrieved and dropped."""
    aclose = getattr(owner, "aclose", None)
    if not callable(aclose):
        return
    closing = asyncio.ensure_future(aclose())
    await asyncio.wait({closing}, timeout=timeout_s)
    if closing.done() and not closing.cancelled():
        closing.exception()
