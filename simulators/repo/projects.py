"""The Python projects written for this repository, which RepoFix tasks break and agents fix.

Each project is a folder under ``projects/`` (shipped as package data, never imported by
agentgym): a package of its own, a ``tests/`` folder of pytest tests that all pass, a
``pytest.ini`` and a README. The projects are split between training and held-out tasks by
project, so a test task's code was never seen in training.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agentgym.error import InvalidConfigError

PROJECTS_DIR = Path(__file__).resolve().parent / "projects"

#: Which split draws tasks from which project (disjoint: test code is never trained on).
SPLIT_PROJECTS: Mapping[str, tuple[str, ...]] = {
    "train": ("chrono", "csvq", "graphs", "ledger", "router", "tmpl"),
    "test": ("confparse", "quantities"),
}

#: Folder names that are tool caches, never project content.
IGNORED_DIRS = frozenset({"__pycache__", ".pytest_cache", ".git", ".mypy_cache", ".ruff_cache"})


@dataclass(frozen=True)
class Project:
    """One project's files (relative path -> text), in sorted order."""

    name: str
    files: Mapping[str, str]

    @property
    def package(self) -> str:
        """The importable package the project ships (named like the project)."""
        return self.name

    def source_files(self) -> list[str]:
        """The package's modules: the code bugs are injected into."""
        prefix = f"{self.package}/"
        return [p for p in self.files if p.startswith(prefix) and p.endswith(".py")]

    def test_files(self) -> list[str]:
        """The test modules (``tests/test_*.py``)."""
        return [
            p
            for p in self.files
            if p.startswith("tests/") and os.path.basename(p).startswith("test_")
        ]

    def digest(self) -> str:
        """A digest of every file, to check that a task table matches these sources."""
        h = hashlib.sha256()
        for path, text in self.files.items():
            h.update(path.encode() + b"\0" + text.encode() + b"\0")
        return h.hexdigest()[:16]


def project_names() -> tuple[str, ...]:
    """Every shipped project, sorted."""
    return tuple(sorted(p.name for p in PROJECTS_DIR.iterdir() if (p / "pytest.ini").is_file()))


def read_tree(root: Path) -> dict[str, str]:
    """Every text file under ``root`` (relative POSIX path -> text), caches left out."""
    files: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_DIRS)
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = Path(dirpath) / name
            files[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
    return dict(sorted(files.items()))


@functools.cache
def load_project(name: str) -> Project:
    """The project ``name`` as shipped."""
    root = PROJECTS_DIR / name
    if not (root / "pytest.ini").is_file():
        raise InvalidConfigError(
            f"no RepoFix project {name!r}; the projects are {list(project_names())}."
        )
    return Project(name, read_tree(root))


def split_of(project: str) -> str:
    """The split whose tasks come from ``project``."""
    for split, names in SPLIT_PROJECTS.items():
        if project in names:
            return split
    raise InvalidConfigError(f"project {project!r} is in no split; see SPLIT_PROJECTS.")
