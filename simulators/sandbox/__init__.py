"""A jailed Python runtime for untrusted code: one-shot runs, stateful sessions, grading.

See docs/sandbox.md. The pieces:

* :class:`SandboxPool` — jailed workers; ``run``/``submit``/``arun``/``run_many``.
* :class:`Session` — variables persist across cells; ``fork()`` for tree search.
* :func:`grade` — unit tests judged outside the jail.
* :func:`detect_layers` — which isolation layers this host gives (``agentgym doctor``).
"""

from agentgym.simulators.sandbox.grading import GradeReport, TestCase, grade, values_equal
from agentgym.simulators.sandbox.layers import (
    SandboxUnavailableError,
    active_layers,
    detect_layers,
)
from agentgym.simulators.sandbox.pool import ExecResult, SandboxPool, default_pool
from agentgym.simulators.sandbox.session import SandboxFullError, Session
from agentgym.simulators.sandbox.worker import Limits, SandboxConfig, WorkerCrashedError

__all__ = [
    "ExecResult",
    "GradeReport",
    "Limits",
    "SandboxConfig",
    "SandboxFullError",
    "SandboxPool",
    "SandboxUnavailableError",
    "Session",
    "TestCase",
    "WorkerCrashedError",
    "active_layers",
    "default_pool",
    "detect_layers",
    "grade",
    "values_equal",
]
