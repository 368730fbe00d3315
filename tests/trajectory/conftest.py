"""Fixtures for the trajectory tests (helpers live in trajectory_helpers.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest

import agentgym
from agentgym.registry import _RECORDS

# The test modules import ``trajectory_helpers`` from this folder whatever pytest's import mode.
sys.path.insert(0, str(Path(__file__).parent))

from trajectory_helpers import ECHO_ID, PIXEL_ID, EchoEnv, PixelEnv, record_sokoban


@pytest.fixture
def pixel_env_id() -> Iterator[str]:
    """Registers the pixel env for one test, then removes it again."""
    agentgym.register(
        PIXEL_ID, f"{PixelEnv.__module__}:PixelEnv", family="tests", modality="vision"
    )
    try:
        yield PIXEL_ID
    finally:
        _RECORDS.pop(PIXEL_ID, None)
        if PIXEL_ID in gym.registry:
            del gym.registry[PIXEL_ID]


@pytest.fixture
def echo_env_id() -> Iterator[str]:
    """Registers the echo env (it echoes lone surrogates) for one test, then removes it."""
    agentgym.register(ECHO_ID, f"{EchoEnv.__module__}:EchoEnv", family="tests", modality="text")
    try:
        yield ECHO_ID
    finally:
        _RECORDS.pop(ECHO_ID, None)
        if ECHO_ID in gym.registry:
            del gym.registry[ECHO_ID]


@pytest.fixture
def sokoban_file(tmp_path: Path) -> Path:
    return record_sokoban(tmp_path / "sokoban.agtr")
