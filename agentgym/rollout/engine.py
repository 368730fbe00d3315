"""The asynchronous rollout engine: many episodes in flight, no barrier across envs.

Each episode is an asyncio task: it asks the policy for its next action
(:class:`~agentgym.rollout.policy.AsyncPolicy`), steps its own env in a worker thread as
soon as the action arrives, and goes on; a slow reply stalls only its own episode. Episodes
come in GRPO groups (``group_size`` episodes of one task seed), and a group is released only
when all its members have ended.

Partial rollouts (APRIL): with ``partial=True`` the engine keeps ``max_in_flight`` episodes
running (more than the target needs), stops as soon as ``target_groups`` usable groups have
been released, cancels the policy requests still in flight, and keeps every unfinished
episode - its env, chat, steps and tokens - for the next :meth:`RolloutEngine.collect` call.
Every step records the policy version that generated it, so a trainer can correct or drop
stale tokens (``max_staleness`` restarts episodes whose oldest step is too old).

Failures: an env that raises, reports ``info["env_error"]`` or does not answer within
``env_timeout_s``, and a policy request that still fails after its retries, end the episode
as ``infra_failure`` with its cause. The env is retired, and a fresh attempt at the same task
takes the episode's place in its group (up to ``episode_retries`` times); a group whose
member still failed is released with ``usable=False`` and never enters advantages.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agentgym.agents.base import Generation, Policy, PolicyInput
from agentgym.agents.http import PolicyRequestError
from agentgym.episodes import EpisodeSummary, StepEvent
from agentgym.error import InvalidConfigError
from agentgym.rl.rollouts import Chat, StepRecord, merge_step_info
from agentgym.rollout.loop import close_within, run_bounded
from agentgym.rollout.policy import AsyncPolicy, as_async
from agentgym.rollout.records import Collection, CollectionSummary, Episode, Group
from agentgym.rollout.sources import EnvSlot, EnvSource
from agentgym.wrappers.chat import observation_message

T = TypeVar("T")


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
    """Past turn pairs the policy reads (None: all), as in :func:`agentgym.rl.rollouts.run_chains`."""
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

    def __post_init__(self) -> None:
        if self.group_size < 1:
            raise InvalidConfigError(f"group_size must be at least 1, got {self.group_size}.")
        if self.max_in_flight < self.group_size:
            raise InvalidConfigError(
                f"max_in_flight ({self.max_in_flight}) must hold at least one group "
                f"(group_size {self.group_size})."
            )


@dataclass
class EpisodeCallbacks:
    """What the engine tells its caller about each episode as it happens.

    ``on_reset(slot, k, obs, info)``, ``on_step(event)`` and ``on_end(slot, summary)`` have
    the signatures of :func:`agentgym.episodes.play`'s callbacks, so
    :meth:`agentgym.trajectory.Recorder.play_callbacks` records engine rollouts unchanged:
    ``slot`` is the attempt's trajectory id and ``k`` the episode's index (group order x
    ``group_size`` + member, as :func:`agentgym.rl.rollouts.group_rollouts` numbers them).
    An attempt ended by an infrastructure failure gets ``on_end`` with the cause as the
    summary's ``error``. ``on_episode(episode)`` sees every attempt as it ends (done or
    failed). An exception raised by a callback stops the collection and is re-raised.
    """

    on_reset: Callable[[int, int, dict, dict], None] | None = None
    on_step: Callable[[StepEvent], None] | None = None
    on_end: Callable[[int, EpisodeSummary], None] | None = None
    on_episode: Callable[[Episode], None] | None = None


def caller_mistake(exc: BaseException) -> bool:
    """A policy error that says the request itself is wrong (HTTP 4xx other than 408 and
    429: a bad key, a refused message format): not infrastructure, so it stops the run."""
    status = getattr(exc, "status", None)
    return (
        isinstance(exc, PolicyRequestError)
        and status is not None
        and 400 <= status < 500
        and status not in (408, 429)
    )


class InfraFailure(Exception):
    """An episode ended by the infrastructure, not by the agent (``kind``: the cause)."""

    def __init__(self, kind: str, detail: str):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind


def generation_tokens(gen: Generation) -> int:
    """Tokens of one generation: its token ids, else the server's ``usage``, else words."""
    if gen.token_ids is not None:
        return len(gen.token_ids)
    usage = gen.meta.get("usage") or {}
    if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
        return int(usage["completion_tokens"])
    return len(gen.text.split())


@dataclass
class _Call:
    """State of one collect call, shared by its episode tasks."""

    index: int
    summary: CollectionSummary
    changed: asyncio.Event
    tasks: dict[Episode, asyncio.Task[None]] = field(default_factory=dict)
    phase: dict[Episode, str] = field(default_factory=dict)
    ended: list[Episode] = field(default_factory=list)
    stopping: bool = False
    on_group: Callable[[Group], None] | None = None
    error: BaseException | None = None
    """A bug (not an infrastructure failure) that ended an episode task: re-raised."""


class RolloutEngine:
    """Collects GRPO groups asynchronously; see the module docstring.

    Args:
        source: where envs come from (:class:`~agentgym.rollout.LocalEnvSource`,
            :class:`~agentgym.rollout.PoolEnvSource`).
        policy: an async policy, or a batched sync one (wrapped in a
            :class:`~agentgym.rollout.BatchingPolicy`).
        seeds: the task seeds, one group each, consumed in order across calls.
        config: :class:`RolloutConfig`.
    """

    def __init__(
        self,
        source: EnvSource,
        policy: AsyncPolicy | Policy,
        seeds: Iterable[int],
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
        self.policy = as_async(policy)
        self._seeds: Iterator[int] = iter(seeds)
        self._exhausted = False
        self._open: list[Group] = []
        self._next_traj = 0
        self._groups_launched = 0
        self._collects = 0
        # spare threads: an env that timed out may still hold one
        self._executor = ThreadPoolExecutor(
            max_workers=self.config.max_in_flight + 8, thread_name_prefix="rollout-env"
        )
        self.policy_version = 0
        """Set before each collect (or pass ``policy_version=``); every step records it."""

    # ---------------------------------------------------------------- public API

    @property
    def carried(self) -> list[Episode]:
        """Unfinished episodes waiting for the next collect call."""
        return [ep for g in self._open for ep in g.members if not ep.ended]

    async def collect(
        self,
        target_groups: int,
        *,
        policy_version: int | None = None,
        on_group: Callable[[Group], None] | None = None,
    ) -> Collection:
        """Run episodes until ``target_groups`` usable groups were released (``partial``),
        or until the ``target_groups`` groups started here all ended (not ``partial``).

        Fewer come back only when the seeds run out. Every group that ended is returned,
        usable or not, so no finished episode is lost. ``on_group(group)`` is called with
        each group as soon as it is released (e.g. to write its episodes to disk at once).
        """
        if target_groups < 1:
            raise InvalidConfigError(f"target_groups must be at least 1, got {target_groups}.")
        if policy_version is not None:
            self.policy_version = policy_version
        started = time.perf_counter()
        call = _Call(self._collects, CollectionSummary(), asyncio.Event(), on_group=on_group)
        self._collects += 1
        released: list[Group] = []
        self._resume_carried(call)
        launched = 0
        k = self.config.group_size
        while call.error is None:
            self._handle_ended(call)
            released += self._release(call)
            usable = sum(g.usable for g in released)
            if self.config.partial:
                if usable >= target_groups:
                    break
                while not self._exhausted and len(call.tasks) + k <= self.config.max_in_flight:
                    launched += self._launch_group(call)
            else:
                while (
                    not self._exhausted
                    and launched < target_groups
                    and len(call.tasks) + k <= self.config.max_in_flight
                ):
                    launched += self._launch_group(call)
                if not self._open and (launched >= target_groups or self._exhausted):
                    break
            if not call.tasks:
                break  # nothing runs and nothing can start: the seeds ran out
            await call.changed.wait()
            call.changed.clear()
        await self._stop(call)
        if call.error is not None:
            raise call.error
        released += self._release(call)
        summary = call.summary
        summary.groups = len(released)
        summary.usable_groups = sum(g.usable for g in released)
        summary.excluded_groups = summary.groups - summary.usable_groups
        summary.carried_out = len(self.carried)
        for g in released:
            for ep in g.members:
                summary.episodes_finished += ep.status == "done"
                summary.tokens += ep.tokens
                summary.carried_tokens += sum(
                    n for n, c in zip(ep.step_tokens, ep.step_collects) if c < call.index
                )
        summary.seconds = time.perf_counter() - started
        return Collection(released, summary, self.policy_version)

    def collect_sync(
        self,
        target_groups: int,
        *,
        policy_version: int | None = None,
        on_group: Callable[[Group], None] | None = None,
    ) -> Collection:
        """:meth:`collect` from synchronous code, on its own event loop.

        The loop runs under :func:`~agentgym.rollout.loop.run_bounded` (Ctrl-C stops it
        within a bounded time and keeps what finished, as ``agentgym eval`` does), and the
        policy's HTTP client of that loop is closed at the end (:meth:`collect_and_close`).
        """
        return run_bounded(
            self.collect_and_close(target_groups, policy_version=policy_version, on_group=on_group)
        )

    async def collect_and_close(
        self,
        target_groups: int,
        *,
        policy_version: int | None = None,
        on_group: Callable[[Group], None] | None = None,
    ) -> Collection:
        """:meth:`collect`, then close the policy's HTTP client bound to this event loop
        (for a loop that ends after this call; at most 2 s, whatever the close does)."""
        try:
            return await self.collect(
                target_groups, policy_version=policy_version, on_group=on_group
            )
        finally:
            await close_within(self.policy, timeout_s=2.0)

    def close(self) -> None:
        """Give back the envs of carried episodes, close the source and the worker threads."""
        for ep in self.carried:
            self._drop_request(ep, CollectionSummary())
            if ep.slot is not None:
                self.source.release(ep.slot, healthy=True)
                ep.slot = None
        self._open.clear()
        self.source.close()
        self._executor.shutdown(wait=False)
        close = getattr(self.policy, "close", None)
        if callable(close):
            close()

    # ---------------------------------------------------------------- scheduling

    def _new_episode(
        self, group_id: str, seed: int, member: int, index: int, attempt: int = 0
    ) -> Episode:
        self._next_traj += 1
        return Episode(group_id, seed, member, self._next_traj - 1, attempt, index=index)

    def _launch_group(self, call: _Call) -> int:
        try:
            seed = int(next(self._seeds))
        except StopIteration:
            self._exhausted = True
            return 0
        gid = f"{self.config.group_prefix}{seed}"
        k, first = self.config.group_size, self._groups_launched * self.config.group_size
        self._groups_launched += 1
        group = Group(gid, seed, [self._new_episode(gid, seed, m, first + m) for m in range(k)])
        self._open.append(group)
        for ep in group.members:
            self._start(call, ep, group)
        return 1

    def _start(self, call: _Call, ep: Episode, group: Group) -> None:
        ep.status = "running"
        task = asyncio.create_task(self._drive(call, ep))
        call.tasks[ep] = task

        def finished(done: asyncio.Task[None]) -> None:
            if not done.cancelled() and done.exception() is not None and call.error is None:
                call.error = done.exception()
            call.tasks.pop(ep, None)
            call.phase.pop(ep, None)
            if ep.ended:
                call.ended.append(ep)
            call.changed.set()

        task.add_done_callback(finished)

    def _resume_carried(self, call: _Call) -> None:
        limit = self.config.max_staleness
        for group in self._open:
            for ep in group.members:
                if ep.ended:
                    continue
                if (
                    limit is not None
                    and ep.steps
                    and ep.steps[0].policy_version is not None
                    and self.policy_version - ep.steps[0].policy_version > limit
                ):
                    self._restart(ep, call.summary)
                    call.summary.restarted_stale += 1
                call.summary.carried_in += ep.status == "paused"
                self._start(call, ep, group)

    def _restart(self, ep: Episode, summary: CollectionSummary) -> None:
        """Forget a carried episode's steps; it starts again from reset on its env."""
        self._drop_request(ep, summary)
        ep.steps.clear()
        ep.step_collects.clear()
        ep.step_tokens.clear()
        ep.chat = None

    def _handle_ended(self, call: _Call) -> None:
        """Count failures and start retries (paused until the next call when stopping)."""
        ended, call.ended = call.ended, []
        for ep in ended:
            if ep.status != "infra_failure":
                continue
            summary = call.summary
            summary.infra_failures += 1
            kind = (ep.cause or "unknown").split(":", 1)[0]
            summary.causes[kind] = summary.causes.get(kind, 0) + 1
            if ep.attempt >= self.config.episode_retries:
                continue
            group = next(g for g in self._open if ep in g.members)
            retry = self._new_episode(ep.group_id, ep.seed, ep.member, ep.index, ep.attempt + 1)
            group.members[ep.member] = retry
            group.retired.append(ep)
            summary.retries += 1
            if call.stopping:
                retry.status = "paused"  # begins with a reset in the next call
            else:
                self._start(call, retry, group)

    def _release(self, call: _Call) -> list[Group]:
        """Take out the groups whose members all ended and were handled: a member whose
        task has just ended may not have been through :meth:`_handle_ended` yet (its done
        callback still queued), and its retry must find the group open."""

        def settled(group: Group) -> bool:
            return group.ended and not any(ep in call.tasks for ep in group.members)

        done = [g for g in self._open if settled(g)]
        self._open = [g for g in self._open if not settled(g)]
        if call.on_group is not None:
            for group in done:
                call.on_group(group)
        return done

    async def _stop(self, call: _Call) -> None:
        """End the call: cancel policy requests in flight, let env calls finish, pause."""
        call.stopping = True
        for ep, task in list(call.tasks.items()):
            if call.phase.get(ep) == "policy":
                task.cancel()
        while call.tasks:
            await asyncio.gather(*list(call.tasks.values()), return_exceptions=True)
        self._handle_ended(call)

    # ---------------------------------------------------------------- one episode

    def _request(
        self, call: _Call, ep: Episode, chat: Chat
    ) -> tuple[asyncio.Future[Generation], int, int]:
        """The episode's policy request: the one still in flight from the previous call
        (when this is the same event loop), else a new one tagged with the current version."""
        if ep.pending is not None:
            request = ep.pending[0]
            if request.get_loop() is asyncio.get_running_loop() and not request.cancelled():
                call.summary.resumed_requests += 1
                return ep.pending
            self._drop_request(ep, call.summary)
        item = PolicyInput(
            messages=chat.messages(self.config.history_turns), info=ep.info, env=ep.slot.env
        )
        request = asyncio.ensure_future(self.policy.act(item))
        call.summary.policy_requests += 1
        ep.pending = (request, self.policy_version, call.index)
        return ep.pending

    @staticmethod
    def _drop_request(ep: Episode, summary: CollectionSummary) -> None:
        if ep.pending is not None:
            request = ep.pending[0]
            if not request.done():
                if not request.get_loop().is_closed():  # a closed loop dropped it already
                    request.cancel()
            elif not request.cancelled():
                request.exception()  # retrieved: no "never retrieved" warning
            summary.aborted_requests += 1
            ep.pending = None

    async def _env_call(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._executor, fn, *args)
        try:
            return await asyncio.wait_for(future, self.config.env_timeout_s)
        except TimeoutError as exc:
            raise InfraFailure(
                "env_timeout", f"no answer within {self.config.env_timeout_s} s"
            ) from exc
        except InfraFailure:
            raise
        except Exception as exc:
            raise InfraFailure("env_error", f"{type(exc).__name__}: {exc}") from exc

    async def _drive(self, call: _Call, ep: Episode) -> None:
        """Run ``ep`` until it ends or the call stops (then it is paused)."""
        summary = call.summary
        try:
            if ep.slot is None or ep.chat is None:
                call.phase[ep] = "env"
                if ep.slot is None:
                    ep.slot = await self._env_call(self.source.acquire)
                t0 = time.perf_counter()
                slot: EnvSlot = ep.slot
                obs, info = await self._env_call(slot.reset, ep.seed)
                summary.env_seconds += time.perf_counter() - t0
                ep.task_id, ep.info = str(info.get("task_id", "")), info
                ep.chat = Chat.after_reset(obs, info)
                if self.callbacks.on_reset is not None:
                    self.callbacks.on_reset(ep.traj_id, ep.index, obs, info)
            chat = ep.chat
            while True:
                if call.stopping:
                    ep.status = "paused"
                    return
                call.phase[ep] = "policy"
                request, version, asked_in = self._request(call, ep, chat)
                t0 = time.perf_counter()
                try:
                    gen = await asyncio.shield(request)
                except asyncio.CancelledError:  # the call stopped (APRIL): pause here
                    if self.config.abort_requests:
                        self._drop_request(ep, summary)
                    ep.status = "paused"
                    return
                except Exception as exc:
                    ep.pending = None
                    if caller_mistake(exc):
                        raise
                    raise InfraFailure("policy_error", f"{type(exc).__name__}: {exc}") from exc
                finally:
                    policy_s = time.perf_counter() - t0
                    summary.policy_seconds += policy_s
                ep.pending = None
                call.phase[ep] = "env"
                t0 = time.perf_counter()
                res = await self._env_call(ep.slot.step, gen.text)
                env_s = time.perf_counter() - t0
                summary.env_seconds += env_s
                summary.env_steps += 1
                if res.info.get("env_error"):
                    raise InfraFailure("env_error", str(res.info["env_error"]))
                done = bool(res.terminated or res.truncated)
                ep.steps.append(
                    StepRecord(
                        group_id=ep.group_id,
                        traj_id=ep.traj_id,
                        step=len(ep.steps),
                        state_key=str(ep.info.get("state_key", "")),
                        generation=gen,
                        reward=float(res.reward),
                        valid=bool(res.info.get("action_valid", True)),
                        done=done,
                        success=bool(res.info.get("success", False)) if done else False,
                        policy_version=version,
                    )
                )
                ep.step_collects.append(asked_in)
                ep.step_tokens.append(generation_tokens(gen))
                chat.turns.append(
                    ({"role": "assistant", "content": gen.text}, observation_message(res.obs))
                )
                ep.info = merge_step_info(ep.info, res.info)
                if self.callbacks.on_step is not None:
                    event = StepEvent.of(
                        ep.traj_id, ep.index, gen, res, policy_s * 1e3, env_s * 1e3
                    )
                    self.callbacks.on_step(event)
                if done:
                    ep.status = "done"
                    self.source.release(ep.slot, healthy=True)
                    ep.slot = None
                    self._report_end(ep, res)
                    return
        except InfraFailure as failure:
            ep.status, ep.cause, ep.error = "infra_failure", str(failure), failure.__cause__
            if ep.slot is not None:
                self.source.release(ep.slot, healthy=False)
                ep.slot = None
            self._report_end(ep, None)

    def _report_end(self, ep: Episode, last: Any) -> None:
        """``on_end`` (for an attempt whose reset was reported) and ``on_episode``."""
        callbacks = self.callbacks
        if callbacks.on_end is not None and ep.chat is not None:
            callbacks.on_end(
                ep.traj_id,
                EpisodeSummary(
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
                ),
            )
        if callbacks.on_episode is not None:
            callbacks.on_episode(ep)
