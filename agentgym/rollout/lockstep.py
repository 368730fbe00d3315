"""Lockstep: the engine's mode in which every turn is one policy call for all episodes.

With ``RolloutConfig(lockstep=True)`` the engine still runs each episode as its own task,
but no policy request goes out alone. Requests wait until every running episode has asked
(an episode that just ended has been replaced by the next one, and that one has been reset
and asked too); then the batched policy is called ONCE with all of them, in lane order.

Lanes are what make a lockstep run reproducible: episode ``k`` starts in lane ``k`` when
there is room, and an episode that starts later takes a lane freed by the turn that ended
its predecessor: the lowest one first (``lane_reuse="lowest"``), or the highest
(``"highest"``, the order of the trainer's group rollouts); episodes that start together
take those lanes in episode order. A policy that draws random numbers therefore sees the
same batches in the same order on every run, whichever env thread happened to answer
first, and this is the order
in which :func:`agentgym.episodes.play` has always batched its episodes.

The env calls of a turn go out together too (:class:`TurnEnvCalls`): the resets and steps
the episodes ask for while the event loop handles one wave of wake-ups are handed to the
worker threads at once (threads of the engine's own, one per lane and a few spare), and
answered at once when the last one returns, under ONE timer of ``env_timeout_s`` for the
lot. A call that raised gets its own exception; when the timer fires first, only the calls
that had not returned yet time out (their attempts fail and are played again, the others go
on). This costs one hand-off and one event-loop wake-up per turn instead of one per episode,
as the synchronous loops this mode replaced did. The steps of a turn go out from the
answer itself: when the policy's batch comes back, each episode whose task still waits
has its env step queued at once (``step_when_answered``, set by the episode driver); where
the step lands, the driver records it and asks for the next action, and the episode's task
wakes only when there is something for it to do (the episode ended, the step failed, the
call stops, a branch point is to be taken). The policy is
called on a thread of its own (the event loop stays free for the turn's timers and stops)
unless it declares ``acts_inline = True``: a policy whose ``act`` is quick and never waits
for anything (:class:`~agentgym.agents.RandomPolicy`) is called on the event loop itself,
saving two thread hand-offs per turn. Calls that keep the
CPU busy (an in-process grid or household step: tens of microseconds of Python) run one
after another on ONE thread, where a thread each would only add wake-ups and contention
for the GIL; helpers join when no call of the turn returned for ``recruit_after_s`` (a
slow or hung call never holds back the rest), and calls that mostly wait (a browser, a sandbox, a
pool's worker process) get a thread each from the next turn on. An episode's env call
lasts until its batch is answered: a hard cancel meanwhile interrupts every episode of the
batch (see :mod:`agentgym.rollout.driver`), a soft stop waits for the batch
(``env_timeout_s`` at most).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from agentgym.agents.base import Generation, Policy, PolicyInput
from agentgym.error import InvalidConfigError
from agentgym.rollout.records import Episode

SPARE_THREADS = 8
"""Env threads beyond one per lane: an env call that timed out may still hold one."""

RECRUIT_AFTER_S = 0.002
"""A turn whose calls run on one thread gets helper threads when it is not done by then."""

_Job = Callable[[], Callable[[], None] | None]
"""Work for an env thread: it may return what to call once the thread is free again."""

WAITING_CALL_S = 50e-6
"""A turn whose calls spent more than this per call waiting (wall time minus the thread's
CPU time: I/O, a worker process, a lock) fans its next turn out, a thread per call."""


class Outcome(Protocol):
    """Where an env call's outcome goes: an asyncio future, or anything that takes an
    outcome the same way (the episode driver's step landing)."""

    def done(self) -> bool: ...

    def set_result(self, result: Any) -> None: ...

    def set_exception(self, exc: BaseException) -> None: ...


class LockstepBatches:
    """Collects the running episodes' requests and sends them as one batch per turn.

    The engine calls :meth:`flush_if_all_asked` whenever something changed (it knows which
    episodes run, and it has started any replacement before it looks); :meth:`act` is an
    episode's request, and wakes the engine through ``wake``.
    """

    def __init__(self, policy: Policy, lane_reuse: str = "lowest"):
        if asyncio.iscoroutinefunction(getattr(policy, "act", None)):
            raise InvalidConfigError(
                "lockstep needs a batched synchronous policy (act(list) -> list); "
                f"{type(policy).__name__}.act is a coroutine. Use lockstep=False for it."
            )
        if lane_reuse not in ("lowest", "highest"):
            raise InvalidConfigError(
                f"lane_reuse must be 'lowest' or 'highest', got {lane_reuse!r}."
            )
        self.policy = policy
        self.lane_reuse = lane_reuse
        self._top = 0
        """Lanes ever used; a newcomer beyond them takes a new lane."""
        self._running = 0
        """Episodes running at the engine's last look: until as many have asked, an
        answer cannot complete a turn, and a request does not wake the engine."""
        self.wake: Callable[[], None] = lambda: None
        self._asked: dict[Episode, tuple[PolicyInput, asyncio.Future[Generation]]] = {}
        self._waiters: dict[asyncio.Future[Generation], asyncio.Future[Generation]] = {}
        """Request -> what its episode's task awaits (:meth:`waiter`)."""
        self._lanes: dict[Episode, int] = {}
        self._turn: asyncio.Task[None] | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lockstep-policy")
        self.batch_sizes: list[int] = []
        """Size of every batch sent to the policy, in order."""
        self.env_calls: TurnEnvCalls | None = None
        """The turns' env calls (:meth:`env_call`), once there was one."""
        self.step_when_answered: (
            Callable[[Episode, Generation, asyncio.Future[Any]], None] | None
        ) = None
        """Set by the episode driver: called with an episode whose task still waits for
        its answer, the answer and that waiter; it starts the episode's env step, whose
        outcome settles the waiter (one wake-up per step instead of two)."""

    def act(self, ep: Episode, item: PolicyInput) -> asyncio.Future[Generation]:
        """``ep``'s request for this turn: a future answered when the whole turn's batch
        is back (a plain future, no task: cancelling it withdraws the request)."""
        future: asyncio.Future[Generation] = asyncio.get_running_loop().create_future()
        self._asked[ep] = (item, future)
        if len(self._asked) >= self._running:
            self.wake()
        return future

    def waiter(self, request: asyncio.Future[Generation]) -> asyncio.Future[Generation]:
        """What an episode's task awaits for its ``request`` (its own or one kept from an earlier
        call): a future answered along with it, so that cancelling the task leaves the
        request in flight (what ``asyncio.shield`` does, without its two extra callbacks
        per step). A request already answered is its own waiter."""
        if request.done():
            return request
        waiter: asyncio.Future[Generation] = request.get_loop().create_future()
        self._waiters[request] = waiter
        return waiter

    def wait_with(self, request: asyncio.Future[Generation], waiter: asyncio.Future[Any]) -> None:
        """Answer ``request`` into ``waiter``, which a task already awaits (the episode
        driver asks an episode's next action without waking its task)."""
        self._waiters[request] = waiter

    def env_call(
        self,
        timeout_s: float,
        lanes: int,
        fn: Callable[..., Any],
        *args: Any,
        into: Outcome | None = None,
    ) -> Any:
        """An episode's env call (reset, step), sent with the others of its turn on at
        most ``lanes`` + :data:`SPARE_THREADS` threads; see :class:`TurnEnvCalls`. Its
        outcome settles ``into`` when given (an episode's step landing), else a new future."""
        calls = self.env_calls
        if calls is None or calls.timeout_s != timeout_s:
            if calls is not None:
                calls.close()
            calls = self.env_calls = TurnEnvCalls(timeout_s, lanes + SPARE_THREADS)
        return calls.call(fn, *args, into=into)

    def _forget_withdrawn(self) -> None:
        """Drop the requests cancelled before their turn was sent (their episodes stopped)."""
        for ep, (_, future) in list(self._asked.items()):
            if future.done():
                del self._asked[ep]
                self._waiters.pop(future, None)

    def flush_if_all_asked(self, running: Collection[Episode]) -> None:
        """Send the turn's batch when every episode in ``running`` waits for its action.

        The engine calls it after every change and before it sleeps: ``running`` is then
        complete until it wakes again (only it starts episodes; one that ends wakes it)."""
        self._running = len(running)
        if not running or len(self._asked) < len(running):  # some have not asked yet
            return
        loop = asyncio.get_running_loop()  # while a turn is out, nobody waits to be sent
        asked = self._asked
        for ep in running:  # each has a request of this loop still waiting (once a turn)
            entry = asked.get(ep)
            if entry is None or entry[1].done() or entry[1].get_loop() is not loop:
                return
        order = self._assign_lanes(running)
        batch = [(ep, *self._asked.pop(ep)) for ep in order]
        if self._asked:
            self._forget_withdrawn()
        self._turn = loop.create_task(self._send(batch))

    def _assign_lanes(self, running: Collection[Episode]) -> list[Episode]:
        """Keep the lanes of episodes that still run; give the newcomers, in episode
        order, the free lanes (lowest or highest first, ``lane_reuse``) and then new
        ones; return ``running`` in lane order."""
        self._lanes = {ep: lane for ep, lane in self._lanes.items() if ep in running}
        taken = set(self._lanes.values())
        free = [lane for lane in range(self._top) if lane not in taken]
        if self.lane_reuse == "highest":
            free.reverse()
        for ep in sorted((ep for ep in running if ep not in self._lanes), key=_episode_order):
            if free:
                self._lanes[ep] = free.pop(0)
            else:
                self._lanes[ep] = self._top
                self._top += 1
        return sorted(running, key=self._lanes.__getitem__)

    async def _send(
        self, batch: list[tuple[Episode, PolicyInput, asyncio.Future[Generation]]]
    ) -> None:
        items = [item for _, item, _ in batch]
        self.batch_sizes.append(len(items))
        try:
            if getattr(self.policy, "acts_inline", False):  # see the module docstring
                gens = self.policy.act(items)
            else:
                loop = asyncio.get_running_loop()
                gens = await loop.run_in_executor(self._thread, self.policy.act, items)
            if len(gens) != len(items):
                raise InvalidConfigError(
                    f"{type(self.policy).__name__}.act returned {len(gens)} generations "
                    f"for {len(items)} inputs; it must return one per input."
                )
        except Exception as exc:  # every episode of the turn gets the cause
            for _, _, future in batch:
                for answered in (future, self._waiters.pop(future, None)):
                    if answered is not None and not answered.done():
                        answered.set_exception(exc)
            return
        step = self.step_when_answered
        for (ep, _, future), gen in zip(batch, gens):
            waiter = self._waiters.pop(future, None)
            if not future.done():
                future.set_result(gen)
            if waiter is None or waiter.done():  # its task stopped waiting: kept for later
                continue
            if step is None:
                waiter.set_result(gen)
            else:  # the env step goes out now, and its outcome wakes the task once
                step(ep, gen, waiter)

    def close(self) -> None:
        self._thread.shutdown(wait=False)
        if self.env_calls is not None:
            self.env_calls.close()


class TurnEnvCalls:
    """Hands the env calls of a lockstep turn to worker threads together; see the module
    docstring.

    :meth:`call` queues one call and returns the future of its outcome; the queue goes
    out at the end of the event loop's current wave of callbacks (``call_soon``), which
    is when every episode woken by the turn's answer has asked for its env call. The
    calls run on threads of this object's own (:class:`_Workers`, at most ``threads``):
    on one thread, helped by more when no call returned for ``recruit_after_s``, or on a
    thread each when the previous turn's calls waited more than ``waiting_call_s`` each on
    average.
    """

    def __init__(
        self,
        timeout_s: float,
        threads: int,
        recruit_after_s: float = RECRUIT_AFTER_S,
        waiting_call_s: float = WAITING_CALL_S,
    ):
        self.timeout_s = timeout_s
        self.recruit_after_s = recruit_after_s
        self.waiting_call_s = waiting_call_s
        self.workers = _Workers(threads)
        self._queued: _Batch | None = None
        self.sizes: list[int] = []
        """Calls in every batch sent, in order."""
        self.fan_out = False
        """Whether the next batch starts a thread per call (its predecessor's calls waited)."""

    def call(self, fn: Callable[..., Any], *args: Any, into: Outcome | None = None) -> Outcome:
        """``fn(*args)`` in a worker thread, with the calls queued alongside it; its
        future (``into``, or a new one) holds the result, the exception it raised, or a
        ``TimeoutError`` when it had not returned ``timeout_s`` after its batch went out.
        A future done before its batch goes out (cancelled) skips the call."""
        loop = asyncio.get_running_loop()
        batch = self._queued
        if batch is None or batch.loop is not loop:
            batch = self._queued = _Batch(loop, self.timeout_s, self._learn)
            loop.call_soon(self._send, batch)
        return batch.add(fn, args, into)

    def _send(self, batch: _Batch) -> None:
        if self._queued is batch:
            self._queued = None
        self.sizes.append(len(batch.calls))
        batch.send(self.workers, self.fan_out, self.recruit_after_s)

    def _learn(self, waited_s: float, calls: int) -> None:
        """A batch's calls returned, having waited ``waited_s`` in all: choose how the
        next batch goes out."""
        self.fan_out = calls > 0 and waited_s / calls > self.waiting_call_s

    def close(self) -> None:
        """Let the worker threads end once idle (one stuck in an env call stays there)."""
        self.workers.close()


class _Workers:
    """Daemon threads running queued jobs: one more starts whenever every thread is busy
    (an env call that hangs keeps its thread), up to ``limit``; jobs beyond that wait in
    the queue. Lighter than a ThreadPoolExecutor: no future and no condition per job."""

    def __init__(self, limit: int):
        self.limit = max(1, limit)
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self.threads = 0
        """Threads started so far (none ends before :meth:`close`)."""
        self._busy = 0
        self._closed = False

    def put(self, jobs: Sequence[_Job]) -> None:
        """Queue ``jobs`` (each must not raise, and may return what to call once its thread
        is free again); RuntimeError once closed."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the lockstep env threads were closed")
            self._busy += len(jobs)
            start = max(0, min(self._busy, self.limit) - self.threads)
            self.threads += start
        for _ in range(start):
            threading.Thread(target=self._work, name="lockstep-env", daemon=True).start()
        for job in jobs:
            self._jobs.put(job)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            then = job()
            job = None  # an idle thread holds no batch (nor the episodes of its calls)
            with self._lock:
                self._busy -= 1
            if then is not None:  # after the thread counts as free: the next turn's
                then()  # hand-off finds it idle and starts no thread for nothing
                then = None

    def close(self) -> None:
        with self._lock:
            self._closed, threads = True, self.threads
        for _ in range(threads):
            self._jobs.put(None)


class _Batch:
    """Env calls sent together and answered together (at the last return or the timer).

    The calls not yet started wait in ``_todo``; every job handed to the workers takes
    calls from it until it is empty (:meth:`_drain`), so one job runs them all in turn
    and each helper recruited later takes over the rest."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        timeout_s: float,
        learn: Callable[[float, int], None],
    ):
        self.loop = loop
        self.timeout_s = timeout_s
        self.calls: list[tuple[Callable[..., Any], tuple[Any, ...], Outcome]] = []
        self._learn = learn
        self._outcomes: list[tuple[bool, Any] | None] = []
        self._left = 0
        self._todo: deque[int] = deque()
        self._waited_s = 0.0
        self._ran = 0
        self._lock = threading.Lock()
        self._workers: _Workers | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._recruiter: asyncio.TimerHandle | None = None
        self._returned_at_look = 0
        """Calls that had returned when the recruiter last looked."""

    def add(self, fn: Callable[..., Any], args: tuple[Any, ...], future: Outcome | None) -> Outcome:
        if future is None:
            future = self.loop.create_future()
        self.calls.append((fn, args, future))
        return future

    def send(self, workers: _Workers, fan_out: bool, recruit_after_s: float) -> None:
        """Start every call whose episode still waits for it, and the batch's timer: on
        a thread each (``fan_out``), else on one thread with helpers recruited when no
        call returned for ``recruit_after_s`` (:meth:`_recruit`)."""
        self._workers = workers
        self._outcomes = [None] * len(self.calls)
        self._left = len(self.calls)
        self._timer = self.loop.call_later(self.timeout_s, self._answer)
        for k, (_, _, future) in enumerate(self.calls):
            if future.done() and self._done(k, (False, None)):  # cancelled before it went
                self._signal()  # out, and so was every other call of the batch
            else:
                self._todo.append(k)
        if not self._todo:
            return
        self._hand_out(len(self._todo) if fan_out else 1)
        if not fan_out and len(self._todo) > 1:
            self._recruiter = self.loop.call_later(recruit_after_s, self._recruit, recruit_after_s)

    def _recruit(self, after_s: float) -> None:
        """The batch is not done. When no call returned since the last look (one is slow or
        hung), a helper for every call not started yet; else look again later: quick calls
        keep the GIL busy, and helpers would only contend for it."""
        with self._lock:
            waiting, returned = len(self._todo), len(self.calls) - self._left
        if not waiting:
            return
        if returned > self._returned_at_look:
            self._returned_at_look = returned
            self._recruiter = self.loop.call_later(after_s, self._recruit, after_s)
            return
        self._hand_out(waiting)

    def _hand_out(self, jobs: int) -> None:
        assert self._workers is not None
        try:
            self._workers.put([self._drain] * jobs)
        except RuntimeError as exc:  # closed: the engine is closing
            with self._lock:
                unstarted, self._todo = list(self._todo), deque()
            last = False
            for k in unstarted:
                last = self._done(k, (False, exc)) or last
            if last:
                self._signal()

    def _drain(self) -> Callable[[], None] | None:
        """Run calls not started yet until none is left (in a worker thread); after the
        batch's last call, what answers the batch. The time the job spent not on the CPU
        (its wall time minus its thread's CPU time) counts as its calls' waiting."""
        wall, cpu = time.perf_counter(), time.thread_time()
        ran, last = 0, False
        while not last:
            with self._lock:
                if not self._todo:
                    break
                k = self._todo.popleft()
            fn, args, _ = self.calls[k]
            last = self._done(k, _outcome(fn, args))
            ran += 1
        if ran:
            waited = (time.perf_counter() - wall) - (time.thread_time() - cpu)
            with self._lock:  # before the batch is answered, when this job ran its last call
                self._waited_s += waited
                self._ran += ran
        return self._signal if last else None

    def _done(self, k: int, outcome: tuple[bool, Any]) -> bool:
        """Record call ``k``'s outcome (from any thread); True for the batch's last one,
        whose caller then answers the batch (:meth:`_signal`)."""
        with self._lock:
            self._outcomes[k] = outcome
            self._left -= 1
            return self._left == 0

    def _signal(self) -> None:
        """Have the event loop answer the batch (from any thread)."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            self.loop.call_soon_threadsafe(self._answer)

    def _answer(self) -> None:
        """Settle every future still waiting: with its outcome, or a timeout when its
        call has not returned (the timer fired first). A second answer (the last call
        returned after the timer) finds every future done, as does an episode that was
        cancelled meanwhile."""
        for timer in (self._timer, self._recruiter):
            if timer is not None:
                timer.cancel()
        with self._lock:
            outcomes = list(self._outcomes)
            if self._left == 0:
                self._learn(self._waited_s, self._ran)
        for (_, _, future), outcome in zip(self.calls, outcomes):
            if future.done():
                continue
            if outcome is None:
                future.set_exception(TimeoutError(f"no answer within {self.timeout_s} s"))
            elif outcome[0]:
                future.set_result(outcome[1])
            else:
                future.set_exception(outcome[1])


def _outcome(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[bool, Any]:
    """``(True, fn(*args))``, or ``(False, the exception it raised)``."""
    try:
        return True, fn(*args)
    except StopIteration as exc:  # an asyncio future cannot hold one
        return False, RuntimeError(f"StopIteration: {exc}")
    except BaseException as exc:  # handed to the episode, as a future would
        return False, exc


def _episode_order(ep: Episode) -> tuple[int, int]:
    return ep.index, ep.attempt
