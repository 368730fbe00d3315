"""What replay does not take on trust from a file: env settings, time and work.

A trajectory file names the env and the constructor settings to rebuild it with, and anyone
can write one. ``{"min_moves": 100000}`` makes Sokoban's level generator run for hours, and
``catalog_size=3_000_000`` makes the web shop build a catalog of three million products, so
a replay of a three-frame file could hang. Settings that are each modest can also add up:
16x16 with 11 boxes and a shortest solution of 20 (each within ten times Sokoban-Tiny's)
takes seconds per reset where Tiny takes milliseconds. The guards:

* :func:`oversized_settings` compares each numeric setting of the file with the value the
  registered env uses (its registration, else its constructor's default). A setting's
  *growth* is its value over that reference (over ``(reference + SETTING_SLACK) /
  SETTING_FACTOR`` where that is larger, so small values have room); growths below 1 count
  as 1. A setting growing more than :data:`SETTING_FACTOR` times, or all of them together
  (their growths multiplied, :func:`settings_load`) more than that, is refused with the
  reason, unless the caller passes ``trust_settings=True``.
* :class:`ReplayBudget` is what the replay of one whole file may spend, all its episodes
  together: seconds (:data:`DEFAULT_TIME_LIMIT_S`) and work units
  (:data:`DEFAULT_WORK_LIMIT`). One reset or one step of an episode costs its settings'
  load (1 for the registered settings), so the work an episode needs is known before it
  starts; an episode that would overrun the work left, or that comes after the time is
  spent, is not started. While an episode runs, :func:`time_limit` stops it at the file's
  deadline: on the main thread a timer interrupts the env wherever it is; elsewhere (a
  thread) Python cannot interrupt it, so the deadline is checked between steps only, and
  the settings rule and the work budget are what keep a generator from running away.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import signal
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

SETTING_FACTOR = 10
"""A recorded numeric setting may be up to this many times the registered value (or
:data:`SETTING_SLACK` above it, whichever allows more), and all of them together, their
growths multiplied, at most this many times the registered env."""
SETTING_SLACK = 10
"""How far above a small registered value a setting may go (so small values have room)."""
DEFAULT_TIME_LIMIT_S = 600.0
"""Seconds the replay of one file may take by default, all its episodes together."""
DEFAULT_WORK_LIMIT = 1_000_000
"""Work units the replay of one file may spend by default: one unit is a reset or a step at
the registered settings (an episode at settings of load 5 costs 5 per reset and step)."""


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


def _finite(value: Any) -> bool:
    return not isinstance(value, float) or math.isfinite(value)  # ints of any size are


def _growth(value: float, reference: float) -> Fraction:
    """How many times the registered env's value ``value`` is (at least 1), exactly."""
    scale = max(Fraction(abs(reference)), Fraction(abs(reference) + SETTING_SLACK) / SETTING_FACTOR)
    return max(Fraction(1), Fraction(abs(value)) / scale)


def _times(growth: Fraction | float) -> str:
    """``3.2x``, ``1024x`` (a growth too large for a float reads ``>1e308x``)."""
    try:
        value = float(growth)
    except OverflowError:
        value = math.inf
    return f"{value:.4g}x" if math.isfinite(value) else ">1e308x"


def _judged(env_id: str, env_kwargs: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """The settings to judge, in the file's order: (name, value, registered value or None).

    Top-level numbers only (bools are not); an id whose registration cannot be read gives
    none (building it fails with its own message).
    """
    try:
        reference = _reference_settings(env_id)
    except Exception:
        return []
    return [
        (name, value, reference.get(name))
        for name, value in env_kwargs.items()
        if _is_number(value)
    ]


def settings_load(env_id: str, env_kwargs: Mapping[str, Any]) -> Fraction:
    """How many times the registered env the settings ask for: their growths multiplied.

    1 for the registered settings (or smaller ones). It is what each reset and each step of
    an episode costs in work units (:class:`ReplayBudget`). Settings without a registered
    value, and non-finite ones (which :func:`oversized_settings` refuses), weigh nothing.
    """
    load = Fraction(1)
    for _name, value, ref in _judged(env_id, env_kwargs):
        if ref is not None and _finite(value):
            load *= _growth(value, ref)
    return load


def oversized_settings(env_id: str, env_kwargs: Mapping[str, Any]) -> list[str]:
    """The recorded settings replay refuses by default, each as ``"name=value (why)"``.

    Only top-level numeric settings with a registered or default value to compare with are
    judged; a non-finite number is always refused. When no setting is too large alone but
    their growths multiplied (:func:`settings_load`) exceed :data:`SETTING_FACTOR`, one
    finding names every setting that grew. An id that is not registered gives no findings
    here (building it fails with its own message).
    """
    found: list[str] = []
    grown: list[str] = []
    load = Fraction(1)
    for name, value, ref in _judged(env_id, env_kwargs):
        if not _finite(value):
            found.append(f"{name}={value} (not a finite number)")
            continue
        if ref is None:
            continue
        cap = max(SETTING_FACTOR * abs(ref), abs(ref) + SETTING_SLACK)
        if abs(value) > cap:
            found.append(f"{name}={value} (the registered env uses {ref}; at most {cap:g})")
        growth = _growth(value, ref)
        if growth > 1:
            grown.append(f"{name}={value} ({_times(growth)})")
            load *= growth
    if not found and load > SETTING_FACTOR:
        found.append(
            f"{', '.join(grown)} together ask for {_times(load)} the registered env (each "
            f"value over the registered one, multiplied; at most {SETTING_FACTOR}x together)"
        )
    return found


def refusal_message(findings: list[str]) -> str:
    """Why an episode was not replayed, and how to replay it anyway."""
    return (
        "refused to replay: the file asks for env settings far beyond the registered env's: "
        + "; ".join(findings)
        + ". A recording can name settings that take hours to build; if you trust this "
        "file, replay it with --trust-settings (trust_settings=True), still under the "
        "file's time and work limits."
    )


def _units(value: float) -> str:
    """A work figure as the report prints it: ``4``, ``2.5``, ``1,000,000``."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.4g}"


@dataclass
class ReplayBudget:
    """What the replay of one file may spend, all its episodes together.

    ``time_s`` seconds from the budget's creation and ``work`` units (one unit: a reset or
    a step at the registered settings; an episode's settings weigh on each, see
    :func:`settings_load`). None or 0 for either: no limit. Work is counted, not timed, so
    the same file and limits stop at the same episode on any machine.
    """

    time_s: float | None = DEFAULT_TIME_LIMIT_S
    work: float | None = DEFAULT_WORK_LIMIT
    work_used: float = 0.0
    scope: str = "the whole file"
    """What the budget covers, as its messages name it."""
    started: float = field(default_factory=time.monotonic, repr=False)
    """When the file's replay began (``time.monotonic``)."""

    def time_left(self) -> float | None:
        """Seconds left for the file (None: no limit; 0 or less: spent)."""
        if self.time_s is None or self.time_s <= 0:
            return None
        return self.time_s - (time.monotonic() - self.started)

    def refusal(self, load: float, steps: int) -> str | None:
        """Why an episode of ``steps`` steps at settings of ``load`` may not start (None: it
        may). Its whole work (a reset and every step) must fit in what is left."""
        left = self.time_left()
        if left is not None and left <= 0:
            return (
                f"not replayed: the time limit of {self.time_s:g} s for {self.scope} is "
                "used up by the episodes before this one. Give more time with --time-limit "
                "SECONDS (time_limit_s=...), or 0 for no limit"
            )
        if self.work is None or self.work <= 0:
            return None
        need = load * (1 + steps)
        room = self.work - self.work_used
        if need <= room:
            return None
        return (
            f"not replayed: the work limit of {_units(self.work)} units for {self.scope} "
            f"would be exceeded (this episode needs {_units(need)}: 1 reset and {steps} "
            f"step{'' if steps == 1 else 's'} at {_times(load)} the registered env; "
            f"{_units(max(0.0, room))} left). Raise it with --work-limit UNITS "
            "(work_limit=...), or 0 for no limit"
        )

    def charge(self, units: float) -> None:
        """Count ``units`` of work as spent (a reset or a step about to run)."""
        self.work_used += units

    def summary(self) -> str:
        """``work used: 4 of 5 units`` (``work used: 4 units, no limit`` without a limit)."""
        limit = (
            f"of {_units(self.work)} units" if self.work and self.work > 0 else "units, no limit"
        )
        return f"work used: {_units(self.work_used)} {limit}"


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
