"""One episode of the rollout engine: slot, reset, then policy request and env step in turn.

:meth:`EpisodeDriver.drive` runs as the episode's asyncio task. Whatever stops it, it
leaves the episode in one of two states the engine can trust:

* **ended** - ``done`` (the env ended it), ``infra_failure`` (with its cause; the engine
  retries it from reset) or ``failed`` (an error retrying cannot cure; the call stops);
  the env slot is given back, healthy or not;
* **paused** - consistent for the next call: it holds no slot and no chat (it starts from
  reset), or its env and chat agree, with at most a policy request in flight.

The call stops an episode softly (``CallState.stopping``: an episode waiting for a slot or
for its policy is cancelled and pauses; one inside an env call finishes that call first,
bounded by ``env_timeout_s``, then pauses). A hard cancel (the call's stop was itself
cancelled) can land inside an env reset or step, whose outcome is then unknown: that
attempt ends as ``infra_failure`` with cause ``interrupted`` and its env is retired.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agentgym.agents.base import Generation, PolicyInput
from agentgym.pools import StepResult
from agentgym.rollout.events import EpisodeSummary, StepEvent
from agentgym.rollout.faults import (
    INTERRUPTED,
    InfraFailure,
    RunOfFailures,
    caller_mistake,
    no_live_envs_message,
)
from agentgym.rollout.lockstep import LockstepBatches
from agentgym.rollout.policy import AsyncPolicy
from agentgym.rollout.records import CollectionSummary, Episode, Group
from agentgym.rollout.slots import SlotLedger
from agentgym.rollout.starts import BranchPoint
from agentgym.rollout.steps import Chat, StepRecord, merge_step_info
from agentgym.wrappers.chat import observation_message

T = TypeVar("T")

SLOT_POLL_S = 0.05
"""How often an episode waiting for an env slot looks again at the latest, when no slot
came back meanwhile (one coming back wakes it at once)."""

#: Phases in which a hard cancel leaves the env in an unknown state.
ENV_PHASES = ("reset", "step", "snapshot")


@dataclass
class CallState:
    """State of one collect call, shared by its episode tasks."""

    index: int
    summary: CollectionSummary
    changed: asyncio.Event
    policy_version: int
    on_group: Callable[[Group], None] | None = None
    stopping: bool = False
    error: BaseException | None = None
    """The first error that stops the call (raised as a CollectionError)."""
    keep: bool = True
    """Whether released groups are kept for the collection (else only counted)."""
    released: list[Group] = field(default_factory=list)
    """Groups this call finished (or took over from a cancelled call), in order."""
    usable_released: int = 0
    """How many of the groups released to this call (kept or not) are usable."""
    launched: int = 0
    """Groups this call started."""
    failure_run: int = 0
    """Infrastructure failures since the last episode that finished."""
    run_causes: dict[str, int] = field(default_factory=dict)
    run_attempts: list[Episode] = field(default_factory=list)
    """The attempts that failed in the current run (played again if it stops the call)."""

    def fail(self, error: BaseException) -> None:
        """Stop the call with ``error`` (the first one wins)."""
        if self.error is None:
            self.error = error
        self.changed.set()


class EpisodeDriver:
    """Drives episodes for the engine; see the module docstring."""

    def __init__(
        self,
        slots: SlotLedger,
        policy: AsyncPolicy,
        config: Any,
        callbacks: Any,
        executor: ThreadPoolExecutor,
        lockstep: LockstepBatches | None = None,
    ):
        self.slots = slots
        self.source = slots.source
        self.policy = policy
        self.config = config
        self.callbacks = callbacks
        self.executor = executor
        self.lockstep = lockstep
        if lockstep is not None:
            lockstep.step_when_answered = self._step_answered
        self._calls: dict[Episode, CallState] = {}
        """The call each running episode's task belongs to (what :meth:`_landed` counts in)."""

    async def drive(self, call: CallState, ep: Episode) -> None:
        """Run ``ep`` until it ends or the call stops it (see the module docstring)."""
        self._calls[ep] = call
        try:
            if not await self._begin(call, ep):
                self._pause(call, ep)
                return
            while not call.stopping:
                if await self._turn(call, ep):
                    return
            self._pause(call, ep)
        except InfraFailure as failure:
            self._end(call, ep, "infra_failure", str(failure), failure.__cause__)
        except asyncio.CancelledError:
            if ep.driver is asyncio.current_task():  # not taken over by the engine
                self.stop_where_it_is(call, ep)
            raise
        except Exception as exc:  # a refused request, or a bug: retrying will not cure it
            call.fail(exc)
            kind = "policy_refused" if ep.phase == "policy" else "error"
            self._end(call, ep, "failed", f"{kind}: {type(exc).__name__}: {exc}", exc)
        finally:
            ep.phase = None
            self._calls.pop(ep, None)

    def stop_where_it_is(self, call: CallState, ep: Episode) -> None:
        """Leave an episode whose task was cancelled (or lost with its event loop) in a
        state the engine can trust: inside an env call, the attempt is ``interrupted``;
        anywhere else it pauses."""
        if ep.ended:
            return
        if ep.phase in ENV_PHASES:
            where = f"the collect call was cancelled during an env {ep.phase}"
            self._end(call, ep, "infra_failure", f"{INTERRUPTED}: {where}", None)
        else:
            self._pause(call, ep)

    # ------------------------------------------------------------------ phases

    async def _begin(self, call: CallState, ep: Episode) -> bool:
        """An env slot and a reset, unless the episode has them; False: the call stopped
        (or the source has no env left) before it got a slot."""
        if call.stopping:
            return False
        if ep.slot is None:
            ep.phase = "slot"
            if not await self._take_slot(call):
                return False
            ep.phase = "acquire"
            ep.slot = await self._acquire()
        if ep.chat is None:
            ep.phase = "reset"
            t0 = time.perf_counter()
            start = ep.start
            if start is not None and start.restores:
                await self._env_call(ep.slot.restore, start.snapshot)
                assert start.chat is not None and start.info is not None
                chat, info = start.chat.branch(), dict(start.info)
            else:
                options = () if start is None or start.options is None else (start.options,)
                obs, info = await self._env_call(ep.slot.reset, ep.seed, *options)
                chat = Chat.after_reset(obs, info)
            call.summary.env_seconds += time.perf_counter() - t0
            ep.task_id, ep.info, ep.chat = str(info.get("task_id", "")), info, chat
            ep.phase = None
            if self.config.keep_branch_points:
                await self._keep_branch_point(ep)
            if not ep.restored:
                notify(call, self.callbacks.on_reset, ep.traj_id, ep.index, obs, info)
        return True

    async def _keep_branch_point(self, ep: Episode) -> None:
        """Remember where ``ep`` stands now (env snapshot, chat, info) for a later branch."""
        ep.phase = "snapshot"
        snapshot = await self._env_call(ep.slot.snapshot)
        ep.phase = None
        assert ep.chat is not None
        ep.branch_points.append(BranchPoint(snapshot, ep.chat.branch(), dict(ep.info)))

    async def _take_slot(self, call: CallState) -> bool:
        """Count a slot out once the source has one to lend (it may be replacing a failed
        env); False when the call stops first, or the source has no live env left."""
        while not self.slots.try_take():
            if self.slots.live_capacity() == 0:
                call.fail(RunOfFailures(no_live_envs_message(self.source)))
                return False
            if call.stopping or call.error is not None:
                return False
            await self.slots.returned(SLOT_POLL_S)
        return True

    async def _acquire(self) -> Any:
        if self.slots.inline:  # a lock and a pop: no thread hop
            try:
                return self.source.acquire()
            except Exception as exc:
                self.slots.untake()
                raise InfraFailure.env_error(exc) from exc
        acquiring = self.executor.submit(self.source.acquire)
        try:
            return await self._bounded(acquiring)
        except BaseException:
            acquiring.add_done_callback(self.slots.give_back_unclaimed)
            raise

    async def _turn(self, call: CallState, ep: Episode) -> bool:
        """One policy request and one env step; True when the episode ended.

        In lockstep mode the answer usually comes with the env step already taken: the
        turn's sender starts it the moment the policy answers (:meth:`_step_answered`),
        and a step that leaves nothing for the task to do is recorded without waking it
        (:meth:`_landed`), so the task wakes when its episode ends, fails or stops. Its
        phase is then ``step`` and a failure is the env's."""
        ep.phase = "policy"
        request, version, asked_in = self._request(call, ep)
        ep.asked_at = time.perf_counter()
        try:  # a cancelled task leaves its request in flight (kept for the next call)
            if self.lockstep is None:
                answer = await asyncio.shield(request)
            else:
                answer = await self.lockstep.waiter(request)
        except BaseException as exc:
            call.summary.policy_seconds += time.perf_counter() - ep.asked_at
            if not isinstance(exc, Exception):
                raise  # cancelled: the driver decides from the phase
            if ep.phase == "step":  # the env step sent along with the answer failed
                raise self._failure(exc) from exc
            ep.pending = None
            if caller_mistake(exc) or self.lockstep is not None:
                raise  # not infrastructure: a refused request, or a local policy's error
            raise InfraFailure("policy_error", f"{type(exc).__name__}: {exc}") from exc
        step: Stepped
        if isinstance(answer, _Landing):  # a lockstep answer whose env step has landed
            step = answer.delivered()
        else:
            answered_at = time.perf_counter()
            ep.pending = None
            ep.phase = "step"
            res = await self._env_call(ep.slot.step, answer.text)
            step = Stepped(answer, res, version, asked_in, ep.asked_at, answered_at)
        policy_s, env_s = self._account(call, ep, step)
        done = self._record(ep, step)
        if self.config.keep_branch_points and not done:
            await self._keep_branch_point(ep)
        self._tell(call, ep, step, policy_s, env_s)
        if done:
            self._end(call, ep, "done", None, None, last=step.result)
        return done

    @staticmethod
    def _account(call: CallState, ep: Episode, step: Stepped) -> tuple[float, float]:
        """Count a step that returned in the call's summary: its policy and env seconds
        (returned), and an ``env_error`` the env reported as an infrastructure failure."""
        env_s = time.perf_counter() - step.answered_at
        policy_s = step.answered_at - step.asked_at
        ep.phase = None
        summary = call.summary
        summary.policy_seconds += policy_s
        summary.env_seconds += env_s
        summary.env_steps += 1
        if step.result.info.get("env_error"):
            raise InfraFailure("env_error", str(step.result.info["env_error"]))
        return policy_s, env_s

    @staticmethod
    def _record(ep: Episode, step: Stepped) -> bool:
        """Append the step to the episode (steps, tokens, reward components, chat, info);
        True when it ended. Runs once per step: positional arguments (a dataclass takes
        keywords at twice the cost)."""
        gen, res = step.generation, step.result
        info = res.info
        done = bool(res.terminated or res.truncated)
        ep.steps.append(
            StepRecord(  # group_id, traj_id, step, state_key, generation, reward, valid, done,
                ep.group_id,  # success, node, policy_version
                ep.traj_id,
                len(ep.steps),
                str(ep.info.get("state_key", "")),
                gen,
                float(res.reward),
                bool(info.get("action_valid", True)),
                done,
                bool(info.get("success", False)) if done else False,
                -1,
                step.version,
            )
        )
        ep.step_collects.append(step.asked_in)
        ep.step_tokens.append(generation_tokens(gen))
        components = info.get("reward_components")
        if components:
            summed = ep.components
            for name, value in components.items():
                summed[name] = summed.get(name, 0.0) + float(value)
        assert ep.chat is not None
        ep.chat.turns.append(
            ({"role": "assistant", "content": gen.text}, observation_message(res.obs))
        )
        ep.info = merge_step_info(ep.info, info)
        return done

    def _tell(
        self, call: CallState, ep: Episode, step: Stepped, policy_s: float, env_s: float
    ) -> None:
        """``on_step`` with the step's event (not for a branch: it is no whole episode)."""
        if self.callbacks.on_step is not None and not ep.restored:
            event = StepEvent.of(
                ep.traj_id, ep.index, step.generation, step.result, policy_s * 1e3, env_s * 1e3
            )
            notify(call, self.callbacks.on_step, event)

    def _step_answered(self, ep: Episode, gen: Generation, waiter: asyncio.Future[Any]) -> None:
        """Lockstep: the policy answered ``ep``, whose task still waits on ``waiter``. Send
        its env step now, with the rest of the turn's; its outcome lands in
        :meth:`_landed`. From here the episode is inside its env step, as if its task had
        sent it (a stop waits for it)."""
        assert self.lockstep is not None and ep.slot is not None and ep.pending is not None
        _, version, asked_in = ep.pending
        ep.pending = None
        ep.phase = "step"
        landing = _Landing(self, ep, waiter, gen, version, asked_in, time.perf_counter())
        config = self.config
        self.lockstep.env_call(
            config.env_timeout_s, config.max_in_flight, ep.slot.step, gen.text, into=landing
        )

    def _landed(self, landing: _Landing, result: StepResult) -> None:
        """A lockstep step returned (on the event loop). A step that leaves nothing for the
        task to do - the episode goes on, the call does not stop, no branch point to take -
        is recorded here and the next action asked for, the task still asleep on the same
        waiter; any other wakes the task with the :class:`Stepped`, which it handles
        as its own (:meth:`_turn`)."""
        ep, waiter = landing.ep, landing.waiter
        if waiter.done():  # its task was cancelled meanwhile: the attempt was interrupted
            return
        landing.result, landing.asked_at = result, ep.asked_at
        call = self._calls.get(ep)
        if (
            call is None
            or call.stopping
            or call.error is not None
            or result.terminated
            or result.truncated
            or result.info.get("env_error")
            or self.config.keep_branch_points
        ):
            waiter.set_result(landing)
            return
        assert self.lockstep is not None
        try:
            policy_s, env_s = self._account(call, ep, landing)
            self._record(ep, landing)
            self._tell(call, ep, landing, policy_s, env_s)
            ep.phase = "policy"
            request, _, _ = self._request(call, ep)
            ep.asked_at = time.perf_counter()
            self.lockstep.wait_with(request, waiter)
        except Exception as exc:  # a bug: the task raises it, as if it had run this itself
            waiter.set_exception(exc)

    # ------------------------------------------------------------------ requests, env calls

    def _request(self, call: CallState, ep: Episode) -> tuple[asyncio.Future[Generation], int, int]:
        """The episode's policy request: the one still in flight from the previous call
        (when this is the same event loop), else a new one tagged with the call's version."""
        if ep.pending is not None:
            request = ep.pending[0]
            if request.get_loop() is asyncio.get_running_loop() and not request.cancelled():
                call.summary.resumed_requests += 1
                return ep.pending  # type: ignore[no-any-return]
            drop_request(ep, call.summary)
        assert ep.chat is not None
        item = PolicyInput(
            messages=ep.chat.messages(self.config.history_turns), info=ep.info, env=ep.slot.env
        )
        if self.lockstep is None:
            request = asyncio.ensure_future(self.policy.act(item))
        else:
            request = self.lockstep.act(ep, item)
        call.summary.policy_requests += 1
        ep.pending = (request, call.policy_version, call.index)
        return ep.pending  # type: ignore[no-any-return]

    async def _env_call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in a worker thread; in lockstep mode sent with the other env
        calls of the turn (:class:`~agentgym.rollout.lockstep.TurnEnvCalls`)."""
        config = self.config
        if self.lockstep is None:
            return await self._bounded(self.executor.submit(fn, *args))
        try:  # bounded by its batch's timer
            return await self.lockstep.env_call(  # type: ignore[no-any-return]
                config.env_timeout_s, config.max_in_flight, fn, *args
            )
        except Exception as exc:
            raise self._failure(exc) from exc

    async def _bounded(self, future: Future[T]) -> T:
        """Await a worker-thread call for at most ``env_timeout_s``; a timeout or an
        exception is an infrastructure failure (the thread may still be running)."""
        try:
            async with asyncio.timeout(self.config.env_timeout_s):  # cheaper than wait_for
                return await asyncio.wrap_future(future)
        except Exception as exc:
            raise self._failure(exc) from exc

    def _failure(self, exc: Exception) -> InfraFailure:
        """What an env call's exception means: a timeout or the env's own error (env
        calls never raise an InfraFailure themselves: only this driver makes one)."""
        if isinstance(exc, TimeoutError):
            return InfraFailure("env_timeout", f"no answer within {self.config.env_timeout_s} s")
        return InfraFailure.env_error(exc)

    # ------------------------------------------------------------------ endings

    def _pause(self, call: CallState, ep: Episode) -> None:
        if ep.phase == "policy" and self.config.abort_requests:
            drop_request(ep, call.summary)
        ep.status = "paused"

    def _end(
        self,
        call: CallState,
        ep: Episode,
        status: Any,
        cause: str | None,
        error: BaseException | None,
        last: StepResult | None = None,
    ) -> None:
        """End the attempt: status and cause, its slot back to the source, callbacks."""
        keep_env = status == "done" or ep.phase == "policy"  # a policy error: env untouched
        ep.status, ep.cause, ep.error = status, cause, error
        if ep.pending is not None:
            drop_request(ep, call.summary)
        if ep.slot is not None:
            slot, ep.slot = ep.slot, None
            self.slots.give_back(slot, healthy=keep_env)
        self._report_end(call, ep, last)

    def _report_end(self, call: CallState, ep: Episode, last: StepResult | None) -> None:
        """``on_end`` (for an attempt whose reset was reported) and ``on_episode``."""
        callbacks = self.callbacks
        if callbacks.on_end is not None and ep.chat is not None and not ep.restored:
            summary = EpisodeSummary(
                env_id="",
                episode=ep.index,
                seed=ep.seed,
                task_id=ep.task_id,
                turns=len(ep.steps),
                total_reward=ep.total_reward,
                success=ep.success,
                invalid_actions=sum(not s.valid for s in ep.steps),
                terminated=bool(last is not None and last.terminated),
                truncated=bool(last is not None and last.truncated),
                error=ep.cause,
                components=dict(ep.components),
            )
            notify(call, callbacks.on_end, ep.traj_id, summary)
        notify(call, callbacks.on_episode, ep)


class Stepped:
    """A policy's answer and the env step it was sent to, with what its records need:
    the policy version of the request (``version``), the index of the collect call that
    asked for it (``asked_in``), and ``time.perf_counter()`` when the request was made or
    taken over by this call (``asked_at``) and when the answer came back
    (``answered_at``)."""

    __slots__ = ("answered_at", "asked_at", "asked_in", "generation", "result", "version")

    def __init__(
        self,
        generation: Generation,
        result: StepResult,
        version: int,
        asked_in: int,
        asked_at: float,
        answered_at: float,
    ):
        self.generation, self.result, self.version = generation, result, version
        self.asked_in, self.asked_at, self.answered_at = asked_in, asked_at, answered_at


class _Landing(Stepped):
    """A lockstep step on its way: where its env call's outcome goes
    (:meth:`EpisodeDriver._landed`, or the episode's waiter when the step failed; what a
    lockstep batch needs of a future). Once landed it is the :class:`Stepped` itself."""

    __slots__ = ("driver", "ep", "waiter")

    def __init__(
        self,
        driver: EpisodeDriver,
        ep: Episode,
        waiter: asyncio.Future[Any],
        generation: Generation,
        version: int,
        asked_in: int,
        answered_at: float,
    ):
        self.driver, self.ep, self.waiter = driver, ep, waiter
        self.generation, self.version, self.asked_in = generation, version, asked_in
        self.answered_at = answered_at
        self.result = None  # type: ignore[assignment]  # set where it lands
        self.asked_at = 0.0

    def done(self) -> bool:
        """Whether nothing more may land here: it landed already (its episode may have gone
        on, re-arming the waiter for a later step: a batch answered twice, at its timer
        and when its hung call returned, must not land it again), or its task stopped
        waiting. (Its waiter is dropped only once it has landed.)"""
        return self.result is not None or self.waiter.done()

    def set_result(self, result: StepResult) -> None:
        self.driver._landed(self, result)

    def set_exception(self, exc: BaseException) -> None:
        self.waiter.set_exception(exc)

    def delivered(self) -> _Landing:
        """Its task has it (it was its waiter's result): drop the waiter, which holds it,
        so that no reference cycle keeps the episode (its chat, steps and generations)
        alive until the garbage collector's next full pass; itself."""
        self.waiter = None  # type: ignore[assignment]
        return self


def notify(call: CallState, fn: Callable[..., Any] | None, *args: Any) -> None:
    """Call a user callback; an exception it raises stops the call (which raises it),
    never the episode: the episode is left as it was."""
    if fn is None:
        return
    try:
        fn(*args)
    except Exception as exc:
        call.fail(exc)


def drop_request(ep: Episode, summary: CollectionSummary) -> None:
    """Forget the episode's policy request in flight (cancelled when its loop still runs)."""
    if ep.pending is None:
        return
    request = ep.pending[0]
    if not request.done():
        if not request.get_loop().is_closed():  # a closed loop dropped it already
            request.cancel()
    elif not request.cancelled():
        request.exception()  # retrieved: no "never retrieved" warning
    summary.aborted_requests += 1
    ep.pending = None


def generation_tokens(gen: Generation) -> int:
    """Tokens of one generation: its token ids, else the server's ``usage``, else words."""
    if gen.token_ids is not None:
        return len(gen.token_ids)
    usage = gen.meta.get("usage") if gen.meta else None
    if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
        return int(usage["completion_tokens"])
    return len(gen.text.split())
