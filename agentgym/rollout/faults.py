"""How the rollout engine tells a failed episode from a failed call, and what it raises.

An episode can end three ways: ``done`` (the env ended it), ``infra_failure`` (an env that
crashed or hung, a policy request that failed after its retries, or an env call cut short
by a cancelled call: :class:`InfraFailure`, retried from reset), or ``failed`` (an error
that retrying cannot cure, such as a request the policy server refuses as malformed:
:func:`caller_mistake`). A failed episode, an exception in a callback, and a run of
infrastructure failures with no episode finishing (:class:`FailureRunError`) stop the
collect call; it then raises a :class:`CollectionError` that carries every group the call
finished, so nothing finished is lost with the error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from agentgym.agents.http import PolicyRequestError
from agentgym.error import AgentGymError

if TYPE_CHECKING:
    from agentgym.rollout.records import Collection

INTERRUPTED = "interrupted"
"""Cause kind of an attempt whose env call was cut short because its collect call was
cancelled: not the task's fault, so it is retried without using up ``episode_retries`` and
does not count towards a run of failures."""


class InfraFailure(Exception):
    """An episode ended by the infrastructure, not by the agent (``kind``: the cause)."""

    def __init__(self, kind: str, detail: str):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind

    @classmethod
    def env_error(cls, exc: BaseException) -> InfraFailure:
        """An env call (a reset, a step, lending a slot) raised ``exc``: it is the cause."""
        return cls("env_error", f"{type(exc).__name__}: {exc}")


def caller_mistake(exc: BaseException) -> bool:
    """A policy error that says the request itself is wrong (HTTP 4xx other than 408 and
    429: a bad key, a refused message format, a prompt over the context length): not
    infrastructure, so the episode is ``failed`` (not retried) and the call stops."""
    status = getattr(exc, "status", None)
    return (
        isinstance(exc, PolicyRequestError)
        and status is not None
        and 400 <= status < 500
        and status not in (408, 429)
    )


def cause_kind(cause: str | None) -> str:
    """The kind of a failure's cause (``"env_error: ..."`` -> ``"env_error"``)."""
    return (cause or "unknown").split(":", 1)[0]


class CollectionError(AgentGymError, RuntimeError):
    """A collect call stopped on an error after stopping everything it had started.

    ``collection`` holds every group the call finished before it stopped (each handed back
    here exactly once, as a returned :class:`~agentgym.rollout.Collection` would), and its
    summary; the unfinished episodes stay in the engine for the next call. The message is
    the error's own; ``__cause__`` is the error (a refused policy request, an exception in
    a callback); ``status`` is its HTTP status when a policy server refused a request.
    """

    def __init__(self, error: BaseException, collection: Collection, message: str | None = None):
        super().__init__(message or str(error) or type(error).__name__)
        self.error = error
        self.collection = collection
        self.status: int | None = getattr(error, "status", None)


class FailureRunError(CollectionError):
    """A run of infrastructure failures with no episode finishing in between stopped the
    call (the env source or the policy server is down), before it used up the task seeds:
    the attempts of the run are reported, and their tasks are played again by the next
    call. Or the env source has no live env left to lend."""


class RunOfFailures(Exception):
    """Why a call stops on its own (a run of failures, or no env left to lend); the call
    raises it as a :class:`FailureRunError`."""


def collection_error(error: BaseException, collection: Collection) -> CollectionError:
    """The error a stopped call raises for ``error``, carrying ``collection``."""
    if isinstance(error, RunOfFailures):
        return FailureRunError(error, collection)
    return CollectionError(error, collection)


def failure_run_message(failures: int, causes: Mapping[str, int], last: str | None) -> str:
    """The message of a :class:`FailureRunError` after ``failures`` failures in a row."""
    kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(causes.items()))
    return (
        f"{failures} infrastructure failures in a row and no episode finished ({kinds}; "
        f"last: {last}). The env source or the policy server looks down: the call stopped "
        "instead of using up the task seeds. The next call plays the tasks that failed in "
        "this run again; the groups that finished are on this error's .collection."
    )


def no_live_envs_message(source: object) -> str:
    """The message of a :class:`FailureRunError` for a source with no env left to lend."""
    return (
        f"the env source ({type(source).__name__}) has no live env left to lend: every one "
        "was retired after a failure and none could be replaced. The groups that finished "
        "are on this error's .collection; the unfinished episodes wait for the next call."
    )
