"""The env registry: ids, families and discovery.

``import agentgym`` imports each family package under :mod:`agentgym.envs` (a family's
``__init__`` only calls :func:`register` with string entry points, so heavy dependencies load
when an env is made, not when agentgym is imported) and then every third-party package that
declares an ``agentgym.envs`` entry point.

Single-agent envs go into Gymnasium's registry as well, so ``gym.make("agentgym/<id>")`` and
``gym.make("agentgym:agentgym/<id>")`` work. Multi-agent (PettingZoo) envs are built with
:func:`make_multi`.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import os
import pkgutil
import sys
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from agentgym.error import InvalidConfigError, MultiAgentEnvError, UnknownEnvError

logger = logging.getLogger(__name__)

NAMESPACE = "agentgym"
ENTRY_POINT_GROUP = "agentgym.envs"


@dataclass(frozen=True)
class EnvRecord:
    """What the registry knows of one id."""

    id: str
    family: str
    entry_point: str
    multi_agent: bool = False
    modality: str = "text"
    description: str = ""
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    max_episode_steps: int | None = None

    def load(self) -> type:
        """Import and return the env class."""
        module, _, name = self.entry_point.partition(":")
        return getattr(importlib.import_module(module), name)


_RECORDS: dict[str, EnvRecord] = {}


def register(
    id: str,
    entry_point: str,
    *,
    family: str,
    kwargs: Mapping[str, Any] | None = None,
    multi_agent: bool = False,
    modality: str = "text",
    description: str = "",
    max_episode_steps: int | None = None,
) -> None:
    """Register an env id (``"agentgym/Name-vN"`` or a third party's own namespace).

    Args:
        id: The full id, namespace included.
        entry_point: ``"package.module:ClassName"``; imported only when the env is made.
        family: ``"code"``, ``"web"``, ``"users"``, ``"visual"``, ``"games"``...
        kwargs: Constructor keyword arguments this id fixes (sizes, difficulty).
        multi_agent: True for PettingZoo ``ParallelEnv`` classes (built by :func:`make_multi`).
        modality: ``"text"`` or ``"vision"`` (observations carry images).
        description: One line for ``agentgym list``.
        max_episode_steps: Passed to Gymnasium's registry (a ``TimeLimit`` wrapper).
    """
    record = EnvRecord(
        id=id,
        family=family,
        entry_point=entry_point,
        multi_agent=multi_agent,
        modality=modality,
        description=description,
        kwargs=dict(kwargs or {}),
        max_episode_steps=max_episode_steps,
    )
    _RECORDS[id] = record
    if id in gym.registry:
        del gym.registry[id]  # re-registration (e.g. a reloaded module) replaces quietly
    if multi_agent:
        # Listed so that gym.make names the right constructor instead of "doesn't exist".
        gym.register(
            id=id, entry_point=f"{__name__}:refuse_multi_agent", kwargs={"agentgym_id": id}
        )
        return
    gym.register(
        id=id,
        entry_point=entry_point,
        kwargs=dict(kwargs or {}),
        max_episode_steps=max_episode_steps,
    )


def refuse_multi_agent(agentgym_id: str, **_: Any) -> Any:
    """Gymnasium's entry point for a multi-agent id: raise a :class:`MultiAgentEnvError`.

    >>> import gymnasium as gym
    >>> gym.make("agentgym/Negotiation-v0")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agentgym.error.MultiAgentEnvError: 'agentgym/Negotiation-v0' is a multi-agent env ...
    """
    raise MultiAgentEnvError(agentgym_id)


def single_agent_record(env_id: str, where: str) -> EnvRecord:
    """The record of a single-agent id; a multi-agent one raises a pointer to make_multi."""
    record = get_record(env_id)
    if record.multi_agent:
        raise MultiAgentEnvError(record.id, where)
    return record


def list_envs(family: str | None = None, *, multi_agent: bool | None = None) -> list[EnvRecord]:
    """Every registered id, sorted, optionally filtered by family or by multi-agent-ness."""
    records = sorted(_RECORDS.values(), key=lambda r: (r.family, r.id))
    if family is not None:
        records = [r for r in records if r.family == family]
    if multi_agent is not None:
        records = [r for r in records if r.multi_agent == multi_agent]
    return records


def get_record(env_id: str) -> EnvRecord:
    """The record of ``env_id``; ``agentgym:`` module prefixes and short ids are accepted."""
    key = resolve_id(env_id)
    return _RECORDS[key]


def _import_id_module(module: str) -> None:
    """Import the ``module`` of a ``"module:Env-vN"`` id, as ``gym.make`` does.

    Command-line tools do not have the working directory on ``sys.path``; a user's own env
    module sitting there (``agentgym check my_envs:mylab/Thing-v0``) is found all the same.
    """
    top = module.split(".")[0]
    while True:
        try:
            importlib.import_module(module)
            return
        except ModuleNotFoundError as exc:
            if exc.name != top:
                raise  # the module exists but something it imports is missing: show that
            if os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())
                continue
            raise InvalidConfigError(
                f"The env id names the module {module!r}, which is not importable from here "
                f"(working directory {os.getcwd()!r}). Run from the folder that holds it, put "
                "it on PYTHONPATH, or pip install its package."
            ) from exc


def resolve_id(env_id: str) -> str:
    """Normalise ``"agentgym:agentgym/X-v0"`` or ``"X-v0"`` to the registered id.

    A ``"module:"`` prefix is imported first, so envs registered by a user's own module are
    found (``"my_envs:mylab/Thing-v0"``).
    """
    module, _, key = env_id.rpartition(":")
    if module and module != "agentgym" and key not in _RECORDS:
        _import_id_module(module)
    if key in _RECORDS:
        return key
    if f"{NAMESPACE}/{key}" in _RECORDS:
        return f"{NAMESPACE}/{key}"
    raise UnknownEnvError(env_id, _RECORDS)


def make(env_id: str, **kwargs: Any) -> Any:
    """Build any registered env: ``gym.make`` for single-agent ids, else :func:`make_multi`."""
    record = get_record(env_id)
    if record.multi_agent:
        return make_multi(record.id, **kwargs)
    return gym.make(record.id, **kwargs)


def make_multi(env_id: str, **kwargs: Any) -> Any:
    """Build a registered multi-agent env (a PettingZoo ``ParallelEnv``)."""
    record = get_record(env_id)
    if not record.multi_agent:
        raise UnknownEnvError(
            f"{env_id} (a single-agent env: build it with gym.make)",
            [r.id for r in list_envs(multi_agent=True)],
        )
    cls = record.load()
    return cls(**{**record.kwargs, **kwargs})


def discover() -> None:
    """Import every family package of agentgym and every third-party entry point."""
    envs_pkg = importlib.import_module("agentgym.envs")  # late: families import this module

    for module in pkgutil.iter_modules(envs_pkg.__path__):
        if not module.ispkg:
            continue
        name = f"{envs_pkg.__name__}.{module.name}"
        try:
            importlib.import_module(name)
        except Exception as exc:  # one broken family must not hide the others
            warnings.warn(f"agentgym: could not load env family {name}: {exc!r}", stacklevel=2)
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            hook: Callable[[], None] | Any = ep.load()
            if callable(hook):
                hook()
        except Exception as exc:
            warnings.warn(f"agentgym: entry point {ep.name!r} failed: {exc!r}", stacklevel=2)
