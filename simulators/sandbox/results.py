"""What one sandbox run or session cell did: :class:`ExecResult`.

Its own module because both the pool (one-shot runs) and a session (cells) return it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_TRUNC = "\n[... {n} more bytes of {stream} dropped]"


@dataclass(frozen=True)
class ExecResult:
    """What one run or one session cell did, learnt out of band (never from its output).

    ``status`` is ``"ok"`` (exit 0), ``"error"`` (nonzero exit or an exception),
    ``"timeout"``, ``"killed"`` (a signal, e.g. the memory limit), ``"output_limit"`` (far
    more output than kept), ``"dead"`` (the session is gone) or ``"crashed"`` (the worker died
    and was restarted).
    """

    status: str
    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    signal: int | None = None
    duration: float = 0.0
    stdout_dropped: int = 0
    stderr_dropped: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def truncated(self) -> bool:
        return bool(self.stdout_dropped or self.stderr_dropped)

    def text(self) -> str:
        """stdout, then stderr, with truncation notes: what an observation shows."""
        out = self.stdout
        if self.stdout_dropped:
            out += _TRUNC.format(n=self.stdout_dropped, stream="stdout")
        err = self.stderr
        if self.stderr_dropped:
            err += _TRUNC.format(n=self.stderr_dropped, stream="stderr")
        return out + (("\n" if out and not out.endswith("\n") else "") + err if err else "")

    @classmethod
    def from_reply(cls, reply: Mapping[str, Any]) -> ExecResult:
        return cls(
            status=str(reply.get("status", "crashed")),
            stdout=str(reply.get("stdout", "")),
            stderr=str(reply.get("stderr", "")),
            exit_code=reply.get("exit_code"),
            signal=reply.get("signal"),
            duration=float(reply.get("duration", 0.0)),
            stdout_dropped=int(reply.get("stdout_dropped", 0)),
            stderr_dropped=int(reply.get("stderr_dropped", 0)),
        )
