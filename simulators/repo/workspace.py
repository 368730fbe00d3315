"""A repository in a sandbox session: the agent's tools, the digest, fork and the final files.

:class:`Workspace` owns one :class:`~agentgym.simulators.sandbox.Session` whose work
directory holds the project (committed to a fresh git repository when git is in the jail).
Each tool call is one session cell running a function of :mod:`.session_tools`; the shell's
directory is kept here on the host, relative to the project, so a forked workspace (a copy of
the directory at another path) carries it over. Absolute paths of the work directory never
reach the observation: they are shown as ``~`` (the shell's ``$HOME`` is the project root).
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agentgym.simulators.sandbox import ExecResult, Limits, SandboxPool, Session

_TOOLS_SOURCE = (Path(__file__).resolve().parent / "session_tools.py").read_text()
_MARK = "\x1e__AGENTGYM_REPO__"

#: Bytes of one command's output kept (head and tail); the rest is cut with a note.
OUTPUT_CAP = 16_000
#: Largest file, and total, a workspace hands to grading (bigger ones are left out).
DUMP_FILE_LIMIT = 1 << 20
DUMP_TOTAL_LIMIT = 4 << 20
#: Seconds a cell may take beyond a command's own time limit (digest, set-up).
CELL_MARGIN = 20.0


def _b64(text: str) -> str:
    """Any model text as base64 of UTF-8 (a lone surrogate becomes ``?``)."""
    return base64.b64encode(text.encode("utf-8", "replace")).decode()


def default_limits() -> Limits:
    """A session that can run pytest and git: more output room for the final dump."""
    return Limits(timeout=60.0, cpu_seconds=120, output=8 << 20)


@dataclass(frozen=True)
class ToolResult:
    """One tool call's outcome: observation text, whether it worked, the new digest."""

    text: str
    ok: bool
    digest: str
    exit_code: int | None = None
    timed_out: bool = False


@dataclass
class Dump:
    """The project's regular files as the agent left them (bytes by relative path)."""

    files: dict[str, bytes] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    error: str = ""


class Workspace:
    """A project checked out in its own sandbox session (see the module docstring)."""

    def __init__(self, session: Session, *, cwd: str = ".", digest: str = "", git: bool = False):
        self.session = session
        self.cwd = cwd
        self.digest = digest
        self.git = git

    @classmethod
    def open(
        cls,
        pool: SandboxPool,
        files: Mapping[str, str],
        *,
        git: bool = True,
        limits: Limits | None = None,
    ) -> Workspace:
        """A new session holding ``files`` (committed when ``git`` and git is available)."""
        session = pool.session(limits=limits or default_limits())
        try:
            ws = cls(session)
            blob = base64.b64encode(zlib.compress(json.dumps(dict(files)).encode(), 6)).decode()
            reply = ws._call(f"{_TOOLS_SOURCE}\n_ag_setup({blob!r}, {bool(git)!r})", CELL_MARGIN)
            if "digest" not in reply:
                raise RuntimeError(f"the workspace could not be set up: {reply.get('error')}")
            ws.digest, ws.git = reply["digest"], bool(reply.get("git"))
            return ws
        except BaseException:
            session.close()
            raise

    def _call(self, code: str, timeout: float) -> dict:
        result = self.session.run(code, timeout=timeout)
        return self._parse(result)

    @staticmethod
    def _parse(result: ExecResult) -> dict:
        """Our reply line (the last after the marker); a lost cell becomes an error."""
        _, mark, tail = result.stdout.rpartition(_MARK)
        if mark:
            try:
                return dict(json.loads(tail.splitlines()[0]))
            except (ValueError, IndexError):
                pass
        return {
            "error": f"the sandbox cell ended with status {result.status!r}: "
            f"{result.stderr.strip()[-300:]}"
        }

    @staticmethod
    def _home(text: str, root: str) -> str:
        """``text`` with the work directory's absolute path shown as ``~``."""
        return text.replace(root + "/", "~/").replace(root, "~") if root else text

    def _tool(self, code: str, timeout: float = CELL_MARGIN) -> ToolResult:
        reply = self._call(code, timeout)
        self.digest = str(reply.get("digest") or self.digest)
        root = str(reply.get("root") or "")
        if "error" in reply:
            return ToolResult(self._home(f"Error: {reply['error']}", root), False, self.digest)
        return ToolResult(self._home(str(reply.get("out", "")), root), True, self.digest)

    def bash(self, command: str, timeout: float = 60.0) -> ToolResult:
        """Run ``command`` with bash in the shell's current directory."""
        code = f"_ag_bash({_b64(command)!r}, {self.cwd!r}, {float(timeout)!r}, {OUTPUT_CAP})"
        reply = self._call(code, float(timeout) + CELL_MARGIN)
        self.digest = str(reply.get("digest") or self.digest)
        if "error" in reply:
            text = self._home(f"Error: {reply['error']}", str(reply.get("root") or ""))
            return ToolResult(text, False, self.digest)
        self.cwd = str(reply.get("cwd") or self.cwd)
        text = self._home(str(reply.get("out", "")), str(reply.get("root") or ""))
        rc, timed_out = reply.get("rc"), bool(reply.get("timed_out"))
        if timed_out:
            text += f"\n[the command ran past its {timeout:g} s limit and was stopped]"
        elif rc:
            text += f"\n[exit code {rc}]"
        return ToolResult(text, not timed_out and rc == 0, self.digest, rc, timed_out)

    def view(self, path: str, start: int | None = None, end: int | None = None) -> ToolResult:
        return self._tool(f"_ag_view({_b64(path)!r}, {start!r}, {end!r}, {self.cwd!r})")

    def str_replace(self, path: str, old: str, new: str) -> ToolResult:
        return self._tool(
            f"_ag_replace({_b64(path)!r}, {_b64(old)!r}, {_b64(new)!r}, {self.cwd!r})"
        )

    def create(self, path: str, text: str) -> ToolResult:
        return self._tool(f"_ag_create({_b64(path)!r}, {_b64(text)!r}, {self.cwd!r})")

    def dump(self) -> Dump:
        """The project's files now (for grading and the final diff)."""
        reply = self._call(f"_ag_dump({DUMP_FILE_LIMIT}, {DUMP_TOTAL_LIMIT})", 60.0)
        if "files" not in reply:
            return Dump(error=str(reply.get("error", "no files came back")))
        raw = json.loads(zlib.decompress(base64.b64decode(reply["files"])))
        files = {path: base64.b64decode(data) for path, data in raw.items()}
        return Dump(files, list(reply.get("skipped", [])))

    def fork(self) -> Workspace:
        """An independent copy (copy-on-write session fork, its own copy of the files)."""
        return Workspace(self.session.fork(), cwd=self.cwd, digest=self.digest, git=self.git)

    def state(self) -> str:
        """The digest of the files and the shell's directory (no history)."""
        return self.digest

    def close(self) -> None:
        self.session.close()


__all__ = ["Dump", "ToolResult", "Workspace", "default_limits"]
