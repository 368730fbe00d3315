"""``${key}`` (same section, then DEFAULT) and ``${section.key}`` references; ``$$`` is a
literal dollar sign. References nest (a value may refer to a value with references) up to
``MAX_DEPTH`` levels; deeper means a cycle."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from confparse.errors import ConfigError, InterpolationError

MAX_DEPTH = 10
_REF = re.compile(r"\$\$|\$\{([^}]*)\}")


def interpolate(value: str, section: str, lookup: Callable[..., Any], depth: int = 0) -> str:
    """``value`` with every reference replaced; ``lookup(section, key)`` reads raw values."""
    if depth > MAX_DEPTH:
        raise InterpolationError(f"references nested more than {MAX_DEPTH} deep (a cycle?)")

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        ref = match.group(1).strip()
        if not ref:
            raise InterpolationError("empty reference ${}")
        target_section, _, key = ref.rpartition(".")
        target_section = target_section or section
        try:
            raw = lookup(target_section, key)
        except ConfigError:
            raise InterpolationError(f"${{{ref}}} refers to a missing key") from None
        return interpolate(raw, target_section, lookup, depth + 1)

    return _REF.sub(replace, value)
