"""Fixtures of the user-env tests."""

from __future__ import annotations

import pytest
from users_helpers import SINGLE_IDS


@pytest.fixture(params=SINGLE_IDS)
def env_id(request: pytest.FixtureRequest) -> str:
    return request.param
