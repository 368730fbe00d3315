"""SWE-bench-format instances from local files: a JSONL of instances, a folder of snapshots.

Each line of the instances file holds SWE-bench's fields: ``instance_id``, ``repo``
(``owner/name``), ``base_commit``, ``problem_statement``, ``patch`` (the gold fix),
``test_patch`` (the tests that check it), ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` (lists of
pytest node ids, or JSON text of such lists, as SWE-bench ships them); other fields
(``hints_text``, ``created_at``, ``version``...) are kept out of the way. The repository at
``base_commit`` is read from ``REPOS/<owner>__<name>/<base_commit>/`` or, when there is one
snapshot of it, ``REPOS/<owner>__<name>/``. Nothing is downloaded.

The sandbox has no network, so an instance whose code or tests import a package the jail's
interpreter lacks is refused when it is loaded, with a message naming the package.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agentgym.simulators.repo.issues import split_test_id
from agentgym.simulators.repo.patches import PatchError, apply_patch, touched_paths
from agentgym.simulators.repo.projects import IGNORED_DIRS
from agentgym.simulators.repo.tasks import RepoTask

from agentgym.error import InvalidConfigError

REQUIRED = (
    "instance_id",
    "repo",
    "base_commit",
    "problem_statement",
    "patch",
    "test_patch",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
)
#: Folders whose modules are not needed to run the tests (not checked for imports).
_NOT_RUN = ("docs/", "doc/", "examples/", "benchmarks/", "scripts/")
#: Pytest configuration files, in the order pytest itself prefers them, and their sections.
_CONFIGS = (
    ("pytest.ini", ""),
    (".pytest.ini", ""),
    ("pyproject.toml", "[tool.pytest.ini_options]"),
    ("tox.ini", "[pytest]"),
    ("setup.cfg", "[tool:pytest]"),
)


def _ids(value: Any, field: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise InvalidConfigError(
                f"{where}: {field} is neither a list nor JSON text of one"
            ) from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidConfigError(f"{where}: {field} must be a list of test ids, got {value!r:.80}")
    return tuple(value)


def read_snapshot(root: Path) -> dict[str, str]:
    """Every UTF-8 text file of a snapshot (up to 1 MiB each), caches and .git left out."""
    files: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_DIRS)
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if path.is_symlink() or path.stat().st_size > (1 << 20):
                continue
            try:
                files[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
    return files


def _snapshot_dir(repos: Path, repo: str, commit: str, where: str) -> Path:
    slug = repo.replace("/", "__")
    for candidate in (repos / slug / commit, repos / slug):
        if candidate.is_dir():
            return candidate
    raise InvalidConfigError(
        f"{where}: no snapshot of {repo} at {commit}: looked for {repos / slug / commit} and "
        f"{repos / slug}"
    )


def _guarded(tree: ast.AST) -> set[int]:
    """Ids of import nodes inside ``try`` blocks that catch ImportError (optional imports)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            names = {ast.unparse(h.type) for h in node.handlers if h.type is not None}
            if names & {"ImportError", "ModuleNotFoundError", "Exception", "(ImportError,)"} or any(
                h.type is None for h in node.handlers
            ):
                out |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return out


def missing_imports(files: Mapping[str, str], paths: Iterable[str]) -> dict[str, list[str]]:
    """Top-level modules imported by ``paths`` that neither the repository, the standard
    library nor the sandbox's interpreter provide (module -> files importing it)."""
    local = {Path(p).stem for p in files if p.endswith(".py")}
    local |= {part for p in files for part in Path(p).parts[:-1]}
    missing: dict[str, list[str]] = {}
    for path in paths:
        try:
            tree = ast.parse(files[path])
        except (SyntaxError, ValueError):
            continue
        optional = _guarded(tree)
        for node in ast.walk(tree):
            if id(node) in optional:
                continue
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in local or top in sys.stdlib_module_names or top == "__future__":
                    continue
                if top == "agentgym" or importlib.util.find_spec(top) is None:
                    missing.setdefault(top, []).append(path)
    return missing


def _pytest_config(files: Mapping[str, str]) -> tuple[str, str]:
    for name, section in _CONFIGS:
        text = files.get(name)
        if text is not None and (not section or section in text):
            return name, text
    return "pytest.ini", "[pytest]\n"


def instance_task(raw: Mapping[str, Any], repos: Path, where: str) -> RepoTask:
    """One instance as a :class:`RepoTask` (see the module docstring)."""
    if not isinstance(raw, Mapping):
        raise InvalidConfigError(f"{where}: an instance must be a JSON object, got {raw!r:.60}")
    absent = [f for f in REQUIRED if f not in raw]
    if absent:
        raise InvalidConfigError(f"{where}: not a SWE-bench instance: missing {absent}")
    f2p = _ids(raw["FAIL_TO_PASS"], "FAIL_TO_PASS", where)
    p2p = _ids(raw["PASS_TO_PASS"], "PASS_TO_PASS", where)
    snapshot = read_snapshot(_snapshot_dir(repos, str(raw["repo"]), str(raw["base_commit"]), where))
    try:
        reference = apply_patch(snapshot, str(raw["patch"]))
        tested = apply_patch(snapshot, str(raw["test_patch"]))
    except PatchError as exc:
        raise InvalidConfigError(f"{where}: {exc}") from None
    hidden_paths = set(touched_paths(str(raw["test_patch"])))
    hidden_paths |= {split_test_id(t)[0] for t in f2p + p2p}
    hidden_paths |= {p for p in tested if p.rsplit("/", 1)[-1] == "conftest.py"}
    hidden = {p: tested[p] for p in sorted(hidden_paths) if p in tested}
    code = [
        p for p in tested if p.endswith(".py") and p != "setup.py" and not p.startswith(_NOT_RUN)
    ]
    missing = missing_imports(tested, code)
    if missing:
        names = ", ".join(
            f"{m} (imported by {', '.join(sorted(set(ps))[:2])})"
            for m, ps in sorted(missing.items())
        )
        raise InvalidConfigError(
            f"{where}: the sandbox has no network and its Python lacks {names}; install them "
            "where agentgym runs (the jail shares that interpreter) or leave this instance out"
        )
    config_name, config = _pytest_config(snapshot)
    return RepoTask(
        id=str(raw["instance_id"]),
        repo=str(raw["repo"]),
        split="",
        starting_files=snapshot,
        hidden_files=hidden,
        hidden_dirs=(),
        pytest_ini=config,
        fail_to_pass=f2p,
        pass_to_pass=p2p,
        problem_statement=str(raw["problem_statement"]),
        patch=str(raw["patch"]),
        test_patch=str(raw["test_patch"]),
        reference_files=reference,
        pytest_config=config_name,
    )


def load_instances(
    instances: str | os.PathLike | None, repos: str | os.PathLike | None
) -> list[RepoTask]:
    """Every instance of a JSONL file (or a JSON list), with snapshots from ``repos``."""
    if instances is None or repos is None:
        raise InvalidConfigError(
            "SWE-bench-format instances need both instances=<JSONL file> and "
            "repos=<folder of repository snapshots>."
        )
    path, repo_dir = Path(instances), Path(repos)
    if not path.is_file():
        raise InvalidConfigError(f"instances={str(path)!r} is not a file")
    if not repo_dir.is_dir():
        raise InvalidConfigError(f"repos={str(repo_dir)!r} is not a folder")
    text = path.read_text(encoding="utf-8")
    try:
        rows = (
            json.loads(text)
            if text.lstrip().startswith("[")
            else [json.loads(line) for line in text.splitlines() if line.strip()]
        )
    except ValueError as exc:
        raise InvalidConfigError(f"{path} is neither JSONL nor a JSON list: {exc}") from None
    tasks = [instance_task(row, repo_dir, f"{path.name} line {n}") for n, row in enumerate(rows, 1)]
    if not tasks:
        raise InvalidConfigError(f"{path} holds no instance")
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
        raise InvalidConfigError(f"{path}: instance ids repeat")
    return tasks
