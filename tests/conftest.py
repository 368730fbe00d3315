"""Shared pytest set-up: every test sees a fresh registry import and a tiny fake env."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import agentgym  # noqa: F401  (registers every env before collection)
from tests.fake_openai import FakeOpenAI


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A fake OpenAI-compatible server on 127.0.0.1 (see ``tests/fake_openai.py``)."""
    with FakeOpenAI(delay_s=0.02) as server:
        yield server
