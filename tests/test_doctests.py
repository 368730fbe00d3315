"""The examples in the core modules' docstrings run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["agentgym.spaces", "agentgym.parsing", "agentgym.tasks", "agentgym.pools.local"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
