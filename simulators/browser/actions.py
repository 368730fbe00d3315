"""The browser actions as tools, checked once and run in either mode.

:data:`BROWSER_TOOLS` are the tool schemas (through the suite's parser; model text is never
executed). :func:`apply` checks a parsed call against the last observation (does the element
exist, does it have the right role, is the text too long, is the address inside the site)
and then runs it on a :class:`~agentgym.simulators.browser.session.BrowserSession` or a
:class:`~agentgym.simulators.browser.dom.TextBrowser`, which expose the same methods. It
returns ``None`` or an error message for the observation.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Protocol

from agentgym.simulators.browser.dom import PageObservation

from agentgym.parsing import Tool
from agentgym.text import safe_text

MAX_FILL_CHARS = 10_000
MAX_PATH_CHARS = 2_000
_KEY = re.compile(r"^((Control|Shift|Alt|Meta)\+){0,3}([A-Za-z0-9]+|[!-~])$")
_BID = {"type": "string", "description": 'The element id shown in brackets, e.g. "12".'}


def _tool(name: str, description: str, props: dict[str, Any] | None = None) -> Tool:
    props = props or {}
    return Tool(
        name=name,
        description=description,
        parameters={
            "type": "object",
            "properties": props,
            "required": list(props),
            "additionalProperties": False,
        },
    )


CLICK = _tool("click", "Click an element (link, button, tab, checkbox, option...).", {"bid": _BID})
FILL = _tool(
    "fill",
    "Replace the text of a text field with new text.",
    {"bid": _BID, "text": {"type": "string", "description": "The text to type."}},
)
SELECT = _tool(
    "select",
    "Choose an option of a dropdown by its label.",
    {"bid": _BID, "option": {"type": "string", "description": "The option's label."}},
)
CHECK = _tool("check", "Make sure a checkbox, radio button or switch is on.", {"bid": _BID})
UNCHECK = _tool("uncheck", "Make sure a checkbox or switch is off.", {"bid": _BID})
PRESS = _tool(
    "press",
    "Press a key on the focused element, e.g. Enter, Tab, Escape, ArrowDown, Control+a.",
    {"key": {"type": "string", "description": "Key name, optionally with modifiers."}},
)
SCROLL = _tool(
    "scroll",
    "Scroll the page.",
    {"direction": {"type": "string", "enum": ["up", "down", "left", "right"]}},
)
GOTO = _tool(
    "goto",
    "Open a path of this site, e.g. /search?q=shoes (other sites are not reachable).",
    {"path": {"type": "string", "description": "A path starting with /."}},
)
BACK = _tool("back", "Go back to the previous page.")
ANSWER = _tool(
    "answer",
    "Give the final answer to the task (ends the episode).",
    {"text": {"type": "string", "description": "The answer."}},
)

BROWSER_TOOLS: tuple[Tool, ...] = (CLICK, FILL, SELECT, CHECK, UNCHECK, PRESS, SCROLL, GOTO, BACK)
"""Every navigation/input tool; envs that end with an answer add :data:`ANSWER`."""


class Driver(Protocol):
    """What :func:`apply` needs: a BrowserSession or a TextBrowser."""

    def click(self, bid: str) -> str | None: ...
    def fill(self, bid: str, text: str) -> str | None: ...
    def select(self, bid: str, option: str) -> str | None: ...
    def set_checked(self, bid: str, value: bool) -> str | None: ...
    def press(self, key: str) -> str | None: ...
    def goto(self, path: str) -> str | None: ...
    def back(self) -> str | None: ...


def check_path(path: str) -> str | None:
    """Why ``path`` may not be opened (external, file:, javascript:...), or None."""
    if not isinstance(path, str) or not path:
        return "goto needs a path such as /"
    if len(path) > MAX_PATH_CHARS:
        return f"the path is too long ({len(path)} characters; at most {MAX_PATH_CHARS})"
    low = path.strip().lower()
    if re.match(r"^[a-z][a-z0-9+.-]*:", low):
        return f"only paths of this site can be opened, not {path.split(':', 1)[0]}: addresses"
    if not path.startswith("/") or path.startswith("//") or "\\" in path:
        return "goto takes a path of this site that starts with a single /, e.g. /search?q=shoes"
    if any(ord(c) < 32 for c in path):
        return "the path contains control characters"
    return None


def apply(
    driver: Any, name: str, args: Mapping[str, Any], page: PageObservation | None
) -> str | None:
    """Check and run one tool call; ``None`` on success, else the error for the model.

    String arguments lose their lone surrogates first (:func:`agentgym.text.safe_text`), so
    both drivers get the same text, the page never stores what UTF-8 cannot hold, and an
    error that echoes an argument is valid UTF-8.
    """
    args = {k: safe_text(v) if isinstance(v, str) else v for k, v in args.items()}
    elements = {e["bid"]: e for e in (page.elements if page else [])}

    def element(
        bid: Any, roles: tuple[str, ...] | None, what: str
    ) -> tuple[dict | None, str | None]:
        bid = str(bid)
        info = elements.get(bid)
        if info is None:
            return None, f"there is no element [{bid[:40]}] on this page"
        if roles is not None and info["role"] not in roles:
            return None, f"element [{bid}] is a {info['role']}, not {what}"
        return info, None

    if name == "click":
        info, err = element(args["bid"], None, "")
        if err:
            return err
        if info and info.get("disabled"):
            return f"element [{info['bid']}] is disabled"
        return driver.click(str(args["bid"]))
    if name == "fill":
        text = args["text"]
        if len(text) > MAX_FILL_CHARS:
            return f"the text is too long ({len(text)} characters; at most {MAX_FILL_CHARS})"
        if "\x00" in text:
            return "the text contains a NUL character"
        info, err = element(args["bid"], ("textbox",), "a text field")
        if err:
            return err
        if info and info.get("disabled"):
            return f"element [{info['bid']}] is disabled"
        return driver.fill(str(args["bid"]), text)
    if name == "select":
        info, err = element(args["bid"], ("combobox",), "a dropdown")
        if err:
            return err
        assert info is not None
        options = info.get("options")
        if options is not None and args["option"] not in options:
            return f"dropdown [{info['bid']}] has no option {args['option'][:80]!r}; options: {options}"
        return driver.select(str(args["bid"]), args["option"])
    if name in ("check", "uncheck"):
        roles = ("checkbox", "radio", "switch")
        info, err = element(args["bid"], roles, "a checkbox, radio button or switch")
        if err:
            return err
        assert info is not None
        want = name == "check"
        if info.get("checked") == want:
            return None
        if info["role"] == "radio" and not want:
            return f"radio button [{info['bid']}] cannot be unchecked; check another option"
        if info["role"] == "switch":
            return driver.click(info["bid"])
        return driver.set_checked(info["bid"], want)
    if name == "press":
        key = args["key"]
        if not _KEY.match(key):
            return f"unknown key {key[:40]!r}; use names like Enter, Tab, Escape, ArrowDown, a"
        return driver.press(key)
    if name == "scroll":
        scroll = getattr(driver, "scroll", None)
        return scroll(args["direction"]) if scroll else None
    if name == "goto":
        problem = check_path(args["path"])
        return problem if problem else driver.goto(args["path"])
    if name == "back":
        return driver.back()
    return f"unknown browser action {name!r}"
