"""Run a project's tests on the host, fast, for building the task table (trusted code only).

The builder runs thousands of mutants of the projects written for this repository. Each run
is a ``fork()`` of a process that has already imported pytest, working in a private copy of
the project: about a tenth of a second for a selection of tests. Each child records every
test's outcome (and, for failures, what the failing line saw) with :mod:`.recorder`, and
optionally which project lines each test executed (used to run only the tests a mutant can
reach). This is for the project's own sources and their mutants, never for agent code: agent
code is only ever run in the sandbox (see :mod:`.grading`).
"""

from __future__ import annotations

import gc
import json
import os
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest  # imported once here, so forked children start warm
from agentgym.simulators.repo.projects import Project
from agentgym.simulators.repo.recorder import Recorder


@dataclass
class HostRun:
    """What one run saw: ``status`` is ``ok``, ``timeout`` or ``crashed``."""

    status: str
    outcomes: dict[str, str] = field(default_factory=dict)
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: test id -> lines ``"path:line"`` of the package it executed; ``"<import>"`` holds the
    #: lines run outside any test (imports, module-level code).
    coverage: dict[str, list[str]] = field(default_factory=dict)
    #: test ids in collection order (a full run only).
    collected: list[str] = field(default_factory=list)


class _Tracer:
    """Which package lines each test executes (``sys.settrace``)."""

    def __init__(self, root: str, package: str):
        self.prefix = os.path.join(root, package) + os.sep
        self.root = root + os.sep
        self.bucket = "<import>"
        self.lines: dict[str, set[str]] = {}

    def global_trace(self, frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename.startswith(self.prefix):
            return self.local_trace
        return None

    def local_trace(self, frame: Any, event: str, arg: Any) -> Any:
        if event == "line" or event == "call":
            rel = frame.f_code.co_filename[len(self.root) :]
            self.lines.setdefault(self.bucket, set()).add(f"{rel}:{frame.f_lineno}")
        return self.local_trace

    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> None:
        self.bucket = item.nodeid

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        self.bucket = "<import>"


class _Collected:
    def __init__(self) -> None:
        self.ids: list[str] = []

    def pytest_collection_finish(self, session: Any) -> None:
        self.ids = [item.nodeid for item in session.items]


def _child(
    root: str, package: str, tests: Sequence[str] | None, wfd: int, facts: bool, coverage: bool
) -> None:
    os.chdir(root)
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # this child only: no third-party plugins
    sys.path.insert(0, root)
    sys.dont_write_bytecode = True
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    recorder = Recorder(None, facts=facts, wanted=set(tests) if tests is not None else None)
    collected = _Collected()
    plugins: list[Any] = [recorder, collected]
    tracer = _Tracer(root, package) if coverage else None
    if tracer is not None:
        plugins.append(tracer)
        sys.settrace(tracer.global_trace)
    files = sorted({t.split("::", 1)[0] for t in tests}) if tests is not None else []
    args = [
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:unraisableexception",
        "-p",
        "no:threadexception",
        "--assert=plain",
        "--rootdir",
        root,
        "-c",
        "pytest.ini",
        *files,
    ]
    pytest.main(args, plugins=plugins)
    sys.settrace(None)
    result = {
        "outcomes": recorder.outcomes,
        "facts": recorder.facts,
        "coverage": {k: sorted(v) for k, v in tracer.lines.items()} if tracer else {},
        "collected": collected.ids,
    }
    data = json.dumps(result).encode()
    view = memoryview(data)
    while view:
        view = view[os.write(wfd, view) :]


class ForkRunner:
    """A private copy of one project that mutants are written into, run by forked children.

    The parent must have imported pytest and never the project itself.
    """

    def __init__(self, project: Project, base_dir: str | None = None, *, freeze: bool = True):
        self.project = project
        #: ``gc.freeze()`` before each fork, so the children's collections skip the parent's
        #: heap (right for the builder's worker processes; a test process passes False).
        self.freeze = freeze
        base_dir = base_dir or os.environ.get("AGENTGYM_REPOFIX_TMP") or None
        self.root = tempfile.mkdtemp(prefix=f"repofix-{project.name}-", dir=base_dir)
        for path, text in project.files.items():
            full = os.path.join(self.root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as fh:
                fh.write(text)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def _write(self, files: Mapping[str, str]) -> None:
        for path, text in files.items():
            with open(os.path.join(self.root, path), "w", encoding="utf-8") as fh:
                fh.write(text)

    def run(
        self,
        changed: Mapping[str, str] | None = None,
        tests: Sequence[str] | None = None,
        *,
        facts: bool = False,
        coverage: bool = False,
        timeout: float = 60.0,
    ) -> HostRun:
        """Run ``tests`` (all when None) with ``changed`` files in place of the originals."""
        changed = dict(changed or {})
        self._write(changed)
        try:
            return self._fork(tests, facts, coverage, timeout)
        finally:
            self._write({p: self.project.files[p] for p in changed})

    def _fork(
        self, tests: Sequence[str] | None, facts: bool, coverage: bool, timeout: float
    ) -> HostRun:
        if self.freeze:
            gc.freeze()
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 0
            try:
                os.close(rfd)
                _child(self.root, self.project.package, tests, wfd, facts, coverage)
            except BaseException:
                code = 1
            os._exit(code)
        os.close(wfd)
        chunks: list[bytes] = []
        deadline = time.monotonic() + timeout
        status = "ok"
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                status = "timeout"
                os.kill(pid, signal.SIGKILL)
                break
            ready, _, _ = select.select([rfd], [], [], left)
            if ready:
                chunk = os.read(rfd, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
        os.close(rfd)
        _, wstatus = os.waitpid(pid, 0)
        if status == "timeout":
            return HostRun("timeout")
        if wstatus != 0 or not chunks:
            return HostRun("crashed")
        data = json.loads(b"".join(chunks))
        return HostRun("ok", data["outcomes"], data["facts"], data["coverage"], data["collected"])
