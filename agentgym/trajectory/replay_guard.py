"""What replay does not take on trust from a file: env settings and unbounded time.

A trajectory file names the env and the constructor settings to rebuild it with, and anyone
can write one. ``{"min_moves": 100000}`` makes Sokoban's level generator run for hours, and
``catalog_size=3_000_000`` makes the web shop build a catalog of three million products, so
a replay of a three-frame file could hang. Two guards:

* :func:`oversized_settings` compares each numeric setting of the file with the value the
  registered env uses (its registration, else its constructor's default). A setting more
  than :data:`SETTING_FACTOR` times that value (and more than :data:`SETTING_SLACK` above
  it) is refused, with the reason, unless the caller passes ``trust_settings=True``.
* :func:`time_limit` bounds one episode's replay (building the env, reset and every step).
  On the main thread a timer interrupts the env wherever it is; elsewhere (a thread) Python
  cannot interrupt it, so the limit is checked between steps only, and the setting caps
  are what keeps a generator from running away.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import signal
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

SETTING_FACTOR = 10
"""A recorded numeric setting may be up to this many times the registered value..."""
SETTING_SLACK = 10
"""...or this much above it, whichever allows more (so small values have room)."""
DEFAULT_TIME_LIMIT_S = 120.0
"""Seconds one episode's replay may take by default (env build, reset and all steps)."""


class ReplayTimeout(BaseException):
    """Raised inside the env when an episode's replay runs past its time limit.

    A ``BaseException``, so env code that catches ``Exception`` cannot swallow it.
    """


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _reference_settings(env_id: str) -> dict[str, Any]:
    """The numeric settings the registered env is built with, by name."""
    import gymnasium as gym

    from agentgym.registry import get_record

    spec = gym.spec(get_record(env_id).id)
    found: dict[str, Any] = {}
    creator: Any = spec.entry_point
    if isinstance(creator, str):
        creator = gym.envs.registration.load_env_creator(creator)
    for cls in inspect.getmro(creator) if inspect.isclass(creator) else (creator,):
        try:
            params = inspect.signature(cls.__init__ if inspect.isclass(cls) else cls).parameters
        except (TypeError, ValueError):
            continue
        for name, param in params.items():
            if _is_number(param.default):
                found.setdefault(name, param.default)
    found.update({k: v for k, v in (spec.kwargs or {}).items() if _is_number(v)})
    return found


def oversized_settings(env_id: str, env_kwargs: Mapping[str, Any]) -> list[str]:
    """The recorded settings replay refuses by default, each as ``"name=value (why)"``.

    Only top-level numeric settings with a registered or default value to compare with are
    judged; a non-finite number is always refused. An id that is not registered gives no
    findings here (building it fails with its own message).
    """
    try:
        reference = _reference_settings(env_id)
    except Exception:
        return []
    found = []
    for name, value in env_kwargs.items():
        if not _is_number(value):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            found.append(f"{name}={value} (not a finite number)")
            continue
        ref = reference.get(name)
        if ref is None:
            continue
        cap = max(SETTING_FACTOR * abs(ref), abs(ref) + SETTING_SLACK)
        if abs(value) > cap:
            found.append(f"{name}={value} (the registered env uses {ref}; at most {cap:g})")
    return found


def refusal_message(findings: list[str]) -> str:
    """Why an episode was not replayed, and how to replay it anyway."""
    return (
        "refused to replay: the file asks for env settings far beyond the registered env's: "
        + "; ".join(findings)
        + ". A recording can name settings that take hours to build; if you trust this "
        "file, replay it with --trust-settings (trust_settings=True), still under the "
        "time limit."
    )


@contextlib.contextmanager
def time_limit(seconds: float | None) -> Iterator[Any]:
    """Raise :class:`ReplayTimeout` in the block once ``seconds`` have passed.

    Yields a ``check()`` callable for the points where the block can stop by itself (it
    raises when the time is up). On the main thread a ``SIGALRM`` timer also interrupts
    long calls; a timer already running (e.g. pytest-timeout's) is put back afterwards.
    """
    if not seconds or seconds <= 0:
        yield lambda: None
        return
    deadline = time.monotonic() + seconds

    def check() -> None:
        if time.monotonic() > deadline:
            raise ReplayTimeout

    use_timer = (
        hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    )
    outer_left = outer_interval = 0.0
    if use_timer:
        outer_left, outer_interval = signal.getitimer(signal.ITIMER_REAL)
        use_timer = not outer_left or outer_left > seconds  # an earlier outer alarm wins
    if not use_timer:
        yield check
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise ReplayTimeout

    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield check
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_left:
            left = max(outer_left - (time.monotonic() - started), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, left, outer_interval)
