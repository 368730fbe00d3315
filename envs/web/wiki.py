"""Information seeking over a small wiki of invented cities and people.

=================  ===========================================================
ids                ``agentgym/WebWiki-v0`` (Chromium), ``agentgym/WebWikiText-v0`` (no browser)
content            40 cities, 60 people, fixed; info tables and links
question           a city fact (one hop) or a fact of a person's home city (two hops)
action             browser tools plus ``answer(text)``
turn budget        12 turns, then truncated
=================  ===========================================================

Observations
    As every web env (``docs/web.md``).

Actions
    Navigate with ``click``/``fill``/``goto``/``back``; finish with
    ``<tool_call>{"name": "answer", "arguments": {"text": "..."}}</tool_call>`` (an
    ``<answer>...</answer>`` block is accepted too).

Rewards (component: default weight)
    * ``format`` (0.1): -1 for an invalid or failed action, else 0.
    * ``progress`` (0.2): 1 the first time each article on the answer path is opened.
    * ``outcome`` (1.0): 1 when the answer equals the fact (case, commas and extra spaces
      ignored); the episode ends at the first answer.

Tasks
    ``wiki-<seed>``; train seeds 0..99,999, test 100,000..100,999.

Version History
    * v0: first release.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Unpack

from agentgym.envs.web.base import Grade, WebEnv, WebOptions
from agentgym.simulators.browser.site import Site
from agentgym.simulators.browser.sites.wiki import WikiSite, normalize

from agentgym.parsing import render_tool_call
from agentgym.tasks import SeededTaskSet, seeded_splits


class WebWikiEnv(WebEnv):
    """Wiki question answering; see the module docstring for the card."""

    default_reward_weights: ClassVar[dict[str, float]] = {
        "format": 0.1,
        "progress": 0.2,
        "outcome": 1.0,
    }
    default_max_turns: ClassVar[int | None] = 12
    text_mode_ok: ClassVar[bool] = True
    uses_answer: ClassVar[bool] = True

    def __init__(self, **options: Unpack[WebOptions]):
        self._splits = seeded_splits("wiki")
        self._seen: set[str] = set()
        super().__init__(**options)

    def env_state(self) -> Any:
        return self._seen

    def load_env_state(self, state: Any) -> None:
        self._seen = state

    def make_site(self) -> Site:
        return WikiSite()

    @property
    def wiki(self) -> WikiSite:
        assert isinstance(self.site, WikiSite)
        return self.site

    def task_ids(self, split: str | None = None) -> Sequence[str]:
        return self._splits[split or self.split]

    def site_task(self, task_id: str) -> tuple[int, dict[str, Any]]:
        self._seen = set()
        return SeededTaskSet.seed_of(task_id), {}

    def instruction(self) -> str:
        return str(self.wiki.question["question"]) + " Answer with the answer tool."

    def grade(self, answer: str | None) -> Grade:
        q = self.wiki.question
        components: dict[str, float] = {}
        url = self._page.url if self._page else ""
        for slug in q["path"]:
            if url == f"/wiki/{slug}" and slug not in self._seen:
                self._seen.add(slug)
                components["progress"] = 1.0
        if answer is None:
            return Grade(components)
        ok = normalize(answer) == normalize(q["answer"])
        components["outcome"] = 1.0 if ok else 0.0
        return Grade(components, done=True, success=ok, message="Answer received.")

    def oracle_action(self) -> str:
        q, page = self.wiki.question, self._page
        assert page is not None
        last = q["path"][-1]
        if page.url == f"/wiki/{last}":
            return render_tool_call("answer", {"text": q["answer"]})
        if len(q["path"]) == 2 and page.url == f"/wiki/{q['path'][0]}":
            city = self.wiki.wiki[last].title
            link = next(
                (e for e in page.elements if e["role"] == "link" and e["name"] == city), None
            )
            if link is not None:
                return render_tool_call("click", {"bid": link["bid"]})
        first = self.wiki.wiki[q["path"][0]].title
        link = next((e for e in page.elements if e["role"] == "link" and e["name"] == first), None)
        if link is not None:
            return render_tool_call("click", {"bid": link["bid"]})
        box = next((e for e in page.elements if e["role"] == "textbox"), None)
        if box is not None and box.get("value") != first:
            return render_tool_call("fill", {"bid": box["bid"], "text": first})
        button = next((e for e in page.elements if e["name"] == "Search"), None)
        if button is not None:
            return render_tool_call("click", {"bid": button["bid"]})
        return render_tool_call("goto", {"path": "/"})
