"""Shared pytest set-up: every test sees a fresh registry import and a tiny fake env."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

import agentgym  # noqa: F401  (registers every env before collection)
from tests.fake_openai import FakeOpenAI

# A run started in the background by a non-interactive shell (a CI script's `cmd &`, nohup)
# has SIGINT ignored, and every child inherits that: the tests that press Ctrl-C on a child
# process (eval, train, pools, browsers) would then wait on a child that never hears it.
# Take Ctrl-C as a foreground run does; a Python handler is reset to the default in children.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A fake OpenAI-compatible server on 127.0.0.1 (see ``tests/fake_openai.py``)."""
    with FakeOpenAI(delay_s=0.02) as server:
        yield server
