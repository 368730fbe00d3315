"""The examples in the search modules' docstrings run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "agentgym.simulators.search.names",
    "agentgym.simulators.search.encyclopedia",
    "agentgym.envs.search.metrics",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
