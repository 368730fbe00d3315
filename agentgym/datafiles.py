"""Reading a user's data files (question sets, corpora, task files): shared pieces.

Every reader of a benchmark's own file does the same few things before its format-specific
part: read the bytes once and take their SHA-256 (the digest an evaluation pins), split JSON
lines without stopping at a bad one (a bad line is reported by number, or skipped and
counted), and check a record's fields with a message that names the field. They live here
once so the readers agree on them.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from typing import Any

from agentgym.error import InvalidConfigError

_CHUNK = 1 << 22

BAD_LINE: Any = object()
"""What :func:`json_lines` yields for a line that is not JSON."""


class RecordMismatch(Exception):
    """A record that does not match a format; the message names the field."""


def file_sha256(path: str) -> str:
    """The SHA-256 of a file's bytes, read in chunks (for files too big to hold)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_with_digest(path: str | os.PathLike[str], option: str) -> tuple[str, bytes, str]:
    """``(absolute path, bytes, SHA-256)`` of a file named by the option ``option``.

    Raises:
        InvalidConfigError: the file cannot be read (the message names the option).
    """
    path = os.path.abspath(os.fspath(path))
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise InvalidConfigError(f"{option}={path!r}: cannot read it ({exc.strerror}).") from None
    return path, raw, hashlib.sha256(raw).hexdigest()


def json_lines(text: str) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each non-blank line; :data:`BAD_LINE` where not JSON."""
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except ValueError:
            yield number, BAD_LINE


def require(record: Any, name: str, kind: type | tuple[type, ...], what: str) -> Any:
    """``record[name]`` when ``record`` is an object holding a ``kind`` there (never a bool).

    Raises:
        RecordMismatch: naming what is wrong (not an object, no such field, wrong type).
    """
    if not isinstance(record, dict):
        raise RecordMismatch(f"is a JSON {type(record).__name__}, not an object")
    if name not in record:
        raise RecordMismatch(f"has no field {name!r}")
    value = record[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise RecordMismatch(f"field {name!r} is not {what}")
    return value
