"""CRUD app: a to-do list over SQLite, scored by the rows it ends with.

=================  ===========================================================
ids                ``agentgym/WebTodo-v0`` (Chromium), ``agentgym/WebTodoText-v0`` (no browser);
                   ``kinds=[...]`` restricts the task kinds
task kinds         add, complete, delete, rename, complete+delete
action             one browser tool call per turn
turn budget        10 turns, then truncated
=================  ===========================================================

Observations
    As every web env (``docs/web.md``).

Actions
    Buttons *Done*/*Undo*, *Delete*, *Rename* (after filling the item's title field) and
    *Add* (after filling *New item*).

Rewards (component: default weight)
    * ``format`` (0.1): -1 for an invalid or failed action, else 0.
    * ``outcome`` (1.0): 1 when the table's rows (title, done) equal the goal rows; the
      episode then ends with ``success``.

Tasks
    ``todo-<seed>``; train seeds 0..99,999, test 100,000..100,999.

Version History
    * v0: first release.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Unpack

from agentgym.envs.web.base import Grade, WebEnv, WebOptions
from agentgym.envs.web.tasks import chosen_kinds
from agentgym.simulators.browser.site import Site
from agentgym.simulators.browser.sites.todo import KINDS, TodoSite

from agentgym.parsing import render_tool_call
from agentgym.tasks import SeededTaskSet, seeded_splits


class WebTodoEnv(WebEnv):
    """To-do list CRUD; see the module docstring for the card."""

    default_max_turns: ClassVar[int | None] = 10
    text_mode_ok: ClassVar[bool] = True

    def __init__(self, *, kinds: Sequence[str] | None = None, **options: Unpack[WebOptions]):
        self.kinds = chosen_kinds(kinds, KINDS, "to-do task kinds")
        self._splits = seeded_splits("todo")
        super().__init__(**options)

    def make_site(self) -> Site:
        return TodoSite(self.kinds)

    @property
    def todo(self) -> TodoSite:
        assert isinstance(self.site, TodoSite)
        return self.site

    def task_ids(self, split: str | None = None) -> Sequence[str]:
        return self._splits[split or self.split]

    def site_task(self, task_id: str) -> tuple[int, dict[str, Any]]:
        return SeededTaskSet.seed_of(task_id), {}

    def instruction(self) -> str:
        return str(self.todo.task["instruction"])

    def grade(self, answer: str | None) -> Grade:
        with self.todo.lock:
            ok = self.todo.items() == self.todo.task["goal"]
        if ok:
            return Grade(
                {"outcome": 1.0}, done=True, success=True, message="The list matches the goal."
            )
        return Grade()

    def oracle_action(self) -> str:
        page = self._page
        assert page is not None
        els = page.elements
        have = self.todo.items()
        goal = self.todo.task["goal"]
        by = {e["name"]: e for e in els}
        # delete items not in the goal (by position match on titles)
        goal_titles = [g["title"] for g in goal]
        for item in have:
            if item["title"] not in goal_titles and len(have) > len(goal):
                return render_tool_call("click", {"bid": by[f"Delete: {item['title']}"]["bid"]})
        for i, g in enumerate(goal):
            if i < len(have):
                item = have[i]
                if item["title"] != g["title"]:
                    box = by.get(f"New title for {item['title']}")
                    if box is not None and box.get("value") != g["title"]:
                        return render_tool_call("fill", {"bid": box["bid"], "text": g["title"]})
                    return render_tool_call("click", {"bid": by[f"Rename: {item['title']}"]["bid"]})
                if item["done"] != g["done"]:
                    key = f"{'Undo' if item['done'] else 'Done'}: {item['title']}"
                    return render_tool_call("click", {"bid": by[key]["bid"]})
            else:
                box = by.get("New item")
                if box is not None and box.get("value") != g["title"]:
                    return render_tool_call("fill", {"bid": box["bid"], "text": g["title"]})
                return render_tool_call("click", {"bid": by["Add"]["bid"]})
        return render_tool_call("goto", {"path": "/"})
