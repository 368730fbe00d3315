"""The template tree the parser builds and the renderer walks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Text:
    text: str


@dataclass
class Output:
    expr: Any
    line: int


@dataclass
class If:
    #: (condition, body) pairs for ``if`` and each ``elif``, in order.
    branches: list[tuple[Any, list[Any]]]
    otherwise: list[Any] = field(default_factory=list)


@dataclass
class For:
    target: str
    iterable: Any
    body: list[Any]
    otherwise: list[Any] = field(default_factory=list)
    line: int = 0


@dataclass
class Set:
    name: str
    expr: Any
