"""Fault injection for the rollout engine's fault tests and soak.

* :class:`EnvAudit` and :class:`GuardedEnv` check the env contract from outside the engine:
  no step after an episode ended (before the next reset), never two calls on one env at
  once, and every env made is closed in the end. A :class:`EnvFaults` rule can make a step
  raise or hang.
* :class:`FaultyLLMServer` is :class:`tests.fake_llm_server.FakeLLMServer` with two more
  kinds of fault: a request refused with HTTP 400 (a prompt over the context length) and a
  stalled request (answered only after ``stall_s``, past the client's timeout).
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym

from tests.fake_llm_server import FakeLLMServer

CONTEXT_LENGTH_ERROR = (
    b'{"error": {"message": "This model\'s maximum context length is 32768 tokens. However, '
    b'you requested 40000 tokens.", "type": "BadRequestError", "code": 400}}'
)


class EnvAudit:
    """What the guarded envs saw, shared by all of them (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.violations: list[str] = []
        self.made = self.closed = self.steps = self.resets = 0

    def violation(self, what: str) -> None:
        with self.lock:
            self.violations.append(what)

    def count(self, name: str) -> None:
        with self.lock:
            setattr(self, name, getattr(self, name) + 1)


class EnvFaults:
    """Which steps fail and how: ``rule(seed, turn)`` -> ``"raise"``, ``"hang"`` or None.

    A hung step blocks until :attr:`release` is set (at most ``hang_s``); ``entered`` is
    set when the first one starts hanging. ``close_s`` makes closing a failed env slow, as
    a browser's teardown is.
    """

    def __init__(
        self,
        rule: Callable[[int | None, int], str | None],
        *,
        hang_s: float = 60.0,
        close_s: float = 0.0,
    ):
        self.rule, self.hang_s, self.close_s = rule, hang_s, close_s
        self.release = threading.Event()
        self.entered = threading.Event()
        self.returned = threading.Event()
        """Set when a hung step stops hanging (released, or ``hang_s`` passed)."""
        self.raised = self.hung = 0
        self._lock = threading.Lock()

    def before_step(self, seed: int | None, turn: int) -> bool:
        """Apply the rule; True when this env has failed (its close is then slow)."""
        what = self.rule(seed, turn)
        if what == "raise":
            with self._lock:
                self.raised += 1
            raise RuntimeError(f"injected env crash (seed {seed}, turn {turn})")
        if what == "hang":
            with self._lock:
                self.hung += 1
            self.entered.set()
            self.release.wait(self.hang_s)
            self.returned.set()
            return True
        return False


class FailOnce:
    """An :class:`EnvFaults` rule: the first step of ``seed`` at ``turn`` fails with
    ``fault`` and no step after it; :attr:`fired` lists the seed once it has."""

    def __init__(self, seed: int, turn: int, fault: str):
        self.seed, self.turn, self.fault = seed, turn, fault
        self.fired: list[int] = []
        self._lock = threading.Lock()

    def __call__(self, seed: int | None, turn: int) -> str | None:
        if seed != self.seed or turn != self.turn:
            return None
        with self._lock:
            if self.fired:
                return None
            self.fired.append(seed)
        return self.fault


class RandomSteps:
    """A picklable :class:`EnvFaults` rule: each step raises with probability ``crash``
    and hangs with probability ``hang`` (its own generator, seeded with ``seed`` and the
    process it runs in: a worker that replaces a failed one must not replay its faults,
    or it would crash at the same step again and never reach a hang)."""

    def __init__(self, crash: float, hang: float, seed: int):
        self.crash, self.hang, self.seed = crash, hang, seed
        self._rng: random.Random | None = None

    def __call__(self, seed: int | None, turn: int) -> str | None:
        if self._rng is None:  # made where it runs (a worker process draws its own)
            self._rng = random.Random(f"{self.seed}:{os.getpid()}")
        draw = self._rng.random()
        if draw < self.crash:
            return "raise"
        return "hang" if draw < self.crash + self.hang else None


class ContractBreach(AssertionError):
    """Raised by a :class:`GuardedEnv` in a worker process, where the audit is out of the
    test's reach: the engine reports it as the episode's ``env_error`` cause."""


class GuardedEnv(gym.Wrapper):
    """An env that reports contract breaches to an :class:`EnvAudit` (see the module
    docstring) and fails when its :class:`EnvFaults` say so; with ``raise_breaches`` a
    breach also raises :class:`ContractBreach`."""

    def __init__(
        self,
        env: gym.Env,
        audit: EnvAudit,
        faults: EnvFaults | None = None,
        *,
        raise_breaches: bool = False,
    ):
        super().__init__(env)
        self.audit, self.faults, self.raise_breaches = audit, faults, raise_breaches
        self.seed_now: int | None = None
        self.turn = 0
        self.ended = True  # no step before the first reset
        self.failed = False
        self._busy = False
        self._closed = False
        audit.count("made")

    def _breach(self, what: str) -> None:
        self.audit.violation(what)
        if self.raise_breaches:
            raise ContractBreach(f"contract breach: {what}")

    @contextlib.contextmanager
    def _call(self, what: str) -> Iterator[None]:
        with self.audit.lock:
            busy, self._busy = self._busy, True
        try:
            if busy:
                self._breach(f"two calls at once on one env ({what})")
            yield
        finally:
            self._busy = False

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        with self._call("reset"):
            out = self.env.reset(seed=seed, options=options)
            self.seed_now, self.turn, self.ended = seed, 0, False
            self.audit.count("resets")
            return out

    def step(self, action: Any) -> Any:
        with self._call("step"):
            if self.ended:
                self._breach(f"step after termination (seed {self.seed_now})")
            self.turn += 1
            if self.faults is not None:
                try:
                    self.failed |= self.faults.before_step(self.seed_now, self.turn)
                except RuntimeError:
                    self.failed = True
                    raise
            obs, reward, terminated, truncated, info = self.env.step(action)
            self.ended = bool(terminated or truncated)
            self.audit.count("steps")
            return obs, reward, terminated, truncated, info

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.failed and self.faults is not None and self.faults.close_s:
            time.sleep(self.faults.close_s)  # a slow teardown (a browser), not a wait
        self.env.close()
        self.audit.count("closed")


def make_guarded(env_id: str, crash: float, hang: float, hang_s: float, seed: int) -> gym.Env:
    """A guarded env with random step faults, for a worker process (picklable by
    ``functools.partial``); breaches raise, as its audit stays in the worker."""
    faults = EnvFaults(RandomSteps(crash, hang, seed), hang_s=hang_s)
    return GuardedEnv(gym.make(env_id), EnvAudit(), faults, raise_breaches=True)


class FaultyLLMServer(FakeLLMServer):
    """:class:`FakeLLMServer` that can also refuse (HTTP 400) or stall a request.

    Args:
        refuse: request body -> True to answer HTTP 400 with a context-length error.
        stall: request body -> True to hold the request ``stall_s`` seconds before
            answering it normally (the client has given up by then).
        stall_s: how long a stalled request is held.
        **kwargs: :class:`FakeLLMServer`'s (``latency``, ``fault``: 500 and dropped
            connections).
    """

    def __init__(
        self,
        *,
        refuse: Callable[[dict[str, Any]], bool] | None = None,
        stall: Callable[[dict[str, Any]], bool] | None = None,
        stall_s: float = 2.0,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.refuse, self.stall, self.stall_s = refuse, stall, stall_s
        self.refused = self.stalled = 0
        self.unstall = threading.Event()

    def _answer(self, body: dict[str, Any]) -> tuple[int, bytes | None]:
        if self.refuse is not None and self.refuse(body):
            with self._lock:
                self.refused += 1
            return 400, CONTEXT_LENGTH_ERROR
        if self.stall is not None and self.stall(body):
            with self._lock:
                self.stalled += 1
            self.unstall.wait(self.stall_s)  # held past the client's timeout
        return super()._answer(body)


def make_counted(env_id: str, makes: str, fail: tuple[int, int]) -> gym.Env:
    """A plain env whose making is counted across processes in the directory ``makes``
    (the n-th make creates ``make-n``); makes ``fail[0]`` to ``fail[1] - 1`` raise instead,
    as a worker killed or crashed while starting does. Picklable by ``functools.partial``."""
    n = 0
    while True:
        try:
            os.close(os.open(os.path.join(makes, f"make-{n}"), os.O_CREAT | os.O_EXCL))
            break
        except FileExistsError:
            n += 1
    if fail[0] <= n < fail[1]:
        raise RuntimeError(f"injected failure of make {n}")
    return gym.make(env_id)


class _StuckReset(gym.Wrapper):
    """Its reset announces itself (the file ``entered``) and then never returns: only
    killing its process ends it, as a wedged env's does."""

    def __init__(self, env: gym.Env, entered: str):
        super().__init__(env)
        self.entered = entered

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> Any:
        os.close(os.open(self.entered, os.O_CREAT | os.O_EXCL))
        threading.Event().wait()  # until the process is killed
        raise AssertionError("unreachable")


def make_stuck_first(env_id: str, markers: str) -> gym.Env:
    """The first env made (across processes: the file ``made`` in ``markers``) gets a reset
    that never returns (:class:`_StuckReset`); every later one is plain. Picklable by
    ``functools.partial``, for a worker process."""
    try:
        os.close(os.open(os.path.join(markers, "made"), os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return gym.make(env_id)
    return _StuckReset(gym.make(env_id), os.path.join(markers, "entered"))
