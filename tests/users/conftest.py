"""Fixtures of the user-env tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The test modules import ``users_helpers`` from this folder whatever pytest's import mode.
sys.path.insert(0, str(Path(__file__).parent))

from users_helpers import SINGLE_IDS


@pytest.fixture(params=SINGLE_IDS)
def env_id(request: pytest.FixtureRequest) -> str:
    return request.param
