"""``Config``: sections of raw values, with inheritance from ``DEFAULT`` and typed access."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from confparse import types
from confparse.errors import ConfigError
from confparse.interpolate import interpolate

DEFAULT = "DEFAULT"
_MISSING = object()


class Config:
    """Raw string values by section and key; reads interpolate ``${...}`` references."""

    def __init__(self) -> None:
        self._data: dict[str, dict[str, str]] = {DEFAULT: {}}
        self._lines: dict[tuple[str, str], int] = {}

    # ---- building -------------------------------------------------------------------
    def add_section(self, name: str) -> None:
        self._data.setdefault(name, {})

    def set(self, section: str, key: str, value: str, line: int = 0) -> None:
        self.add_section(section)
        self._data[section][key.lower()] = value
        if line:
            self._lines[(section, key.lower())] = line

    def remove(self, section: str, key: str) -> bool:
        """Remove a key from a section; True when it was there."""
        return self._data.get(section, {}).pop(key.lower(), None) is not None

    # ---- reading --------------------------------------------------------------------
    def sections(self) -> list[str]:
        """Section names in the order they first appeared (``DEFAULT`` left out)."""
        return [name for name in self._data if name != DEFAULT]

    def has_section(self, name: str) -> bool:
        return name in self._data and name != DEFAULT

    def has_own(self, section: str, key: str) -> bool:
        return key.lower() in self._data.get(section, {})

    def keys(self, section: str) -> list[str]:
        """The section's keys, then the inherited ``DEFAULT`` keys it does not override."""
        if section not in self._data:
            raise ConfigError(f"no section [{section}]")
        own = list(self._data[section])
        inherited = [k for k in self._data[DEFAULT] if k not in self._data[section]]
        return own + inherited

    def raw(self, section: str, key: str, fallback: Any = _MISSING) -> Any:
        """The value as written (no interpolation), looking in ``DEFAULT`` second."""
        key = key.lower()
        for name in (section, DEFAULT):
            values = self._data.get(name, {})
            if key in values:
                return values[key]
        if fallback is not _MISSING:
            return fallback
        if section not in self._data:
            raise ConfigError(f"no section [{section}]")
        raise ConfigError(f"no key {key!r} in [{section}]")

    def line_of(self, section: str, key: str) -> int | None:
        return self._lines.get((section, key.lower()))

    def get(self, section: str, key: str, fallback: Any = _MISSING) -> Any:
        """The value with ``${key}`` and ``${section.key}`` references filled in."""
        value = self.raw(section, key, fallback)
        if value is fallback and fallback is not _MISSING:
            return fallback
        return interpolate(value, section, self.raw)

    def _typed(self, convert: Callable[[str], Any], section: str, key: str, fallback: Any) -> Any:
        value = self.get(section, key, _MISSING if fallback is _MISSING else None)
        if value is None and fallback is not _MISSING:
            return fallback
        try:
            return convert(value)
        except ValueError as exc:
            raise ConfigError(f"[{section}] {key}: {exc}") from None

    def get_int(self, section: str, key: str, fallback: Any = _MISSING) -> int:
        return self._typed(types.to_int, section, key, fallback)

    def get_float(self, section: str, key: str, fallback: Any = _MISSING) -> float:
        return self._typed(float, section, key, fallback)

    def get_bool(self, section: str, key: str, fallback: Any = _MISSING) -> bool:
        return self._typed(types.to_bool, section, key, fallback)

    def get_list(self, section: str, key: str, fallback: Any = _MISSING) -> list[str]:
        return self._typed(types.to_list, section, key, fallback)

    def get_size(self, section: str, key: str, fallback: Any = _MISSING) -> int:
        return self._typed(types.to_size, section, key, fallback)

    def section_dict(self, section: str) -> dict[str, str]:
        """Every key of a section (inherited ones too), interpolated."""
        return {key: self.get(section, key) for key in self.keys(section)}

    def copy(self) -> Config:
        other = Config()
        other._data = {name: dict(values) for name, values in self._data.items()}
        other._lines = dict(self._lines)
        return other
