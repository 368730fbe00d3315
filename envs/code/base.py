"""What both code envs share: a sandbox session per episode, the python tool, session fork.

The world of a code env is one sandbox :class:`~agentgym.simulators.sandbox.Session`
(variables persist between the agent's tool calls). ``snapshot`` forks that session
(copy-on-write, a few ms) and ``restore`` forks the snapshot again, so one snapshot can be
restored any number of times, into any env instance sharing the pool.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, ClassVar, Unpack

from agentgym.simulators.sandbox import ExecResult, Limits, SandboxPool, Session, default_pool

from agentgym.core import AgentEnv, BaseOptions
from agentgym.parsing import Tool

#: Characters of tool output shown to the model per call.
OUTPUT_LIMIT = 4000

PYTHON_TOOL = Tool(
    name="python",
    description=(
        "Run Python code in a persistent session (variables survive between calls) and see "
        "its stdout and stderr. The value of a final bare expression is printed. numpy and "
        "sympy are available; there is no network and no file outside the work directory."
    ),
    parameters={
        "type": "object",
        "properties": {"code": {"type": "string", "description": "Python source to run."}},
        "required": ["code"],
        "additionalProperties": False,
    },
)


def describe(result: ExecResult, limit: int = OUTPUT_LIMIT) -> str:
    """A run's output and status as observation text (reward-free, size-capped)."""
    text = result.text()
    if len(text) > limit:
        text = text[:limit] + f"\n[... {len(text) - limit} more characters]"
    status = {
        "ok": "",
        "error": "",
        "timeout": "\n[the code ran out of time and was stopped; the session was restarted "
        "from the previous cells]",
        "killed": f"\n[the process was killed (signal {result.signal}): a limit was hit]",
        "output_limit": "\n[far too much output: the run was stopped]",
        "dead": "\n[the session was lost and will be rebuilt]",
        "crashed": "\n[the sandbox worker crashed and was restarted]",
    }.get(result.status, f"\n[{result.status}]")
    if not text.strip() and not status:
        text = "(no output)"
    return text + status


class SessionEnv(AgentEnv):
    """An AgentEnv whose world is one sandbox session (opened lazily per episode)."""

    metadata: ClassVar[dict[str, Any]] = {"family": "code", "render_modes": ["ansi"]}
    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "format": 0.1,
        "tool": 0.1,
        "outcome": 1.0,
    }

    def __init__(
        self,
        *,
        pool: SandboxPool | None = None,
        cell_timeout: float = 10.0,
        **base: Unpack[BaseOptions],
    ):
        super().__init__(**base)
        self._pool = pool
        self.cell_timeout = float(cell_timeout)
        self._session: Session | None = None

    @property
    def pool(self) -> SandboxPool:
        if self._pool is None:
            self._pool = default_pool()
        return self._pool

    def _new_session(self) -> None:
        if self._session is not None:
            self._session.close()
        self._session = self.pool.session(limits=Limits(timeout=self.cell_timeout))

    @property
    def session(self) -> Session:
        if self._session is None:
            self._new_session()
        assert self._session is not None
        return self._session

    def run_cell(self, code: str) -> ExecResult:
        return self.session.run(code, timeout=self.cell_timeout)

    def session_digest(self) -> str:
        return self.session.digest() if self._session is not None else ""

    @staticmethod
    def key_of(*parts: str) -> str:
        return hashlib.blake2b("\x00".join(parts).encode(), digest_size=16).hexdigest()

    def _native_snapshot(self) -> Any:
        return (self._task_id, self.session.fork(), self._extra_state())

    def _native_restore(self, native: Any) -> None:
        task_id, session, extra = native
        if self._session is not None:
            self._session.close()
        self._session = session.fork()
        self._restore_extra(task_id, extra)

    def _extra_state(self) -> Any:
        """Env state beside the session that a snapshot must carry."""
        return None

    def _restore_extra(self, task_id: str, extra: Any) -> None:
        raise NotImplementedError

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None
        super().close()
