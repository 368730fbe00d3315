"""The examples in the trajectory modules' docstrings run and hold."""

from __future__ import annotations

import doctest
import importlib
import os
import tempfile

import pytest

MODULES = ["agentgym.trajectory.recorder", "agentgym.wrappers.record"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str, tmp_path, tmp_path_factory, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    scratch = tmp_path_factory.mktemp("scratch")
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # pytest removes it, not /tmp
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
    assert os.listdir(tmp_path) == []  # the examples write to their own temp dirs
    assert os.listdir(scratch) != []
