"""Tables: named columns and rows of typed values, loaded from CSV text."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from csvq.errors import QueryError


def infer(text: str) -> Any:
    """``""`` -> None, ``"12"`` -> 12, ``"1.5"`` -> 1.5, ``"true"``/``"false"`` -> bool,
    anything else stays text (surrounding spaces removed)."""
    text = text.strip()
    if text == "":
        return None
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


@dataclass
class Table:
    columns: list[str]
    rows: list[list[Any]]

    def index(self, column: str) -> int:
        """The position of ``column`` (case-insensitive)."""
        lowered = [c.lower() for c in self.columns]
        try:
            return lowered.index(column.lower())
        except ValueError:
            raise QueryError(f"unknown column {column!r}; columns are {self.columns}") from None

    def column(self, name: str) -> list[Any]:
        i = self.index(name)
        return [row[i] for row in self.rows]

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row)) for row in self.rows]

    def to_csv(self) -> str:
        """CSV text with a header; None is written as an empty field."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(self.columns)
        for row in self.rows:
            writer.writerow(["" if v is None else _text(v) for v in row])
        return out.getvalue()


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def load_csv(text: str, delimiter: str = ",") -> Table:
    """A table from CSV text whose first row is the header. Short rows are padded with None;
    long rows are an error."""
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise QueryError("empty CSV: no header row") from None
    if len(set(h.lower() for h in header)) != len(header):
        raise QueryError(f"duplicate column names in {header}")
    rows = []
    for number, raw in enumerate(reader, start=2):
        if not raw:
            continue
        if len(raw) > len(header):
            raise QueryError(f"row {number} has {len(raw)} fields, header has {len(header)}")
        values = [infer(v) for v in raw] + [None] * (len(header) - len(raw))
        rows.append(values)
    return Table(header, rows)


def from_records(columns: Sequence[str], records: Sequence[Sequence[Any]]) -> Table:
    return Table(list(columns), [list(r) for r in records])
