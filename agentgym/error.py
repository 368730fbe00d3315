"""Typed exceptions for user mistakes.

Environments never raise on an action string (bad actions come back as observations); these
exceptions are for mistakes in *calling* agentgym: an unknown env id, a bad keyword, a
corrupt file. Each message says what was expected, what was given, and how to fix it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class AgentGymError(Exception):
    """Base class of every error agentgym raises on purpose."""


class UnknownEnvError(AgentGymError, KeyError):
    """An env id that is not registered."""

    def __init__(self, env_id: str, known: Iterable[str]):
        known = sorted(known)
        close = difflib.get_close_matches(env_id, known, n=3, cutoff=0.5)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        msg = (
            f"No env registered as {env_id!r}.{hint} "
            "Run `agentgym list` to see every registered id."
        )
        super().__init__(msg)
        self.env_id = env_id
        self.suggestions = close

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0])


class UnknownTaskError(AgentGymError, KeyError):
    """A task id that the env's task set does not hold."""

    def __str__(self) -> str:
        return str(self.args[0])


class InvalidConfigError(AgentGymError, ValueError):
    """A constructor argument with a value the env cannot use."""


class UnknownOptionError(InvalidConfigError):
    """A keyword argument that an env's constructor does not take; the message names the
    env's options and a close match. (An :class:`InvalidConfigError`, not Python's
    ``TypeError``, so that it reaches the caller of ``gym.make`` as raised.)"""

    def __init__(self, owner: str, unknown: Iterable[str], accepted: Iterable[str]):
        unknown, accepted = sorted(unknown), sorted(accepted)
        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name, accepted, n=1, cutoff=0.6)
            hints.append(f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name))
        super().__init__(
            f"{owner} takes no option {', '.join(hints)}. Its options: {', '.join(accepted)}. "
            "The base options (split, reward_weights, max_turns, render_mode, max_text_length, "
            "answer_tool) are the same on every env: see docs/contract.md#env-options."
        )
        self.unknown = unknown
        self.accepted = accepted


class DependencyMissingError(AgentGymError, ImportError):
    """An optional dependency (Python package or system program) is not installed."""

    def __init__(self, what: str, install_hint: str):
        super().__init__(f"{what} is not installed. Install it with: {install_hint}")
        self.install_hint = install_hint


class ConformanceError(AgentGymError, AssertionError):
    """An env broke the agentgym contract (raised by agentgym.testing)."""


class MultiAgentEnvError(AgentGymError):
    """A multi-agent (PettingZoo) id was built or played as a single-agent Gymnasium env."""

    def __init__(self, env_id: str, where: str = "gym.make"):
        super().__init__(
            f"{env_id!r} is a multi-agent env (a PettingZoo ParallelEnv with several seats), "
            f"so {where} cannot build it. Build it with agentgym.make_multi({env_id!r}); "
            "`agentgym list` marks these ids 'multi'."
        )
        self.env_id = env_id


class InvalidEnvironmentVariableError(AgentGymError, ValueError):
    """An ``AGENTGYM_*`` environment variable is set to a value that cannot be used."""

    def __init__(self, name: str, value: str, problem: str, fix: str):
        super().__init__(f"{name}={value!r} {problem}. {fix}")
        self.name = name
