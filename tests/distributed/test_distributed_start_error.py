"""RayEnvPool's start-up error names the deadline in force and the argument that set it.

Issue 18, point 8: with ``start_timeout_s=90`` and the default ``timeout_s=120`` the pool
waited 120 s (start-up never gets less time than a step) and then said "no answer within
120 s", a number the user never passed. No real Ray here: a stand-in whose actors never
answer, and sub-second deadlines, so the test takes well under a second.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pytest

from agentgym import distributed
from agentgym.pools.ray import RayEnvPool, RemoteEnvError, start_deadline


class _Method:
    def remote(self, *args: Any) -> object:
        return object()  # a ref that never resolves


class _Actor:
    pid = _Method()
    close = _Method()


class _ActorClass:
    def options(self, **kwargs: Any) -> _ActorClass:
        return self

    def remote(self, group: Any) -> _Actor:
        return _Actor()


class _SilentRay:
    """Just enough of the ``ray`` module for RayEnvPool: actors that never answer."""

    def remote(self, cls: type) -> _ActorClass:
        return _ActorClass()

    def wait(
        self, pending: Sequence[object], num_returns: int, timeout: float
    ) -> tuple[list[object], list[object]]:
        time.sleep(timeout)  # nothing is ever ready
        return [], list(pending)

    def kill(self, actor: object, no_restart: bool = True) -> None:
        pass


def _silent_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(distributed, "ensure_ray", lambda *a, **k: _SilentRay())


def test_start_deadline_names_the_argument_in_force() -> None:
    assert start_deadline(300, 120) == (300.0, "start_timeout_s=300")
    seconds, words = start_deadline(90, 120)
    assert seconds == 120.0
    assert "timeout_s=120" in words and "start_timeout_s=90" in words and "raised" in words


def test_start_error_names_the_raised_deadline_and_both_arguments(monkeypatch) -> None:
    _silent_ray(monkeypatch)
    t0 = time.monotonic()
    with pytest.raises(RemoteEnvError) as err:
        RayEnvPool([lambda: None], timeout_s=0.3, start_timeout_s=0.1)
    message = str(err.value)
    assert "no answer within 0.3 s" in message  # the deadline actually waited
    assert "timeout_s=0.3" in message and "start_timeout_s=0.1" in message, message
    assert time.monotonic() - t0 < 5


def test_start_error_names_start_timeout_when_it_is_the_larger(monkeypatch) -> None:
    _silent_ray(monkeypatch)
    with pytest.raises(RemoteEnvError, match=r"no answer within 0.2 s \(start_timeout_s=0.2\)"):
        RayEnvPool([lambda: None], timeout_s=0.1, start_timeout_s=0.2)
