"""Shared parametrization for the integration tests.

A test that takes a ``single_agent_id`` argument runs once per registered single-agent id;
ids that drive a real Chromium are marked ``browser`` and ``slow``.
"""

from __future__ import annotations

from typing import Any

import pytest

import agentgym


def _needs_chromium(record: Any) -> bool:
    return record.family == "web" and record.kwargs.get("mode") != "text"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "single_agent_id" in metafunc.fixturenames:
        metafunc.parametrize(
            "single_agent_id",
            [
                pytest.param(
                    r.id,
                    id=r.id,
                    marks=[pytest.mark.browser, pytest.mark.slow] if _needs_chromium(r) else [],
                )
                for r in agentgym.list_envs(multi_agent=False)
            ],
        )
