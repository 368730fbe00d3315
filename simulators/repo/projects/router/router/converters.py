"""Converters turn a path segment into a value and back: ``<int:id>``, ``<slug:name>``..."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Converter:
    regex: str
    weight: int  # more specific converters weigh more when routes compete

    def to_python(self, text: str) -> Any:
        return text

    def to_url(self, value: Any) -> str:
        return str(value)


class IntConverter(Converter):
    def to_python(self, text: str) -> int:
        return int(text)

    def to_url(self, value: Any) -> str:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{value!r} is not a non-negative int")
        return str(value)


class FloatConverter(Converter):
    def to_python(self, text: str) -> float:
        return float(text)

    def to_url(self, value: Any) -> str:
        return repr(float(value))


class UUIDConverter(Converter):
    def to_python(self, text: str) -> uuid.UUID:
        return uuid.UUID(text)


class SlugConverter(Converter):
    def to_url(self, value: Any) -> str:
        text = str(value)
        if not text or not all(c.isalnum() or c in "-_" for c in text):
            raise ValueError(f"{text!r} is not a slug")
        return text


CONVERTERS: dict[str, Converter] = {
    "str": Converter(r"[^/]+", 1),
    "path": Converter(r".+", 0),
    "int": IntConverter(r"\d+", 4),
    "float": FloatConverter(r"\d+\.\d+", 3),
    "slug": SlugConverter(r"[A-Za-z0-9_-]+", 2),
    "uuid": UUIDConverter(
        r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", 5
    ),
}
