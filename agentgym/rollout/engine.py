"""The asynchronous rollout engine: many episodes in flight, no barrier across envs.

Each episode is an asyncio task (:mod:`agentgym.rollout.driver`): it asks the policy for its
next action (:class:`~agentgym.rollout.policy.AsyncPolicy`), steps its own env in a worker
thread as soon as the action arrives, and goes on; a slow reply stalls only its own
episode. Episodes come in GRPO groups (``group_size`` episodes of one task seed), and a
group is released only when all its members have ended.

Partial rollouts (APRIL): with ``partial=True`` the engine keeps ``max_in_flight`` episodes
running (more than the target needs), stops as soon as ``target_groups`` usable groups have
been released, and keeps every unfinished episode - its env, chat, steps and tokens - for
the next :meth:`RolloutEngine.collect` call. Every step records the policy version that
generated it, so a trainer can correct or drop stale tokens (``max_staleness`` restarts
episodes whose oldest step is too old).

Faults, each an invariant (``docs/rollout.md``):

* an episode is returned whole or reported as a failure with its cause: an env that
  raises, reports ``info["env_error"]`` or does not answer within ``env_timeout_s``, and a
  policy request that still fails after its retries, end the attempt as ``infra_failure``;
  its env is retired and a fresh attempt takes its place (up to ``episode_retries``); a
  group whose member still failed is released ``usable=False``;
* a call that is cancelled or fails stops every episode it started before it returns or
  raises, and no episode is ever driven by two tasks;
* every finished group is handed back exactly once: on the result, on the
  :class:`~agentgym.rollout.faults.CollectionError` a failed call raises, or (a cancelled
  call) on the next call's result;
* a run of infrastructure failures with no episode finishing stops the call
  (:class:`~agentgym.rollout.faults.FailureRunError`) before it uses up the task seeds;
* no more env slots are out than the source's live capacity.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from agentgym.agents.base import Policy
from agentgym.error import InvalidConfigError
from agentgym.rollout.driver import CallState, EpisodeDriver, drop_request, notify
from agentgym.rollout.events import EpisodeSummary, StepEvent
from agentgym.rollout.faults import (
    INTERRUPTED,
    CollectionError,
    FailureRunError,
    RunOfFailures,
    cause_kind,
    collection_error,
    failure_run_message,
    no_live_envs_message,
)
from agentgym.rollout.lockstep import LockstepBatches
from agentgym.rollout.loop import close_within, run_bounded
from agentgym.rollout.policy import AsyncPolicy, as_async
from agentgym.rollout.records import ENDED, Collection, CollectionSummary, Episode, Group
from agentgym.rollout.slots import SlotLedger
from agentgym.rollout.sources import EnvSource
from agentgym.rollout.starts import EpisodeStart


@dataclass(frozen=True)
class RolloutConfig:
    """How the engine collects; the APRIL-style settings are ``max_in_flight`` and
    ``partial``."""

    group_size: int = 4
    """Episodes per task (GRPO group); they share the task seed."""
    max_in_flight: int = 64
    """Episodes running at once. Over-provisioning: more than ``target_groups *
    group_size`` keeps the policy server busy while the slowest episodes finish."""
    partial: bool = True
    """Stop at the target and carry unfinished episodes over (APRIL). False: run every
    group started by this call to its end, and start exactly ``target_groups`` groups."""
    history_turns: int | None = 1
    """Past turn pairs the policy reads (None: all)."""
    env_timeout_s: float = 60.0
    """An env reset or step slower than this is an infrastructure failure."""
    episode_retries: int = 1
    """Fresh attempts at a task after an infrastructure failure, per group member."""
    abort_requests: bool = False
    """When a call stops, cancel the policy requests still in flight. False (default):
    they keep running, and the next call (on the same event loop) uses their replies,
    tagged with the version that asked; a new loop (``collect_sync``) asks again."""
    max_staleness: int | None = None
    """Carried episodes whose first step is more than this many policy versions old start
    over from reset (None: keep them all)."""
    group_prefix: str = ""
    """Prepended to the seed to make each group's id."""
    lockstep: bool = False
    """Every turn is ONE policy call with every running episode's request, in lane order
    (:mod:`~agentgym.rollout.lockstep`): reproducible batches for a batched synchronous
    policy that draws random numbers, as :func:`agentgym.episodes.play` and the trainer's
    group rollouts need. Episodes then start one by one as envs free up (a group may be
    bigger than ``max_in_flight``; its other members start as its first ones end), and a
    policy error stops the call (it is the policy's, not the infrastructure's)."""
    lane_reuse: Literal["lowest", "highest"] = "lowest"
    """Lockstep: which freed lane an episode that starts later takes first (``lowest``:
    what :func:`agentgym.episodes.play` did; ``highest``: what the trainer's group
    rollouts did)."""
    keep_branch_points: bool = False
    """Keep each episode's :class:`~agentgym.rollout.starts.BranchPoint` after its start and
    after every step that does not end it (an env snapshot, the chat and the info), so a
    search can continue from any of them (Tree-GRPO). Needs envs that snapshot."""
    failure_run_limit: int | None = None
    """Infrastructure failures in a row, with no episode finishing between them, that stop
    a call with :class:`~agentgym.rollout.faults.FailureRunError` (the env source or the
    policy server is down) instead of using up the task seeds. None: twice
    ``max_in_flight``, at least 16."""

    def __post_init__(self) -> None:
        if self.group_size < 1:
            raise InvalidConfigError(f"group_size must be at least 1, got {self.group_size}.")
        if self.max_in_flight < self.group_size and not self.lockstep:
            raise InvalidConfigError(
                f"max_in_flight ({self.max_in_flight}) must hold at least one group "
                f"(group_size {self.group_size})."
            )
        if self.failure_run_limit is not None and self.failure_run_limit < 1:
            raise InvalidConfigError(
                f"failure_run_limit must be at least 1 (or None), got {self.failure_run_limit}."
            )

    @classmethod
    def whole_run(
        cls,
        envs: int,
        *,
        lockstep: bool = True,
        lane_reuse: Literal["lowest", "highest"] = "highest",
        **fields: Any,
    ) -> RolloutConfig:
        """The config of a run that plays every group it starts to its end
        (``partial=False``) on ``envs`` envs at once: what the synchronous fronts ask for
        (group and tree rollouts, held-out evaluation, ``play``, ``evaluate``). Lockstep by
        default, a freed lane going to the next episode highest first (the trainer's
        order); ``fields`` are the other settings."""
        return cls(
            max_in_flight=envs, partial=False, lockstep=lockstep, lane_reuse=lane_reuse, **fields
        )

    @property
    def failure_limit(self) -> int:
        """The run of infrastructure failures that stops a call (see ``failure_run_limit``)."""
        if self.failure_run_limit is not None:
            return self.failure_run_limit
        return max(16, 2 * self.max_in_flight)


@dataclass
class EpisodeCallbacks:
    """What the engine tells its caller about each episode as it happens.

    ``on_reset(slot, k, obs, info)``, ``on_step(event)`` and ``on_end(slot, summary)`` have
    the signatures of :func:`agentgym.episodes.play`'s callbacks, so
    :meth:`agentgym.trajectory.Recorder.play_callbacks` records engine rollouts unchanged:
    ``slot`` is the attempt's trajectory id and ``k`` the episode's index (group order x
    ``group_size`` + member, as :func:`agentgym.rollout.groups.group_rollouts` numbers them).
    An attempt ended by a failure gets ``on_end`` with the cause as the summary's
    ``error``. ``on_episode(episode)`` sees every attempt as it ends (done or failed). An
    exception raised by a callback stops the collection, which raises it as a
    :class:`~agentgym.rollout.faults.CollectionError`.
    """

    on_reset: Callable[[int, int, dict, dict], None] | None = None
    on_step: Callable[[StepEvent], None] | None = None
    on_end: Callable[[int, EpisodeSummary], None] | None = None
    on_episode: Callable[[Episode], None] | None = None


class RolloutEngine:
    """Collects GRPO groups asynchronously; see the module docstring.

    Args:
        source: where envs come from (:class:`~agentgym.rollout.LocalEnvSource`,
            :class:`~agentgym.rollout.PoolEnvSource`, :class:`~agentgym.rollout.ServeEnvSource`).
        policy: an async policy, or a batched sync one (wrapped in a
            :class:`~agentgym.rollout.BatchingPolicy`).
        seeds: the task seeds, one group each, drawn in order across calls; a seed is
            drawn only to start its group, and its group is then handed back (finished or
            failed) or stays in the engine for the next call. An item may be an
            :class:`~agentgym.rollout.starts.EpisodeStart` instead: reset options, or a
            snapshot to continue from (a search's branch).
        config: :class:`RolloutConfig`.
        callbacks: :class:`EpisodeCallbacks`.
    """

    def __init__(
        self,
        source: EnvSource,
        policy: AsyncPolicy | Policy,
        seeds: Iterable[int | EpisodeStart],
        config: RolloutConfig | None = None,
        callbacks: EpisodeCallbacks | None = None,
    ):
        self.config = config or RolloutConfig()
        self.callbacks = callbacks or EpisodeCallbacks()
        if source.capacity is not None and source.capacity < self.config.max_in_flight:
            raise InvalidConfigError(
                f"max_in_flight is {self.config.max_in_flight} but the env source has only "
                f"{source.capacity} envs; lower max_in_flight or give it more envs."
            )
        self.source = source
        self._lockstep = (
            LockstepBatches(policy, self.config.lane_reuse)  # type: ignore[arg-type]
            if self.config.lockstep
            else None
        )
        self.policy = as_async(policy)
        self._seeds: Iterator[int | EpisodeStart] = iter(seeds)
        self._exhausted = False
        self._open: list[Group] = []
        """Groups started and not yet released."""
        self._undelivered: list[Group] = []
        """Groups released and not yet handed back (the running call's, or those of a call
        that was cancelled or lost with its event loop: the next call hands them back)."""
        self._ended: list[Episode] = []
        """Attempts that ended and were not yet counted (and retried)."""
        self._tasks: dict[Episode, asyncio.Task[None]] = {}
        self._next_traj = 0
        self._groups_launched = 0
        self._tasks_ended = 0
        """Episode tasks that ended so far: groups settle and room frees up only then."""
        self._collects = 0
        # spare threads: an env that timed out may still hold one
        self._executor = ThreadPoolExecutor(
            max_workers=self.config.max_in_flight + 8, thread_name_prefix="rollout-env"
        )
        self._slots = SlotLedger(source)
        self._driver = EpisodeDriver(
            self._slots, self.policy, self.config, self.callbacks, self._executor, self._lockstep
        )
        self.policy_version = 0
        """Set before each collect (or pass ``policy_version=``); every step records it."""

    # ---------------------------------------------------------------- public API

    @property
    def carried(self) -> list[Episode]:
        """Unfinished episodes waiting for the next collect call."""
        return [ep for g in self._open for ep in g.members if not ep.ended]

    @property
    def policy_batches(self) -> list[int]:
        """Size of every batch sent to a batched synchronous policy so far, in order
        (empty for an async policy)."""
        if self._lockstep is not None:
            return self._lockstep.batch_sizes
        return list(getattr(self.policy, "batch_sizes", []))

    @property
    def slots_out(self) -> int:
        """Env slots lent by the source and not yet back (held by carried episodes)."""
        return self._slots.out

    async def collect(
        self,
        target_groups: int,
        *,
        policy_version: int | None = None,
        on_group: Callable[[Group], None] | None = None,
        keep: bool = True,
    ) -> Collection:
        """Run episodes until ``target_groups`` usable groups were released (``partial``),
        or until the ``target_groups`` groups started here all ended (not ``partial``).

        Fewer come back only when the seeds run out. Every group that ended is returned,
        usable or not, so no finished episode is lost. ``on_group(group)`` is called with
        each group as soon as it is released (e.g. to write its episodes to disk at once).
        With ``keep=False`` (a run that streams its groups through ``on_group``) a group is
        not kept once ``on_group`` has it: the collection's summary counts it, its
        ``groups`` list stays empty, and memory does not grow with the run.

        Raises:
            CollectionError: a callback raised, or an episode ``failed`` (the policy server
                refused its request); the groups finished so far are on the error.
            FailureRunError: a run of infrastructure failures with no episode finishing
                (an outage: the tasks that failed in it are played again by the next call,
                no seed is used up), or no env left to lend.

        Cancelled (a timeout, a shutdown), the call first stops what it started: episodes
        waiting for their policy or for a slot pause, env calls in flight finish (each
        within ``env_timeout_s``) and pause; the groups it had finished are handed back by
        the next call. A second cancel while it stops cuts the env calls short (those
        attempts end ``interrupted`` and are played again).
        """
        if target_groups < 1:
            raise InvalidConfigError(f"target_groups must be at least 1, got {target_groups}.")
        if policy_version is not None:
            self.policy_version = policy_version
        started = time.perf_counter()
        call = self._open_call(on_group, keep)
        try:
            await self._settle_leftovers(call)
            self._resume_carried(call)
            await self._fill(call, target_groups)
            await self._halt(call)
        except BaseException:  # its groups stay in self._undelivered for the next call
            await self._halt(call)
            raise
        collection = self._collection(call, started)
        self._undelivered = []  # handed back now, on the result or on the error
        if call.error is not None:
            raise collection_error(call.error, collection) from call.error
        return collection

    def collect_sync(
        self,
        target_groups: int,
        *,
        policy_version: int | None = None,
        on_group: Callable[[Group], None] | None = None,
        keep: bool = True,
    ) -> Collection:
        """:meth:`collect` from synchronous code, on its own event loop.

        The loop runs under :func:`~agentgym.rollout.loop.run_bounded` (Ctrl-C stops it
        within a bounded time and keeps what finished, as ``agentgym eval`` does), and the
        policy's HTTP client of that loop is closed at the end (:meth:`collect_and_close`).
        """
        return run_bounded(
            self.collect_and_close(
                target_groups, policy_version=policy_version, on_group=on_group, keep=keep
            )
        )

    def run_to_end(
        self,
        target_groups: int,
        *,
        on_group: Callable[[Group], None] | None = None,
        keep: bool = True,
    ) -> Collection:
        """:meth:`collect_sync`, then :meth:`close`, for a caller with one batch of work
        (``play``, group rollouts, held-out evaluation). In lockstep mode the exception a
        local policy or a callback raised is raised as itself, not wrapped in a
        :class:`~agentgym.rollout.faults.CollectionError` (a run of failures still is)."""
        try:
            return self.collect_sync(target_groups, on_group=on_group, keep=keep)
        except CollectionError as exc:
            if self.config.lockstep and not isinstance(exc, FailureRunError):
                raise exc.error from None
            raise
        finally:
            self.close()

    async def collect_and_close(
        self,
        target_groups: int,
        *,
        policy_version: int | None = None,
        on_group: Callable[[Group], None] | None = None,
        keep: bool = True,
    ) -> Collection:
        """:meth:`collect`, then close the policy's HTTP client bound to this event loop
        (for a loop that ends after this call; at most 2 s, whatever the close does)."""
        try:
            return await self.collect(
                target_groups, policy_version=policy_version, on_group=on_group, keep=keep
            )
        finally:
            await close_within(self.policy, timeout_s=2.0)

    def close(self) -> None:
        """Give back every env slot (carried episodes', and those on their way back), then
        close the source, the worker threads and the policy."""
        call = CallState(-1, CollectionSummary(), asyncio.Event(), self.policy_version)
        for ep, task in list(self._tasks.items()):  # tasks of a loop that is gone
            self._abandon(call, ep, task)
        for ep in self.carried:
            drop_request(ep, call.summary)
            if ep.slot is not None:
                slot, ep.slot = ep.slot, None
                self._slots.give_back(slot, healthy=True)
        self._open.clear()
        self._undelivered = []
        self._ended.clear()
        self._slots.close()
        self.source.close()
        self._executor.shutdown(wait=False)
        if self._lockstep is not None:
            self._lockstep.close()
        close = getattr(self.policy, "close", None)
        if callable(close):
            close()

    # ---------------------------------------------------------------- one call

    def _open_call(self, on_group: Callable[[Group], None] | None, keep: bool) -> CallState:
        call = CallState(
            self._collects,
            CollectionSummary(),
            asyncio.Event(),
            self.policy_version,
            on_group,
            keep=keep,
        )
        self._collects += 1
        if self._lockstep is not None:
            self._lockstep.wake = call.changed.set
        call.released = self._undelivered  # the same list: kept until handed back
        call.summary.delivered_late = len(call.released)
        call.usable_released = sum(g.usable for g in call.released)
        return call

    async def _fill(self, call: CallState, target_groups: int) -> None:
        """Launch groups and release finished ones until the target is met, nothing runs
        and nothing more may start (the seeds ran out; not ``partial``: every group this
        call may start has ended), or an error stops the call."""
        seen = -1
        while call.error is None:
            if seen != self._tasks_ended:  # else no group settled and no room freed up
                seen = self._tasks_ended
                self._handle_ended(call)
                self._release(call)
                if self._target_met(call, target_groups):
                    return
                self._launch(call, target_groups)
                if not self._tasks:
                    return
            if self._lockstep is not None:  # after _launch: replacements ask first
                self._lockstep.flush_if_all_asked(self._tasks.keys())
            await call.changed.wait()
            call.changed.clear()

    def _target_met(self, call: CallState, target_groups: int) -> bool:
        """``partial``: enough usable groups were released (those handed over from a
        cancelled call count). Not ``partial``, a call never stops early."""
        return self.config.partial and call.usable_released >= target_groups

    async def _halt(self, call: CallState) -> None:
        """Stop every episode of the call: one waiting for a slot or its policy pauses at
        once, one inside an env call pauses when the call returns. Cancelled meanwhile,
        cancel them all (see :meth:`EpisodeDriver.stop_where_it_is`) and re-raise."""
        call.stopping = True
        for ep, task in list(self._tasks.items()):
            if ep.phase in ("slot", "policy"):
                task.cancel()
        try:
            while self._tasks:
                await asyncio.wait(list(self._tasks.values()))
        except asyncio.CancelledError:
            for task in self._tasks.values():
                task.cancel()
            raise
        self._handle_ended(call)
        if isinstance(call.error, RunOfFailures):
            self._forgive(call)
        self._release(call, final=True)

    async def _settle_leftovers(self, call: CallState) -> None:
        """Tasks an earlier call left (its stop was cancelled in turn): wait until those
        of this loop have stopped; take over those of a loop that is gone."""
        loop = asyncio.get_running_loop()
        for ep, task in list(self._tasks.items()):
            if task.get_loop() is not loop:
                self._abandon(call, ep, task)
        here = list(self._tasks.values())
        for task in here:
            task.cancel()
        if here:
            await asyncio.wait(here)

    def _abandon(self, call: CallState, ep: Episode, task: asyncio.Task[None]) -> None:
        """Take an episode from a task that will never run again (its loop is gone)."""
        self._tasks.pop(ep, None)
        ep.driver = None
        self._driver.stop_where_it_is(call, ep)
        if ep.ended:
            self._ended.append(ep)

    def _collection(self, call: CallState, started: float) -> Collection:
        released, summary = call.released, call.summary
        for g in released:
            self._count(call, g)
        summary.excluded_groups = summary.groups - summary.usable_groups
        summary.carried_out = len(self.carried)
        summary.seconds = time.perf_counter() - started
        return Collection(released, summary, self.policy_version)

    @staticmethod
    def _count(call: CallState, group: Group) -> None:
        """Count a released group in the call's summary (when the collection is made, or
        when it is released for a call that does not keep it)."""
        summary = call.summary
        summary.groups += 1
        summary.usable_groups += group.usable
        for ep in group.members:
            summary.episodes_finished += ep.status == "done"
            summary.tokens += ep.tokens
            summary.carried_tokens += sum(
                n for n, c in zip(ep.step_tokens, ep.step_collects) if c < call.index
            )

    # ---------------------------------------------------------------- scheduling

    def _new_episode(
        self,
        group_id: str,
        seed: int,
        member: int,
        index: int,
        attempt: int = 0,
        start: EpisodeStart | None = None,
    ) -> Episode:
        self._next_traj += 1
        traj = self._next_traj - 1
        return Episode(group_id, seed, member, traj, attempt, index=index, start=start)

    def _room(self) -> int:
        """Episodes that may run at once: ``max_in_flight``, at most the live capacity."""
        capacity = self._slots.live_capacity()
        limit = self.config.max_in_flight
        return limit if capacity is None else min(limit, capacity)

    def _launch(self, call: CallState, target_groups: int) -> None:
        """Fill the room: first the episodes waiting in open groups (carried over, or
        played again after an outage), then new groups (one group at least when none
        runs: its members then take the slots in turn). No new seed is drawn during a run
        of failures while episodes still run: it may be an outage."""
        if self._slots.live_capacity() == 0:
            call.fail(RunOfFailures(no_live_envs_message(self.source)))
            return
        room = self._room()
        for ep in self._waiting():
            if len(self._tasks) >= room:
                return
            self._start(call, ep)
        if call.failure_run and self._tasks:
            return
        if self._lockstep is not None:  # episode by episode, as envs free up
            while not self._exhausted and len(self._tasks) < room:
                if not self.config.partial and call.launched >= target_groups:
                    return
                self._launch_group(call, room)
            return
        k = self.config.group_size
        room = max(k, room)
        while not self._exhausted and len(self._tasks) + k <= room:
            if not self.config.partial and call.launched >= target_groups:
                return
            self._launch_group(call)

    def _waiting(self) -> list[Episode]:
        """Unfinished members of open groups that no task drives: those holding an env
        first, then in launch order. An episode that holds an env never waits for one, so
        started first it cannot be starved by episodes that wait for the env it holds."""
        waiting = [ep for g in self._open for ep in g.members if not ep.ended and ep.driver is None]
        return sorted(waiting, key=lambda ep: ep.slot is None)

    def _launch_group(self, call: CallState, room: int | None = None) -> None:
        """Draw the next seed and start its group's members (only those that fit in
        ``room``; the others wait in the open group, see :meth:`_waiting`)."""
        try:
            item = next(self._seeds)
        except StopIteration:
            self._exhausted = True
            return
        start = item if isinstance(item, EpisodeStart) else None
        seed = start.seed if start is not None else int(item)  # type: ignore[arg-type]
        gid = f"{self.config.group_prefix}{seed}"
        if start is not None and start.group_id is not None:
            gid = start.group_id
        k, first = self.config.group_size, self._groups_launched * self.config.group_size
        self._groups_launched += 1
        call.launched += 1
        members = [self._new_episode(gid, seed, m, first + m, start=start) for m in range(k)]
        group = Group(gid, seed, members)
        self._open.append(group)
        for ep in group.members:
            if room is None or len(self._tasks) < room:
                self._start(call, ep)

    def _start(self, call: CallState, ep: Episode) -> None:
        """Give ``ep`` a task, unless one drives it already (never two)."""
        if ep.driver is not None:
            return
        ep.status = "running"
        task = asyncio.create_task(self._driver.drive(call, ep))
        ep.driver = task
        self._tasks[ep] = task
        task.add_done_callback(functools.partial(self._task_done, call, ep))

    def _task_done(self, call: CallState, ep: Episode, task: asyncio.Task[None]) -> None:
        self._tasks_ended += 1
        if self._tasks.get(ep) is task:
            del self._tasks[ep]
        if ep.driver is not task:
            return  # taken over already
        ep.driver = None
        if not task.cancelled() and task.exception() is not None:
            call.fail(task.exception())  # type: ignore[arg-type]
        if ep.status == "running":  # cancelled before it ever ran
            self._driver.stop_where_it_is(call, ep)
        if ep.ended:
            self._ended.append(ep)
        call.changed.set()

    def _resume_carried(self, call: CallState) -> None:
        """Count what ended after the last call stopped; send the unfinished episodes that
        are too stale back to reset (:meth:`_launch` starts them, within the room)."""
        self._handle_ended(call)
        for ep in self._waiting():
            if self._is_stale(ep):
                self._restart(ep, call.summary)
                call.summary.restarted_stale += 1
            call.summary.carried_in += ep.status == "paused"

    def _is_stale(self, ep: Episode) -> bool:
        """The episode's first step is more than ``max_staleness`` versions old."""
        limit = self.config.max_staleness
        if limit is None or not ep.steps:
            return False
        first = ep.steps[0].policy_version
        return first is not None and self.policy_version - first > limit

    @staticmethod
    def _restart(ep: Episode, summary: CollectionSummary) -> None:
        """Forget a carried episode's steps; it starts again from reset on its env."""
        drop_request(ep, summary)
        ep.steps.clear()
        ep.step_collects.clear()
        ep.step_tokens.clear()
        ep.components.clear()
        ep.branch_points.clear()
        ep.chat = None

    def _handle_ended(self, call: CallState) -> None:
        """Count the attempts that ended, watch the run of failures, start retries
        (paused until the next call when this one is stopping)."""
        ended, self._ended = self._ended, []
        for ep in ended:
            if ep.status == "done":
                call.failure_run = 0
                call.run_causes.clear()
                call.run_attempts.clear()
            if ep.status != "infra_failure":
                continue
            kind = cause_kind(ep.cause)
            summary = call.summary
            summary.infra_failures += 1
            summary.causes[kind] = summary.causes.get(kind, 0) + 1
            if kind != INTERRUPTED:
                self._count_failure(call, ep, kind)
            self._retry(call, ep, kind)

    def _count_failure(self, call: CallState, ep: Episode, kind: str) -> None:
        call.failure_run += 1
        call.run_attempts.append(ep)
        call.run_causes[kind] = call.run_causes.get(kind, 0) + 1
        if call.failure_run >= self.config.failure_limit:
            message = failure_run_message(call.failure_run, call.run_causes, ep.cause)
            call.fail(RunOfFailures(message))

    def _retry(self, call: CallState, ep: Episode, kind: str) -> None:
        """A fresh attempt in the failed one's place, while the member has retries left
        (an interrupted attempt, or one that failed in an outage, does not use one up)."""
        group = next(g for g in self._open if ep in g.members)
        failed = sum(
            a.member == ep.member
            and a.status == "infra_failure"
            and cause_kind(a.cause) != INTERRUPTED
            and not a.in_outage
            for a in group.attempts
        )
        if kind != INTERRUPTED and failed > self.config.episode_retries:
            return
        self._replace(call, group, ep)

    def _replace(self, call: CallState, group: Group, ep: Episode) -> None:
        """Put a fresh attempt in ``ep``'s place; it starts now, or with the next call
        when this one is stopping."""
        retry = self._new_episode(
            ep.group_id, ep.seed, ep.member, ep.index, ep.attempt + 1, ep.start
        )
        group.members[ep.member] = retry
        group.retired.append(ep)
        call.summary.retries += 1
        if call.stopping or call.error is not None:
            retry.status = "paused"  # begins with a reset in the next call
        else:
            self._start(call, retry)

    def _forgive(self, call: CallState) -> None:
        """The run of failures stopped the call: an outage, not the tasks' fault. Its
        attempts stay reported (``in_outage``; they use up no retry), and each one still
        standing in its group gets a fresh attempt for the next call, so its group stays
        in the engine and its seed is not used up."""
        for ep in call.run_attempts:
            ep.in_outage = True
            group = next((g for g in self._open if ep in g.members), None)
            if group is not None:
                self._replace(call, group, ep)
        call.run_attempts.clear()

    def _release(self, call: CallState, *, final: bool = False) -> None:
        """Take out the groups whose members all ended and were handled (an attempt not
        yet through :meth:`_handle_ended` may still be replaced by a retry). Until the call
        ends (``final``), a group with a member that failed in the current run of failures
        is held back: if the run turns out to be an outage, that member is played again."""
        held = set(self._ended) | (set() if final else set(call.run_attempts))
        done: list[Group] = []
        still: list[Group] = []
        for group in self._open:  # settled: every member ended, its task gone, not held
            for ep in group.members:
                if ep.status not in ENDED or ep.driver is not None or ep in held:
                    still.append(group)
                    break
            else:
                done.append(group)
        self._open = still
        for group in done:
            call.usable_released += group.usable
            if call.keep:
                call.released.append(group)
            else:
                self._count(call, group)
            notify(call, call.on_group, group)
