"""What the rollout engine keeps and returns: episodes, GRPO groups and a collection.

An :class:`Episode` is one attempt at one task: its steps (each tagged with the policy
version that produced it and the collection call it was generated in), its chat so far and
its status. A :class:`Group` is the ``group_size`` episodes of one task (same seed); it is
released only when every member has ended, and a failure that retries did not cure leaves
the group ``usable=False`` so advantages leave it out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from agentgym.rollout.starts import BranchPoint, EpisodeStart
from agentgym.rollout.steps import Chat, RolloutBatch, StepRecord, Trajectory

Status = Literal["pending", "running", "paused", "done", "infra_failure", "failed"]
"""``infra_failure``: ended by the infrastructure (retried from reset); ``failed``: ended by
an error that a retry cannot cure (a request the policy server refused); both carry a
cause."""

ENDED: frozenset[str] = frozenset({"done", "infra_failure", "failed"})
"""The statuses of an attempt that ended."""


@dataclass(eq=False)
class Episode:
    """One attempt at one task (see the module docstring)."""

    group_id: str
    seed: int
    member: int
    """Its place in the group (0..group_size-1); a retry takes the failed attempt's place."""
    traj_id: int
    attempt: int = 0
    index: int = 0
    """The episode's number in launch order (group order x group_size + member); a retry
    keeps the failed attempt's."""
    task_id: str = ""
    status: Status = "pending"
    cause: str | None = None
    """Why an ``infra_failure`` or ``failed`` attempt ended (``kind: detail``; kinds:
    ``env_error``, ``env_timeout``, ``policy_error``, ``interrupted``, ``policy_refused``)."""
    error: BaseException | None = None
    """The exception behind the failure (None for a timeout or an env_error info)."""
    steps: list[StepRecord] = field(default_factory=list)
    step_collects: list[int] = field(default_factory=list)
    """For each step, the index of the collection call that asked for its generation."""
    step_tokens: list[int] = field(default_factory=list)
    components: dict[str, float] = field(default_factory=dict)
    """Each named reward component (the steps' ``info["reward_components"]``) summed over
    its steps."""
    chat: Chat | None = None
    info: dict[str, Any] = field(default_factory=dict)
    slot: Any = None
    """The env slot it holds while running or paused (None before reset and after its end)."""
    pending: Any = None
    """``(request, policy_version, call index)`` of a policy request still in flight when a
    collect call stopped; the next call awaits it instead of asking again."""
    asked_at: float = 0.0
    """``time.perf_counter()`` when its current policy request was made (or taken over)."""
    phase: str | None = None
    """What its task is waiting for (``slot``, ``acquire``, ``reset``, ``policy``,
    ``step``; None between them): where a stop finds it."""
    driver: Any = None
    """The asyncio task driving it (None when none does): one task per episode at most."""
    in_outage: bool = False
    """It failed in a run of failures that stopped its call (an outage): reported like any
    failure, but it used up no retry, and its task was played again."""
    start: EpisodeStart | None = None
    """Where it begins when not with a bare ``reset(seed)`` (reset options, or a snapshot)."""
    branch_points: list[BranchPoint] = field(default_factory=list)
    """With ``keep_branch_points``: the state after its start, then after each step that
    did not end it."""

    @property
    def restored(self) -> bool:
        """It continues from a snapshot (a branch), so it is not a whole episode."""
        return self.start is not None and self.start.restores

    @property
    def ended(self) -> bool:
        return self.status in ENDED

    @property
    def total_reward(self) -> float:
        return float(sum(s.reward for s in self.steps))

    @property
    def success(self) -> bool:
        return bool(self.status == "done" and self.steps and self.steps[-1].success)

    @property
    def tokens(self) -> int:
        return sum(self.step_tokens)

    def to_trajectory(self) -> Trajectory:
        """The episode as :mod:`agentgym.algos` rows take it."""
        return Trajectory(self.traj_id, self.group_id, self.seed, self.task_id, self.steps)


@dataclass(eq=False)
class Group:
    """The ``group_size`` episodes of one task (same seed), released as a whole."""

    group_id: str
    seed: int
    members: list[Episode]
    retired: list[Episode] = field(default_factory=list)
    """Attempts that failed and were replaced by a retry (kept for the record)."""

    @property
    def attempts(self) -> list[Episode]:
        """Every attempt at this task: the retired ones, then the members."""
        return [*self.retired, *self.members]

    @property
    def ended(self) -> bool:
        return all(ep.ended for ep in self.members)

    @property
    def usable(self) -> bool:
        """Every member finished normally: the group may enter advantages."""
        return all(ep.status == "done" for ep in self.members)

    @property
    def failures(self) -> list[Episode]:
        """Every attempt that ended in a failure (retried ones included), each with its
        cause."""
        return [ep for ep in self.attempts if ep.status in ("infra_failure", "failed")]


@dataclass
class CollectionSummary:
    """Counts of one :meth:`~agentgym.rollout.RolloutEngine.collect` call."""

    groups: int = 0
    """Groups released (usable or not)."""
    usable_groups: int = 0
    excluded_groups: int = 0
    """Released groups left out of advantages: a member failed even after its retries."""
    episodes_finished: int = 0
    """Episodes of released groups that ended normally (``done``)."""
    infra_failures: int = 0
    """Attempts that ended in an infrastructure failure during this call (retried or not;
    interrupted ones included)."""
    retries: int = 0
    """Fresh attempts started to replace failed ones."""
    causes: dict[str, int] = field(default_factory=dict)
    """Infrastructure failures by kind (``env_error``, ``env_timeout``, ``policy_error``,
    ``interrupted``: an env call cut short by a cancelled call)."""
    delivered_late: int = 0
    """Groups finished by an earlier call that was cancelled, handed back by this one."""
    carried_in: int = 0
    """Unfinished episodes taken over from the previous call."""
    carried_out: int = 0
    """Unfinished episodes paused at the end of this call, to be continued by the next."""
    aborted_requests: int = 0
    """Policy requests dropped (``abort_requests``, a new event loop, a stale restart):
    their episodes ask again."""
    resumed_requests: int = 0
    """Requests still in flight when the previous call stopped, whose replies this call used."""
    restarted_stale: int = 0
    """Carried episodes restarted from reset because their oldest step was too stale."""
    tokens: int = 0
    """Tokens of the released episodes' steps."""
    carried_tokens: int = 0
    """Of those, tokens generated in an earlier collection call."""
    env_steps: int = 0
    policy_requests: int = 0
    env_seconds: float = 0.0
    """Seconds spent in env reset/step calls, summed over episodes."""
    policy_seconds: float = 0.0
    """Seconds episodes waited for their own policy replies, summed over episodes."""
    seconds: float = 0.0
    """Wall time of the call."""

    @property
    def carried_token_share(self) -> float:
        return self.carried_tokens / self.tokens if self.tokens else 0.0


@dataclass
class Collection:
    """The groups one collection call released, and its summary."""

    groups: list[Group]
    summary: CollectionSummary
    policy_version: int

    @property
    def usable_groups(self) -> list[Group]:
        return [g for g in self.groups if g.usable]

    @property
    def usable_episodes(self) -> list[Episode]:
        """Every member of every usable group, group by group (what a batch is made of)."""
        return [ep for g in self.usable_groups for ep in g.members]

    @property
    def episodes(self) -> list[Episode]:
        """Every member of every released group (failed ones included), group by group."""
        return [ep for g in self.groups for ep in g.members]

    def to_batch(self) -> RolloutBatch:
        """The usable groups as a :class:`~agentgym.rollout.steps.RolloutBatch`: what
        ``grpo_rows``/``gigpo_rows`` and the trainer take (excluded groups left out)."""
        trajs = [ep.to_trajectory() for ep in self.usable_episodes]
        return RolloutBatch(
            trajs,
            env_steps=self.summary.env_steps,
            policy_calls=self.summary.policy_requests,
            tokens=self.summary.tokens,
            seconds=self.summary.seconds,
        )
