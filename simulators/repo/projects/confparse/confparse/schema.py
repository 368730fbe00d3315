"""Schemas: which keys a section has, their types, defaults and allowed values."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from confparse.document import Config
from confparse.errors import ConfigError, SchemaError
from confparse.types import CONVERTERS

_REQUIRED = object()


@dataclass(frozen=True)
class Field:
    """A key: its type (``str``, ``int``, ``float``, ``bool``, ``list``, ``size``), a
    default (no default: required), allowed choices, and inclusive numeric bounds."""

    type: str = "str"
    default: Any = _REQUIRED
    choices: Sequence[Any] = ()
    minimum: float | None = None
    maximum: float | None = None

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED


@dataclass
class Schema:
    """``Schema({"server": {"port": Field("int", 8080)}})``."""

    sections: dict[str, dict[str, Field]]
    allow_unknown: bool = False
    problems: list[str] = field(default_factory=list, init=False)

    def validate(self, config: Config) -> dict[str, dict[str, Any]]:
        """Typed values for every section and key of the schema.

        Raises:
            SchemaError: listing every missing key, bad value and (unless
                ``allow_unknown``) unknown key.
        """
        self.problems = []
        result: dict[str, dict[str, Any]] = {}
        for section, fields in self.sections.items():
            result[section] = {}
            for key, spec in fields.items():
                value = self._value(config, section, key, spec)
                if value is not _REQUIRED:
                    result[section][key] = value
            if not self.allow_unknown and config.has_section(section):
                for key in config.keys(section):
                    if key not in fields and config.has_own(section, key):
                        self.problems.append(f"[{section}] {key}: unknown key")
        if self.problems:
            raise SchemaError(self.problems)
        return result

    def _value(self, config: Config, section: str, key: str, spec: Field) -> Any:
        raw = config.get(section, key, None) if config.has_section(section) else None
        if raw is None:
            if spec.required:
                self.problems.append(f"[{section}] {key}: required")
                return _REQUIRED
            return spec.default
        try:
            value = CONVERTERS[spec.type](raw)
        except (ValueError, ConfigError) as exc:
            self.problems.append(f"[{section}] {key}: {exc}")
            return _REQUIRED
        if spec.choices and value not in spec.choices:
            self.problems.append(f"[{section}] {key}: {value!r} not one of {list(spec.choices)}")
        if spec.minimum is not None and value < spec.minimum:
            self.problems.append(f"[{section}] {key}: {value} is below {spec.minimum}")
        if spec.maximum is not None and value > spec.maximum:
            self.problems.append(f"[{section}] {key}: {value} is above {spec.maximum}")
        return value
