"""RepoFix tests share the process-wide sandbox pool (skipped where it cannot isolate)."""

from __future__ import annotations

import pytest
from agentgym.simulators.sandbox import SandboxPool, SandboxUnavailableError, default_pool

#: The SWE-bench-format fixture repositories hold test files of their own: data, not tests.
collect_ignore_glob = ["data/*"]


@pytest.fixture(scope="session")
def pool() -> SandboxPool:
    try:
        return default_pool()
    except SandboxUnavailableError as exc:  # pragma: no cover - only off CI hosts
        pytest.skip(f"the sandbox cannot isolate code here: {exc}")
