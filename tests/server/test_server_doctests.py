"""The examples in the server modules' docstrings run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize(
    "name",
    [
        "agentgym.server.scheduler",
        "agentgym.server.checks",
        "agentgym.server.ratelog",
        "agentgym.server.admission",
        "agentgym.server.runner",
        "agentgym.server.auth",
        "agentgym.integrations.mcp_transport",
    ],
)
def test_server_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
