"""Shared machinery of the web family: one base env over a site and a driver.

Not an env card (see the family modules). :class:`WebEnv` owns a site, a driver (a real
Chromium tab through :class:`~agentgym.simulators.browser.session.BrowserSession`, or the
browser-free :class:`~agentgym.simulators.browser.dom.TextBrowser`), the browser tools, the
observation layout and the state key. Families supply the task set, the site and a grader.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Unpack

from agentgym.simulators.browser.actions import ANSWER, BROWSER_TOOLS, apply
from agentgym.simulators.browser.dom import PageObservation, TextBrowser
from agentgym.simulators.browser.site import Site

from agentgym.core import AgentEnv, BaseOptions, ResetOutcome, StepOutcome
from agentgym.error import InvalidConfigError
from agentgym.parsing import ParsedAction, Tool, render_tool_call
from agentgym.text import safe_text

MODES = ("browser", "text")
SCREENSHOT_KINDS = (False, "png", "jpeg")

SYSTEM_PROMPT = (
    "You are a web agent operating a real web browser on a local website. Each turn you see "
    "the task, the address, and the page as a list of lines: interactive elements appear as "
    '[id] role "name" followed by their value or state; other lines are the visible text. '
    "Act with exactly one tool call per turn, referring to elements by their id, e.g.\n"
    + render_tool_call("click", {"bid": "3"})
)


@dataclass
class Grade:
    """What a family's grader says after a step."""

    components: dict[str, float] = field(default_factory=dict)
    done: bool = False
    success: bool = False
    message: str = ""


class WebOptions(BaseOptions, total=False):
    """:class:`WebEnv`'s own keywords and the base ones: what a family's env passes on."""

    mode: str
    screenshot: bool | str
    obs_chars: int
    action_timeout: float
    aria: bool


@functools.lru_cache(maxsize=4096)
def _click(bid: str) -> str:
    """The click action on element ``bid`` (ids repeat on every page: rendered once each)."""
    return render_tool_call("click", {"bid": bid})


class WebEnv(AgentEnv):
    """Base class of the web envs (see the family modules for the cards).

    Args:
        mode: ``"browser"`` (real Chromium, the default) or ``"text"`` (no browser; only for
            families whose pages work without JavaScript).
        screenshot: ``False``, ``"png"`` or ``"jpeg"``: add the viewport as an image to every
            observation (browser mode only).
        obs_chars: Budget for the page lines of one observation; the rest is cut with a note.
        action_timeout: Seconds one browser action may take before it counts as hung.
        aria: Append Playwright's ARIA snapshot of the page to the text (browser mode only).
        **base: The options every env takes (:class:`agentgym.core.EnvOptions`).
    """

    metadata: ClassVar[dict[str, Any]] = {"family": "web", "render_modes": ["ansi"]}  # type: ignore[misc]
    default_reward_weights: ClassVar[Mapping[str, float]] = {"format": 0.1, "outcome": 1.0}
    default_max_turns: ClassVar[int | None] = 20
    #: True when every page of the family works without JavaScript (text mode allowed).
    text_mode_ok: ClassVar[bool] = False
    #: True when the episode ends with answer(text).
    uses_answer: ClassVar[bool] = False

    def __init__(
        self,
        *,
        mode: str = "browser",
        screenshot: bool | str = False,
        obs_chars: int = 6000,
        action_timeout: float = 10.0,
        aria: bool = False,
        **base: Unpack[BaseOptions],
    ):
        super().__init__(**base)
        if mode not in MODES:
            raise InvalidConfigError(f"mode must be one of {MODES}, got {mode!r}.")
        if mode == "text" and not self.text_mode_ok:
            raise InvalidConfigError(
                f"{type(self).__name__} needs JavaScript, so it has no text mode; use mode='browser'."
            )
        if screenshot is True:
            screenshot = "png"
        if screenshot not in SCREENSHOT_KINDS:
            raise InvalidConfigError(
                f"screenshot must be False, 'png' or 'jpeg', got {screenshot!r}."
            )
        if screenshot and mode == "text":
            raise InvalidConfigError("screenshots need mode='browser'.")
        if aria and mode == "text":
            raise InvalidConfigError("aria snapshots need mode='browser'.")
        self.mode = mode
        self.metadata = {**self.metadata, "blocking": mode == "browser"}  # type: ignore[misc]
        self.aria = bool(aria)
        self.screenshot = screenshot
        self.obs_chars = int(obs_chars)
        self.action_timeout = float(action_timeout)
        self.site: Site = self.make_site()
        self._driver: Any = None
        self._page: PageObservation | None = None
        self._instruction = ""
        self._answer: str | None = None

    # -- what families provide -------------------------------------------------------------

    def make_site(self) -> Site:
        raise NotImplementedError

    def site_task(self, task_id: str) -> tuple[int, dict[str, Any]]:
        """(seed, task dict) for ``site.reset``."""
        raise NotImplementedError

    def instruction(self) -> str:
        raise NotImplementedError

    def grade(self, answer: str | None) -> Grade:
        """Score the world after a step (``answer`` set when the model answered)."""
        raise NotImplementedError

    # -- the driver ------------------------------------------------------------------------

    @property
    def driver(self) -> Any:
        if self._driver is None:
            if self.mode == "text":
                self._driver = TextBrowser(self.site)
            else:
                from agentgym.simulators.browser.runtime import get_runtime
                from agentgym.simulators.browser.session import BrowserSession

                self._driver = BrowserSession(
                    get_runtime(),
                    self.site,
                    action_timeout=self.action_timeout,
                    navigation_timeout=self.action_timeout,
                )
        return self._driver

    @property
    def tools(self) -> Sequence[Tool]:
        return (*BROWSER_TOOLS, ANSWER) if self.uses_answer else BROWSER_TOOLS

    # -- template --------------------------------------------------------------------------

    def _reset(self, task_id: str, options: Mapping[str, Any]) -> ResetOutcome:
        seed, task = self.site_task(task_id)
        with self.site.lock:
            self.site.reset(seed, task)
        self._answer = None
        self._instruction = self.instruction()
        driver = self.driver
        if self.mode == "text":
            driver.history.clear()
            error = driver.open(self.site.start_path)
        else:
            error = driver.open(self.site.start_path, fresh=True)
        self._page = self._safe_observe()
        text = self._render(error)
        return ResetOutcome(
            text=text,
            instruction=self._instruction,
            system_prompt=SYSTEM_PROMPT,
            images=self._images(),
        )

    def _step(self, action: ParsedAction) -> StepOutcome:
        problem = None
        if not action.valid:
            problem = action.error_text()
        elif action.answer is not None and not action.tool_calls and self.uses_answer:
            pass
        elif len(action.tool_calls) != 1 or action.answer is not None:
            problem = (
                f"expected exactly one tool call, got {len(action.tool_calls)}"
                + (" and an <answer>" if action.answer is not None else "")
                + ". Example: "
                + render_tool_call("click", {"bid": "0"})
            )
        if problem is not None:
            return StepOutcome(
                text=self._render(problem),
                images=self._images(),
                action_valid=False,
                error=safe_text(problem),
            )
        answer = None
        error: str | None
        if self._driver is not None:
            # Both describe THIS action only: an action refused before it reaches the
            # browser must not repeat what an earlier action reported (e.g. a reopened tab).
            self._driver.infra_error = False
            if hasattr(self._driver, "notice"):
                self._driver.notice = None
        if action.tool_calls:
            call = action.tool_calls[0]
            if call.name == "answer":
                answer = safe_text(str(call.arguments["text"]))
                error = None
            else:
                error = apply(self.driver, call.name, call.arguments, self._page)
        else:
            answer = safe_text(str(action.answer))
            error = None
        # A failed action is the model's mistake (invalid, format penalty) unless the browser
        # itself failed (crash, hang, restart), which the observation reports without penalty.
        valid = error is None or bool(getattr(self._driver, "infra_error", False))
        notice = getattr(self._driver, "notice", None)
        if notice:
            error = f"{error}; {notice}" if error else notice
        self._page = self._safe_observe()
        if answer is not None:
            self._answer = answer
        grade = self.grade(answer)
        text = self._render(error, grade.message)
        return StepOutcome(
            text=text,
            images=self._images(),
            components=grade.components,
            terminated=grade.done,
            success=grade.success,
            action_valid=valid,
            error=None if error is None else safe_text(error),
            info={"url": self._page.url if self._page else ""},
        )

    def _safe_observe(self) -> PageObservation:
        try:
            return self.driver.observe()
        except Exception as exc:  # the driver already tried to recover
            return PageObservation(
                self.driver.url, "", [f"(the page could not be read: {exc})"], []
            )

    def _images(self) -> tuple[Any, ...]:
        if self.screenshot and self.mode == "browser":
            return (self.driver.screenshot(self.screenshot),)
        return ()

    def _render(self, error: str | None, message: str = "") -> str:
        page = self._page
        steps_left = (
            "unlimited" if self.max_turns is None else str(max(0, self.max_turns - self._turn))
        )
        head = [
            f"Task: {self._instruction}",
            f"URL: {page.url if page else ''}",
            f"Title: {page.title if page else ''}",
            f"Steps left: {steps_left}",
        ]
        if error:
            head.append(f"Error: {error}")
        if message:
            head.append(message)
        head.append("Page:")
        body: list[str] = []
        used = 0
        lines = page.lines if page else []
        for i, line in enumerate(lines):
            if used + len(line) + 1 > self.obs_chars:
                body.append(f"[... {len(lines) - i} more lines not shown]")
                break
            body.append(line)
            used += len(line) + 1
        if self.aria and self.mode == "browser" and self._driver is not None:
            body += ["Accessibility tree:", self._driver.aria_snapshot()]
        # Model text reaches the page (fill) and errors (unknown ids); the observation must
        # still be valid UTF-8 whatever the model wrote.
        return safe_text("\n".join(head + body))

    # -- snapshots -------------------------------------------------------------------------

    def env_state(self) -> Any:
        """Per-episode bookkeeping of a family (progress flags) for native snapshots."""
        return None

    def load_env_state(self, state: Any) -> None:
        pass

    def _native_snapshot(self) -> Any:
        """Text mode: a cheap copy (site state + text browser + bookkeeping).

        Browser mode returns None, so restore replays the episode's actions: the page's
        own JavaScript state cannot be copied out of Chromium faithfully.
        """
        if self.mode != "text" or self._driver is None:
            return None
        return {
            "site": self.site.snapshot_state(),
            "browser": self._driver.snapshot(),
            "page": copy.deepcopy(self._page),
            "instruction": self._instruction,
            "answer": self._answer,
            "env": copy.deepcopy(self.env_state()),
        }

    def _native_restore(self, native: Any) -> None:
        self.site.restore_state(native["site"])
        self.driver.restore(native["browser"])
        self._page = copy.deepcopy(native["page"])
        self._instruction = native["instruction"]
        self._answer = native["answer"]
        self.load_env_state(copy.deepcopy(native["env"]))

    # -- state -----------------------------------------------------------------------------

    def state_key(self) -> str:
        if self._task_id is None:
            return ""
        page = self._page
        digest = hashlib.blake2b(digest_size=16)
        digest.update(self.site.state_digest().encode())
        if page is not None:
            digest.update(page.url.encode())
            digest.update("\n".join(page.lines).encode())
        return digest.hexdigest()

    def admissible_actions(self) -> list[str] | None:
        """Clicks on the enabled elements of the page (a useful subset, not every action)."""
        if self._page is None:
            return None
        out = [
            _click(e["bid"])
            for e in self._page.elements
            if not e.get("disabled") and e["role"] not in ("textbox", "combobox")
        ]
        return out or None

    def page_elements(self) -> list[dict[str, Any]]:
        """The interactive elements of the current page (what the last observation listed)."""
        return list(self._page.elements) if self._page else []

    def close(self) -> None:
        if self._driver is not None and hasattr(self._driver, "close"):
            with contextlib.suppress(Exception):
                self._driver.close()
        self._driver = None
        super().close()
