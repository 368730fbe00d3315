"""Argument parsing shared by several CLI commands."""

from __future__ import annotations

import json
from typing import Any

from agentgym.error import InvalidConfigError


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
