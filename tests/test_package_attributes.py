"""A plain ``import agentgym`` reaches its subpackages as attributes (issue 26, point 10).

The README writes ``agentgym.wrappers.Record(...)`` after ``import agentgym``; the
subpackages load on first use, so ``import agentgym`` itself stays light.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import agentgym


def _fresh(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_readme_record_line_works_after_a_plain_import(tmp_path):
    path = tmp_path / "run.agtr"
    done = _fresh(
        "import sys, gymnasium as gym, agentgym\n"
        "assert 'agentgym.wrappers' not in sys.modules  # not imported until used\n"
        f"env = agentgym.wrappers.Record(gym.make('agentgym/Sokoban-Tiny-v0'), {str(path)!r})\n"
        "env.reset(seed=0)\n"
        "env.close()\n"
        "print(type(env).__name__)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Record" and path.stat().st_size > 0


@pytest.mark.parametrize(
    "name", ["wrappers", "testing", "trajectory", "pools", "algos", "rollout", "agents"]
)
def test_subpackages_are_attributes(name):
    assert getattr(agentgym, name).__name__ == f"agentgym.{name}"


@pytest.mark.parametrize(
    ("old", "new"), [("rl", "algos"), ("vector", "pools.local"), ("distributed", "pools.ray")]
)
def test_old_subpackage_names_are_attributes_too(old, new):
    """The names kept for existing code (tests/test_layout_old_names.py) reach the new ones."""
    assert getattr(agentgym, old).__name__ == f"agentgym.{new}"


def test_an_unknown_attribute_still_raises_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'wrapperz'"):
        agentgym.wrapperz  # noqa: B018
