"""A to-do list app (create, complete, rename, delete), scored by its database.

Pages: ``/`` lists items, each with *Done*/*Undo*, *Delete* and a rename form, plus an *Add*
form. Every change is a POST that redirects back to ``/``; in a browser the forms submit with
``fetch`` and swap in the answer's body (``static/swap.js``), which shows the same page as a
full load at a fraction of Chromium's CPU. State is a real SQLite database
in memory; the task (from the seed) asks for one or two changes and the env compares the
resulting rows with the goal rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

import numpy as np
from agentgym.simulators.browser.site import (
    SWAP_FORMS_SCRIPT,
    Request,
    Response,
    Site,
    esc,
    not_found,
    page,
)
from agentgym.simulators.browser.sites.words import WORDS

HEADER = "<header class='ag'><b>Todo</b></header>"
VERBS = ("buy", "call", "fix", "email", "clean", "plan", "book", "water", "read", "pay")
KINDS = ("add", "complete", "delete", "rename", "complete+delete")


def make_task(seed: int, kinds: tuple[str, ...] = KINDS) -> dict[str, Any]:
    """The task of ``seed``: starting rows, goal rows and instruction, of one of ``kinds``.

    With every kind (the default) a seed gives the same task whatever ``kinds`` other
    callers use; a narrower ``kinds`` draws the kind from that set instead.
    """
    rng = np.random.default_rng([seed, 6_262])
    n = int(rng.integers(3, 7))
    items = []
    for i in range(n):
        items.append(
            {
                "title": f"{VERBS[int(rng.integers(len(VERBS)))]} {WORDS[int(rng.integers(len(WORDS)))]} {i + 1}",
                "done": bool(rng.integers(2)),
            }
        )
    goal = [dict(it) for it in items]
    kind = kinds[int(rng.integers(len(kinds)))]
    undone = [i for i, it in enumerate(items) if not it["done"]] or [0]
    if kind == "add":
        title = f"{VERBS[int(rng.integers(len(VERBS)))]} {WORDS[int(rng.integers(len(WORDS)))]} new"
        goal.append({"title": title, "done": False})
        text = f'Add a to-do item "{title}".'
    elif kind == "complete":
        k = undone[int(rng.integers(len(undone)))]
        items[k]["done"] = False
        goal[k]["done"] = True
        text = f'Mark "{items[k]["title"]}" as done.'
    elif kind == "delete":
        k = int(rng.integers(n))
        text = f'Delete the item "{items[k]["title"]}".'
        goal.pop(k)
    elif kind == "rename":
        k = int(rng.integers(n))
        new = f"{items[k]['title']} today"
        goal[k]["title"] = new
        text = f'Rename "{items[k]["title"]}" to "{new}".'
    else:
        k = undone[int(rng.integers(len(undone)))]
        items[k]["done"] = False
        goal[k]["done"] = True
        j = next(i for i in range(n) if i != k)
        text = f'Mark "{items[k]["title"]}" as done and delete "{items[j]["title"]}".'
        goal = [g for i, g in enumerate(goal) if i != j]
    return {"items": items, "goal": goal, "instruction": text, "kind": kind}


class TodoSite(Site):
    """The to-do app over an in-memory SQLite database."""

    def __init__(self, kinds: tuple[str, ...] = KINDS, *, swap_forms: bool = True) -> None:
        """``swap_forms``: the forms submit with fetch and the answer replaces the page's
        body (``static/swap.js``), so a click costs no full page load in a browser; the
        pages, observations and rewards are the same either way."""
        super().__init__()
        self.kinds = kinds
        self.swap_forms = swap_forms
        self.db = sqlite3.connect(":memory:", check_same_thread=False)
        self.seed = 0
        self.task: dict[str, Any] = {}

    def reset(self, seed: int, task: Mapping[str, Any]) -> None:
        self.seed = int(seed)
        self.task = make_task(self.seed, self.kinds)
        self._load_rows(
            [(i + 1, it["title"], int(it["done"])) for i, it in enumerate(self.task["items"])]
        )

    def _load_rows(self, rows: list[tuple[int, str, int]]) -> None:
        self.db.executescript(
            "DROP TABLE IF EXISTS todo; CREATE TABLE todo (id INTEGER PRIMARY KEY, title TEXT NOT NULL, done INTEGER NOT NULL);"
        )
        self.db.executemany("INSERT INTO todo VALUES (?, ?, ?)", rows)
        self.db.commit()

    def rows(self) -> list[tuple[int, str, int]]:
        return [tuple(r) for r in self.db.execute("SELECT id, title, done FROM todo ORDER BY id")]  # type: ignore[misc]

    def items(self) -> list[dict[str, Any]]:
        return [{"title": t, "done": bool(d)} for _, t, d in self.rows()]

    def dump(self) -> Any:
        return {"seed": self.seed, "rows": [list(r) for r in self.rows()]}

    def load(self, state: Any) -> None:
        self.seed = int(state["seed"])
        self.task = make_task(self.seed, self.kinds)
        self._load_rows([tuple(r) for r in state["rows"]])  # type: ignore[misc]

    def handle(self, request: Request) -> Response:
        path = request.path
        if path == "/" and request.method == "GET":
            return Response(self._index())
        if request.method == "POST":
            if path == "/add":
                title = request.arg("title").strip()[:200]
                if title:
                    self.db.execute("INSERT INTO todo (title, done) VALUES (?, 0)", (title,))
                    self.db.commit()
                return Response(redirect="/")
            parts = path.strip("/").split("/")
            if len(parts) == 3 and parts[0] == "item" and parts[1].isdigit():
                item_id, op = int(parts[1]), parts[2]
                if op == "toggle":
                    self.db.execute("UPDATE todo SET done = 1 - done WHERE id = ?", (item_id,))
                elif op == "delete":
                    self.db.execute("DELETE FROM todo WHERE id = ?", (item_id,))
                elif op == "rename":
                    title = request.arg("title").strip()[:200]
                    if title:
                        self.db.execute("UPDATE todo SET title = ? WHERE id = ?", (title, item_id))
                self.db.commit()
                return Response(redirect="/")
        return not_found(path)

    def _index(self) -> str:
        rows = ""
        for item_id, title, done in self.rows():
            mark = "done" if done else "open"
            rows += (
                f"<li><b>{esc(title)}</b> ({mark}) "
                f"<form method='post' action='/item/{item_id}/toggle' style='display:inline'>"
                f"<button type='submit' aria-label='{'Undo' if done else 'Done'}: {esc(title)}'>{'Undo' if done else 'Done'}</button></form>"
                f"<form method='post' action='/item/{item_id}/delete' style='display:inline'>"
                f"<button type='submit' aria-label='Delete: {esc(title)}'>Delete</button></form>"
                f"<form method='post' action='/item/{item_id}/rename' style='display:inline'>"
                f"<input name='title' aria-label='New title for {esc(title)}'>"
                f"<button type='submit' aria-label='Rename: {esc(title)}'>Rename</button></form></li>"
            )
        body = (
            f"<ul>{rows or '<li>No items.</li>'}</ul>"
            "<form method='post' action='/add'><input name='title' aria-label='New item'>"
            "<button type='submit'>Add</button></form>"
        )
        return page("Todo", HEADER + body, scripts=SWAP_FORMS_SCRIPT if self.swap_forms else "")
