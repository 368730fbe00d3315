"""The examples in the visual modules' docstrings run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "agentgym.simulators.visual",
    "agentgym.simulators.visual.calc",
    "agentgym.simulators.visual.text",
    "agentgym.envs.visual.grading",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
