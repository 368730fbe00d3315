"""Argument parsing shared by several CLI commands."""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from typing import Any

from agentgym.error import InvalidConfigError
from agentgym.registry import EnvRecord, single_agent_record


def json_object(text: str, flag: str = "--env-kwargs") -> dict[str, Any]:
    """Parse a flag's value as a JSON object, or raise a typed error that shows an example."""
    example = f"""Example: {flag} '{{"max_turns": 8}}'"""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InvalidConfigError(
            f"{flag} must be a JSON object, got {text!r} ({exc}). {example}"
        ) from exc
    if not isinstance(value, dict):
        raise InvalidConfigError(f"{flag} must be a JSON object, got {text!r}. {example}")
    return value


def progress_wanted(turned_off: bool = False) -> bool:
    """Whether to draw a progress bar: not when the user turned it off, and not when stderr is
    redirected to a file or pipe, where a bar's carriage returns would only clutter the log."""
    stream = sys.stderr
    return not turned_off and stream is not None and stream.isatty()


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0 (seeds), so ``--seed -5`` is a usage error, not numpy's."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(
            f"expected an integer >= 0, got {value} (seeds are non-negative; try {-value})"
        )
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (episode and env counts)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


#: Keyword arguments ``gym.make`` takes for itself rather than passing to the env class.
GYM_MAKE_KWARGS = frozenset(
    {"max_episode_steps", "autoreset", "apply_api_compatibility", "disable_env_checker"}
)


def check_env_args(env_id: str, env_kwargs: dict[str, Any], command: str) -> EnvRecord:
    """The record of a single-agent ``env_id`` whose class accepts every key of ``env_kwargs``.

    Raises a typed error before any env is built (in a worker thread or process, where the
    constructor's TypeError would surface as a long traceback): a multi-agent id points to
    ``agentgym.make_multi``, an unknown keyword lists the ones the env takes, an unknown
    ``split`` the env's splits.
    """
    record = single_agent_record(env_id, f"`agentgym {command}`")
    try:
        cls = record.load()
        params = inspect.signature(cls).parameters.values()
    except (ImportError, AttributeError, ValueError, TypeError):
        return record  # cannot inspect: let the env's own error speak
    splits = getattr(cls, "splits", None)
    split = env_kwargs.get("split")
    if isinstance(splits, tuple) and split is not None and split not in splits:
        raise InvalidConfigError(
            f"{record.id} has no split {split!r}; its splits are: {', '.join(splits)}."
        )
    option_names = getattr(cls, "option_names", None)  # AgentEnv's: its own and the base ones
    if callable(option_names):
        names = set(option_names())
    elif any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return record
    else:
        names = {p.name for p in params if p.name != "self"}
    unknown = sorted(set(env_kwargs) - names - GYM_MAKE_KWARGS)
    if unknown:
        accepted = ", ".join(sorted(names)) or "(none)"
        raise InvalidConfigError(
            f"--env-kwargs: {record.id} takes no keyword {', '.join(map(repr, unknown))}. "
            f"It accepts: {accepted}."
        )
    return record


def check_device(device: str) -> str:
    """``device`` if torch can use it here; else a typed error saying what is available."""
    if device == "cpu":
        return device
    if not device.startswith(("cuda", "mps")):
        raise InvalidConfigError(f"--device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}.")
    import torch

    if device.startswith("mps"):
        ok = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
    else:
        ok = torch.cuda.is_available()
        if ok and ":" in device:
            index = device.split(":", 1)[1]
            ok = index.isdigit() and int(index) < torch.cuda.device_count()
    if not ok:
        build = f"torch {torch.__version__}" + ("" if torch.version.cuda else ", a CPU-only build")
        raise InvalidConfigError(
            f"--device {device}: no such GPU is available here ({build}; "
            f"{torch.cuda.device_count()} CUDA devices). Use --device cpu, or install a CUDA "
            "build of torch on a machine with a GPU."
        )
    return device


def pin_data_files(
    env_id: str, env_kwargs: dict[str, Any], split: str | None = None
) -> dict[str, Any]:
    """``env_kwargs`` plus the digests of the data files they name (``questions_sha256=``...).

    Envs that read a user's files (``--env-kwargs '{"questions": "dev.json"}'``) say which
    keyword arguments pin those files (``data_digests()``). Every env of the run, and the
    recording, get them (``eval`` and ``run --record``): a file edited during the run, or a replay against another file,
    is refused instead of being scored as the same data.
    """
    import gymnasium as gym

    from agentgym.registry import get_record

    record = get_record(env_id)
    try:
        cls = record.load()
    except (ImportError, AttributeError):
        return env_kwargs
    if not callable(getattr(cls, "data_digests", None)):
        return env_kwargs
    env = gym.make(record.id, **({**env_kwargs, "split": split} if split else env_kwargs))
    try:
        digests = getattr(env.unwrapped, "data_digests")()  # noqa: B009
    finally:
        env.close()
    return {**env_kwargs, **digests}
