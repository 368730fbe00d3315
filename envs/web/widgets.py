"""MiniWoB-like widget tasks in a real Chromium.

=================  ===========================================================
id                 ``agentgym/WebWidgets-v0`` (``kinds=[...]`` restricts the task kinds)
task kinds         26: click-button, click-link, enter-text, enter-password, login-user,
                   click-checkboxes, choose-radio, select-dropdown, click-tab, date-picker,
                   autocomplete, scroll-to-find, sort-list, click-color, count-shapes,
                   toggle-switches, use-spinner, click-collapsible, email-inbox, click-menu,
                   copy-code, find-word, text-transform, click-dialog, enter-date,
                   search-results
action             one browser tool call per turn (click, fill, select, check, uncheck,
                   press, scroll, goto, back)
observation        text (task, URL, title, steps left, last error, page lines); optional
                   screenshot with ``screenshot="png"|"jpeg"``
turn budget        15 turns, then truncated
=================  ===========================================================

Observations
    ``Task: ...``, ``URL: /``, ``Title: ...``, ``Steps left: N``, ``Error: ...`` (when the
    last action failed), then ``Page:`` and the page in document order: interactive elements
    as ``[bid] role "name"`` plus value/state (``value="..."``, ``checked``/``unchecked``,
    ``selected``, ``disabled``, dropdown ``options=[...]``), other lines visible text.
    Element ids stay fixed for the page's lifetime; new elements get new ids.

Actions
    Tool calls, e.g. ``<tool_call>{"name": "click", "arguments": {"bid": "3"}}</tool_call>``.
    Clicks and typing are trusted input events in Chromium. ``info["admissible_actions"]``
    lists the clicks available on the page.

Rewards (component: default weight)
    * ``format`` (0.1): -1 for an invalid or failed action, else 0.
    * ``outcome`` (1.0): 1 when the page submits exactly the expected answer (the episode
      ends at the first submission, right or wrong, as in MiniWoB).

Tasks
    ``widget-<kind>-<seed>``; train seeds 0..9,999 per kind, test 10,000..10,999. Content is a
    pure function of (kind, seed). The submission is recorded by the local site server and
    checked in Python.

Version History
    * v0: first release.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Unpack

from agentgym.envs.web.base import Grade, WebEnv, WebOptions
from agentgym.envs.web.tasks import KindSeedTaskSet, chosen_kinds, kind_seed_splits
from agentgym.simulators.browser.site import Site
from agentgym.simulators.browser.sites.widgets import KINDS, WidgetSite, oracle

from agentgym.parsing import render_tool_call


class WebWidgetsEnv(WebEnv):
    """MiniWoB-like widgets; see the module docstring for the card."""

    default_max_turns: ClassVar[int | None] = 15

    def __init__(self, *, kinds: Sequence[str] | None = None, **options: Unpack[WebOptions]):
        self.kinds = chosen_kinds(kinds, KINDS, "widget kinds")
        self._splits: Mapping[str, KindSeedTaskSet] = kind_seed_splits("widget", self.kinds)
        super().__init__(**options)

    def make_site(self) -> Site:
        return WidgetSite()

    def task_ids(self, split: str | None = None) -> Sequence[str]:
        return self._splits[split or self.split]

    def site_task(self, task_id: str) -> tuple[int, dict[str, Any]]:
        parsed = self._splits["train"].parse(task_id)
        assert parsed is not None
        return parsed[1], {"kind": parsed[0]}

    @property
    def widget(self) -> WidgetSite:
        assert isinstance(self.site, WidgetSite)
        return self.site

    def instruction(self) -> str:
        assert self.widget.task is not None
        return self.widget.task.instruction

    def grade(self, answer: str | None) -> Grade:
        site = self.widget
        with site.lock:
            subs = list(site.submissions)
        if not subs:
            return Grade()
        assert site.task is not None
        ok = subs[0] == site.task.expected
        return Grade(
            {"outcome": 1.0 if ok else 0.0},
            done=True,
            success=ok,
            message="Submitted: correct." if ok else "Submitted: not what the task asked.",
        )

    def oracle_action(self) -> str:
        """The next move toward the expected submission (reads the hidden answer)."""
        assert self.widget.task is not None and self._page is not None
        name, args = oracle(self.widget.task, self._page.elements, self._page.lines)
        return render_tool_call(name, args)
