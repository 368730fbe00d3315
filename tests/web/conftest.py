"""Shared fixtures: one Chromium for the whole test session (browser tests only)."""

from __future__ import annotations

import os

import pytest


def _chromium_available() -> bool:
    try:
        from agentgym.simulators.browser.runtime import find_chromium

        find_chromium()
        import playwright  # noqa: F401
    except Exception:
        return False
    return True


@pytest.fixture(scope="session")
def runtime():
    """The process-wide browser runtime, closed when the session ends."""
    if not _chromium_available():
        if os.environ.get("CI"):
            pytest.fail("Chromium/playwright missing in CI: apt-get install chromium")
        pytest.skip("Chromium or playwright is not installed")
    from agentgym.simulators.browser.runtime import get_runtime, shutdown_runtime

    rt = get_runtime()
    yield rt
    shutdown_runtime()
