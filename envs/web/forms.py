"""Multi-page forms with validation and per-field partial credit.

=================  ===========================================================
ids                ``agentgym/WebForms-v0`` (Chromium), ``agentgym/WebFormsText-v0`` (no browser)
pages              three form steps (10 fields), a review page, a done page
action             one browser tool call per turn
observation        text (task, URL, title, steps left, last error, page lines)
turn budget        30 turns, then truncated
=================  ===========================================================

Observations
    As every web env (``docs/web.md``). Validation errors appear next to their field.

Actions
    ``fill`` text fields, ``select`` the country, ``check`` the contact radio and the
    newsletter box, click *Next*; on the review page click *Confirm*.

Rewards (component: default weight)
    * ``format`` (0.1): -1 for an invalid or failed action, else 0.
    * ``progress`` (0.5): change in the fraction of fields saved on the server with the
      target value (can be negative when a right value is overwritten).
    * ``outcome`` (1.0): at confirmation, the fraction of the 10 fields that are right
      (partial credit); ``success`` when all are. The episode ends at confirmation.

Tasks
    ``form-<seed>``; train seeds 0..99,999, test 100,000..100,999; the seed draws the
    profile to register.

Version History
    * v0: first release.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Unpack

from agentgym.envs.web.base import Grade, WebEnv, WebOptions
from agentgym.simulators.browser.site import Site
from agentgym.simulators.browser.sites.forms import FIELDS, STEPS, FormSite, describe

from agentgym.parsing import render_tool_call
from agentgym.tasks import SeededTaskSet, seeded_splits


class WebFormsEnv(WebEnv):
    """Registration form; see the module docstring for the card."""

    default_reward_weights: ClassVar[dict[str, float]] = {
        "format": 0.1,
        "progress": 0.5,
        "outcome": 1.0,
    }
    default_max_turns: ClassVar[int | None] = 30
    text_mode_ok: ClassVar[bool] = True

    def __init__(self, **options: Unpack[WebOptions]):
        self._splits = seeded_splits("form")
        self._score = 0.0
        super().__init__(**options)

    def env_state(self) -> Any:
        return self._score

    def load_env_state(self, state: Any) -> None:
        self._score = state

    def make_site(self) -> Site:
        return FormSite()

    @property
    def form(self) -> FormSite:
        assert isinstance(self.site, FormSite)
        return self.site

    def task_ids(self, split: str | None = None) -> Sequence[str]:
        return self._splits[split or self.split]

    def site_task(self, task_id: str) -> tuple[int, dict[str, Any]]:
        self._score = 0.0
        return SeededTaskSet.seed_of(task_id), {}

    def instruction(self) -> str:
        return describe(self.form.profile)

    def grade(self, answer: str | None) -> Grade:
        with self.form.lock:
            scores = self.form.field_scores()
            confirmed = self.form.confirmed
        score = sum(scores.values()) / len(FIELDS)
        components = {"progress": score - self._score}
        self._score = score
        if confirmed:
            components["outcome"] = score
            return Grade(
                components,
                done=True,
                success=score == 1.0,
                message=f"Registration confirmed ({round(score * len(FIELDS))} of {len(FIELDS)} fields right).",
            )
        return Grade(components)

    def oracle_action(self) -> str:
        page = self._page
        assert page is not None
        els, target = page.elements, self.form.profile
        url = page.url
        if url.startswith("/step/") and url[6:].isdigit():
            for name, label, kind in STEPS[int(url[6:])]:
                want = target[name]
                if kind == "text":
                    e = next((x for x in els if x["name"] == label), None)
                    if e is not None and e.get("value") != want:
                        return render_tool_call("fill", {"bid": e["bid"], "text": want})
                elif kind == "select":
                    e = next((x for x in els if x["name"] == label), None)
                    if e is not None and e.get("value") != want:
                        return render_tool_call("select", {"bid": e["bid"], "option": want})
                elif kind == "radio":
                    e = next((x for x in els if x["name"] == f"{label}: {want}"), None)
                    if e is not None and not e.get("checked"):
                        return render_tool_call("check", {"bid": e["bid"]})
                else:
                    e = next((x for x in els if x["role"] == "checkbox"), None)
                    if e is not None and e.get("checked") != (want == "yes"):
                        return render_tool_call(
                            "check" if want == "yes" else "uncheck", {"bid": e["bid"]}
                        )
            nxt = next((x for x in els if x["name"] == "Next"), None)
            if nxt is not None:
                return render_tool_call("click", {"bid": nxt["bid"]})
        confirm = next((x for x in els if x["name"] == "Confirm"), None)
        if confirm is not None:
            return render_tool_call("click", {"bid": confirm["bid"]})
        return render_tool_call("goto", {"path": "/review"})
