"""Repositories with bugs to fix: the world behind ``agentgym/RepoFix-v0``.

No Gymnasium here. The pieces:

* :mod:`.projects` — the Python projects written for this repository (package data);
* :mod:`.mutate` — the bug injector (operator swaps, off-by-one, removed branches...);
* :mod:`.build` — builds and validates the task table offline (``tasks.jsonl``);
* :mod:`.tasks` and :mod:`.issues` — a task's files, tests, issue text and gold patch;
* :mod:`.swebench` — SWE-bench-format instances from local files;
* :mod:`.workspace` — a repository in a sandbox session, with the agent's tools;
* :mod:`.grading` — hidden tests against a copy of the final files in a fresh jailed run.
"""

from agentgym.simulators.repo.grading import GradeResult, grade, grading_tree
from agentgym.simulators.repo.mutate import Edit, MutationError, apply_edits, find_edits
from agentgym.simulators.repo.projects import SPLIT_PROJECTS, Project, load_project, project_names
from agentgym.simulators.repo.swebench import load_instances
from agentgym.simulators.repo.tasks import RepoTask, TaskTable, load_table
from agentgym.simulators.repo.workspace import Dump, ToolResult, Workspace

__all__ = [
    "SPLIT_PROJECTS",
    "Dump",
    "Edit",
    "GradeResult",
    "MutationError",
    "Project",
    "RepoTask",
    "TaskTable",
    "ToolResult",
    "Workspace",
    "apply_edits",
    "find_edits",
    "grade",
    "grading_tree",
    "load_instances",
    "load_project",
    "load_table",
    "project_names",
]
