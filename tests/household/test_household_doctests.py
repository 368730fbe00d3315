"""The examples in the household modules' docstrings run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "agentgym.simulators.household.world",
    "agentgym.simulators.household.goals",
    "agentgym.simulators.household.generate",
    "agentgym.simulators.household.planner",
    "agentgym.envs.household.tasks",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
