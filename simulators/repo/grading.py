"""Grading out of band: the hidden tests against a copy of the agent's final files.

The copy runs in a *fresh* one-shot sandbox run that the agent never touched:

1. The agent's files come out of its session as data (:meth:`.Workspace.dump`). Every
   ``conftest.py`` among them is dropped, and every file of the task's hidden test
   infrastructure (its test folders, test files and conftest files) is written over the copy
   from the host's own copy, so edited, deleted or added tests change nothing.
2. In the run, a small driver (which never imports project code) starts pytest in a child as
   ``python -I -S recorder.py``: isolated mode, no site hooks, the interpreter's own pytest
   imported before the project folder joins ``sys.path`` (a fake ``pytest`` anywhere in the
   tree or on ``PATH`` is never used), plugin auto-loading off, the host's pytest
   configuration given with ``-c`` (the agent's ``pytest.ini``/``pyproject.toml``/``tox.ini``
   are ignored), a per-test time limit.
3. Outcomes come back on a pipe of their own, each line carrying a token the driver drew; the
   driver reads nothing the tests print. A test passes only on an explicit ``passed`` line, so
   ``sys.exit(0)`` or ``os._exit(0)`` in an import, a crash or a hang fail the tests that did
   not report. The driver prints its summary behind a nonce that only the host and the
   driver know (the driver is not dumpable, so the child cannot read it from ``/proc``).

What remains: the code under test runs inside the test process, as under any test runner,
so a program written to find and forge this recorder in its own process's memory is not
stopped. That is an attack on agentgym's grader itself; the cheap ways to make pytest
"pass" listed above are each covered by a test (``tests/repo/test_repo_grading_hostile.py``).
"""

from __future__ import annotations

import base64
import json
import secrets
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agentgym.simulators.repo.tasks import RepoTask
from agentgym.simulators.sandbox import Limits, SandboxPool

_RECORDER = (Path(__file__).resolve().parent / "recorder.py").read_text()

#: The driver that runs in the fresh sandbox run (standard library only).
_DRIVER = r"""
import base64, json, os, select, signal, subprocess, sys, time, zlib
NONCE, TOKEN, DEADLINE, PER_TEST = {nonce!r}, {token!r}, {deadline!r}, {per_test!r}
def driver():
    start = time.monotonic()
    here = os.getcwd()
    with open("bundle") as fh:
        bundle = json.loads(zlib.decompress(base64.b64decode(fh.read())))
    root = os.path.join(here, "repo")
    for rel, data in bundle["files"].items():
        parts = rel.split("/")
        if rel.startswith("/") or ".." in parts or "\0" in rel or not rel:
            continue
        full = os.path.join(root, *parts)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as fh:
            fh.write(base64.b64decode(data))
    ini = os.path.join(here, "config", os.path.basename(bundle["ini_name"]) or "pytest.ini")
    os.makedirs(os.path.dirname(ini), exist_ok=True)
    with open(ini, "w") as fh:
        fh.write(bundle["ini"])
    with open(os.path.join(here, "recorder.py"), "w") as fh:
        fh.write(bundle["recorder"])
    r, w = os.pipe()
    config = {{"root": root, "tests": bundle["tests"], "fd": w, "token": TOKEN,
              "per_test": PER_TEST, "ini": ini,
              "sys_path": [p for p in sys.path if p and os.path.isdir(p)]}}
    env = {{"PATH": "/usr/bin:/bin", "HOME": root, "LANG": "C.UTF-8",
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1",
           "TMPDIR": here}}
    proc = subprocess.Popen([sys.executable, "-I", "-S", os.path.join(here, "recorder.py"),
                             json.dumps(config)], cwd=root, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            pass_fds=(w,), start_new_session=True)
    os.close(w)
    data, status, exited, fds = bytearray(), "ok", None, [r]
    while True:
        now = time.monotonic()
        if now - start > DEADLINE:
            status = "timeout"
            break
        if not fds:
            try:
                proc.wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                continue
        ready, _, _ = select.select(fds, [], [], 0.1)
        if ready:
            chunk = os.read(r, 65536)
            if not chunk:
                fds = []
            elif len(data) < (8 << 20):
                data += chunk
        elif proc.poll() is not None:
            exited = now if exited is None else exited
            if now - exited > 1.0:
                break
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()
    outcomes = {{}}
    for line in data.decode("utf-8", "replace").splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0] == TOKEN:
            outcomes[parts[1]] = parts[2]
    sys.stdout.write(NONCE + json.dumps({{"status": status, "exit": proc.returncode,
                                          "outcomes": outcomes}}) + "\n")
driver()
"""


@dataclass
class GradeResult:
    """Which graded tests passed. ``status`` is ``ok`` or says why grading itself failed
    (``timeout``, the sandbox's status, ``no-result``); tests that did not report failed."""

    status: str
    passed: dict[str, bool] = field(default_factory=dict)
    fail_to_pass: tuple[str, ...] = ()
    pass_to_pass: tuple[str, ...] = ()

    @property
    def f2p_passed(self) -> int:
        return sum(self.passed.get(t, False) for t in self.fail_to_pass)

    @property
    def p2p_passed(self) -> int:
        return sum(self.passed.get(t, False) for t in self.pass_to_pass)

    @property
    def resolved(self) -> bool:
        """Every FAIL_TO_PASS test passes and every PASS_TO_PASS test still does."""
        total = len(self.fail_to_pass) + len(self.pass_to_pass)
        return total > 0 and self.f2p_passed + self.p2p_passed == total

    @property
    def fraction(self) -> float:
        total = len(self.fail_to_pass) + len(self.pass_to_pass)
        return (self.f2p_passed + self.p2p_passed) / total if total else 0.0


def grading_tree(task: RepoTask, files: Mapping[str, bytes]) -> dict[str, bytes]:
    """The files grading runs: the agent's, minus conftest files and the task's hidden test
    folders, plus the host's hidden files."""
    tree = {}
    for path, data in files.items():
        if path.rsplit("/", 1)[-1] == "conftest.py":
            continue
        if any(path == d or path.startswith(d.rstrip("/") + "/") for d in task.hidden_dirs):
            continue
        tree[path] = data
    for path, text in task.hidden_files.items():
        tree[path] = text.encode("utf-8")
    return tree


def grade(
    pool: SandboxPool,
    task: RepoTask,
    files: Mapping[str, bytes],
    *,
    timeout: float = 120.0,
    per_test: float = 10.0,
) -> GradeResult:
    """Run the task's FAIL_TO_PASS and PASS_TO_PASS tests against ``files`` in a fresh run."""
    tree = grading_tree(task, files)
    bundle = {
        "files": {p: base64.b64encode(d).decode() for p, d in tree.items()},
        "tests": list(task.graded_tests),
        "ini": task.pytest_ini,
        "ini_name": task.pytest_config,
        "recorder": _RECORDER,
    }
    blob = base64.b64encode(zlib.compress(json.dumps(bundle).encode(), 6)).decode()
    nonce = "\x1e" + secrets.token_hex(16)
    code = _DRIVER.format(
        nonce=nonce, token=secrets.token_hex(16), deadline=timeout - 5.0, per_test=per_test
    )
    limits = Limits(timeout=timeout, cpu_seconds=int(timeout), output=1 << 20)
    run = pool.run(code, limits=limits, files={"bundle": blob})
    result = GradeResult(run.status, {}, task.fail_to_pass, task.pass_to_pass)
    _, mark, tail = run.stdout.rpartition(nonce)
    if not mark:
        result.status = run.status if run.status != "ok" else "no-result"
        return result
    try:
        reply = json.loads(tail.splitlines()[0])
    except (ValueError, IndexError):
        result.status = "no-result"
        return result
    outcomes = reply.get("outcomes") or {}
    result.status = str(reply.get("status", "ok"))
    result.passed = {t: outcomes.get(t) == "passed" for t in task.graded_tests}
    return result
