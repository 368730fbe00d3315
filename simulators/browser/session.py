"""A browser session: one env's slot driven with trusted input events.

:class:`BrowserSession` offers the same methods as
:class:`~agentgym.simulators.browser.dom.TextBrowser` (``open``, ``click``, ``fill``,
``select``, ``set_checked``, ``press``, ``scroll``, ``goto``, ``back``, ``observe``), each
returning ``None`` or an error message. Clicks are real mouse events at the centre the page
script computed (``page.mouse.click``); text goes in through the keyboard's ``insertText``.
After every action the session observes the page, waiting for any navigation the action
started (no fixed sleeps) and for the site's own requests to settle.

Every call is bounded by a timeout. When a call fails because the tab crashed, hung or the
browser died, the session gets a fresh tab, reopens the current address and reports what
happened in the returned error, so the env keeps working.
"""

from __future__ import annotations

import asyncio
import base64
import io
import logging
from typing import Any

import numpy as np
from agentgym.simulators.browser.dom import PageObservation
from agentgym.simulators.browser.runtime import BrowserRuntime, Slot
from agentgym.simulators.browser.server import static_text
from agentgym.simulators.browser.site import Site

logger = logging.getLogger(__name__)

_OBSERVE_JS = static_text("observe.js")
_LOCATE_JS = static_text("locate.js")
_SELECT_JS = (
    '(bid) => { const e = document.querySelector(`[data-bid="${CSS.escape(bid)}"]`);'
    " if (e && e.select) e.select(); }"
)
_SWAP_TO_JS = "(url) => (window.__agSwapTo ? window.__agSwapTo(url) : false)"
# where the tab is in its session history (the Navigation API's entry index)
_HISTORY_ENTRY_JS = "() => (window.navigation ? navigation.currentEntry.index : -1)"
_RESET_LEAVING_JS = "() => { if (window.__ag) window.__ag.leaving = false; }"


class BrowserError(RuntimeError):
    """A browser action failed in a way the env reports to the model."""


class BrowserSession:
    """Drive one slot of a :class:`BrowserRuntime` (see the module docstring)."""

    def __init__(
        self,
        runtime: BrowserRuntime,
        site: Site,
        *,
        action_timeout: float = 10.0,
        navigation_timeout: float = 10.0,
    ):
        self.runtime = runtime
        self.site = site
        self.slot: Slot = runtime.open_slot(site)
        self.action_timeout = action_timeout
        self.navigation_timeout = navigation_timeout
        self._last: PageObservation | None = None
        self._cdp: Any = None
        self._cdp_page: Any = None
        self.notice: str | None = None
        #: True when the last action failed because of the browser, not the model.
        self.infra_error = False
        self._closed = False

    @property
    def url(self) -> str:
        return self._last.url if self._last else self.slot.url

    # -- the public, synchronous API --------------------------------------------------------

    def open(self, path: str, *, fresh: bool = False) -> str | None:
        """Navigate to a path of the site (``fresh``: count a reset, maybe recycle the tab)."""
        return self._run(self._open(path, fresh), navigates=True)

    def click(self, bid: str) -> str | None:
        return self._run(self._click(bid))

    def fill(self, bid: str, text: str) -> str | None:
        return self._run(self._fill(bid, text))

    def select(self, bid: str, option: str) -> str | None:
        return self._run(self._select(bid, option))

    def set_checked(self, bid: str, value: bool) -> str | None:
        return self._run(self._set_checked(bid, value))

    def press(self, key: str) -> str | None:
        return self._run(self._press(key))

    def scroll(self, direction: str) -> str | None:
        return self._run(self._scroll(direction))

    def goto(self, path: str) -> str | None:
        return self._run(self._goto(path), navigates=True)

    def back(self) -> str | None:
        return self._run(self._back())

    def observe(self) -> PageObservation:
        """The observation made at the end of the last action (or a new one)."""
        if self._last is None:
            self._run(self._noop())
        assert self._last is not None
        return self._last

    def aria_snapshot(self, max_chars: int = 4000) -> str:
        """Playwright's ARIA snapshot of the page body (YAML-like text), cut to ``max_chars``."""

        async def snap() -> str:
            await self.runtime.ensure_page(self.slot)
            return await self.slot.page.locator("body").aria_snapshot(
                timeout=self.action_timeout * 1000
            )

        try:
            text = self.runtime.call(snap(), self.action_timeout)
        except Exception as exc:
            return f"(no accessibility snapshot: {_describe(exc)})"
        return text if len(text) <= max_chars else text[:max_chars] + "\n[... cut]"

    def screenshot(self, kind: str = "png", quality: int = 80) -> np.ndarray:
        """The viewport as an HxWx3 uint8 array (CDP ``Page.captureScreenshot``)."""
        from PIL import Image

        async def shot() -> bytes:
            await self.runtime.ensure_page(self.slot)
            page = self.slot.page
            if self._cdp is None or self._cdp_page is not page:
                self._cdp = await page.context.new_cdp_session(page)
                self._cdp_page = page
            params: dict[str, Any] = {"format": kind, "optimizeForSpeed": True}
            if kind == "jpeg":
                params["quality"] = quality
            result = await self._cdp.send("Page.captureScreenshot", params)
            return base64.b64decode(result["data"])

        try:
            data = self.runtime.call(shot(), self.action_timeout)
        except Exception as exc:
            logger.warning("screenshot failed: %s", exc)
            self._cdp = None
            return np.zeros((8, 8, 3), dtype=np.uint8)
        with Image.open(io.BytesIO(data)) as img:
            return np.asarray(img.convert("RGB"), dtype=np.uint8).copy()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.runtime.close_slot(self.slot)

    # -- machinery -------------------------------------------------------------------------

    def _run(self, coro: Any, *, navigates: bool = False) -> str | None:
        """Run one action + observation; turn every failure into an error message.

        ``navigates``: the action loads an address itself (open, goto), so a tab opened for
        it needs no reload of the current address first.
        """
        self.notice = None
        self.infra_error = False
        try:
            return self.runtime.call(
                self._guarded(coro, navigates), self.action_timeout + self.navigation_timeout
            )
        except Exception as exc:  # timeouts, crashes, a dead browser
            coro.close() if hasattr(coro, "close") else None
            message = _describe(exc)
            self.infra_error = True
            recovered = self._recover()
            return f"{message}; {recovered}"

    async def _guarded(self, coro: Any, navigates: bool = False) -> str | None:
        # A tab is "lost" only when the slot had one that crashed, was closed or belongs to
        # a browser that restarted. The first tab of a slot is not a loss: nothing is
        # reported then, and an action that navigates anyway does not load the page twice.
        lost = self.slot.crashed or self.slot.page is not None
        fresh_tab = await self.runtime.ensure_page(self.slot)
        if fresh_tab and lost and self.slot.url:
            await self._reopen()
            self.notice = (
                "the browser tab had to be reopened (crash or restart); unsaved page state was lost"
            )
        elif fresh_tab and self.slot.url and not navigates:
            await self._reopen()
        assert self.slot.lock is not None and self.slot.popup_seen is not None
        if self.slot.popup_seen.is_set():  # opened after the last action had been observed
            self.slot.popup_seen.clear()
            self.notice = "the page opened a new window; it was closed (a session is one tab)"
        async with self.slot.lock:
            return await coro

    async def _reopen(self) -> None:
        page = self.slot.page
        await page.goto(
            self.slot.origin + self.slot.url,
            wait_until="domcontentloaded",
            timeout=self.navigation_timeout * 1000,
        )
        self._last = await self._observe(self.slot.loads)

    def _recover(self) -> str:
        """After a failed call: get a working tab on the current address again."""

        async def fix() -> None:
            if self.slot.page is not None and not self.slot.crashed:
                try:  # is the tab responsive?
                    await asyncio.wait_for(self.slot.page.evaluate("1"), 2.0)
                except Exception:
                    await self.runtime.recycle(self.slot)
            await self.runtime.ensure_page(self.slot)
            try:
                await self._reopen()
            except Exception:
                self.slot.url = self.site.start_path
                await self.runtime.recycle(self.slot)
                await self._reopen()

        try:
            self.runtime.call(fix(), self.action_timeout + self.navigation_timeout)
            return f"the page was reloaded at {self.slot.url}"
        except Exception as exc:
            self._last = None
            return f"the page could not be reloaded ({_describe(exc)})"

    async def _observe(self, loads_before: int) -> PageObservation:
        page = self.slot.page
        for _ in range(5):
            try:
                data = await page.evaluate(_OBSERVE_JS)
            except Exception as exc:
                text = str(exc)
                if "context was destroyed" in text or "navigat" in text.lower():
                    data = {"leaving": True}
                else:
                    raise
            if not data.get("leaving"):
                url = data.get("href", "")
                if not url.startswith(self.slot.origin + "/"):
                    raise BrowserError(f"the page left the site ({url[:80]})")
                if data.get("folded"):
                    self.notice = str(data["folded"])
                obs = PageObservation.from_js(data)
                self.slot.url = url[len(self.slot.origin) :]
                self._last = obs
                return obs
            if self.slot.loads == loads_before and not await self._wait_for_load(page):
                await page.evaluate(_RESET_LEAVING_JS)
                raise BrowserError("a navigation did not finish in time") from None
            loads_before = self.slot.loads
        raise BrowserError("the page kept navigating")

    async def _wait_for_load(self, page: Any) -> bool:
        """Wait for the tab's next load; False on timeout. A window the page opened instead
        (the page helper folds them, so this is a safety net) is closed by the runtime: the
        tab is then not navigating, and the wait ends at once with a notice."""
        seen = self.slot.popup_seen
        assert seen is not None
        if seen.is_set():
            seen.clear()
            return await self._popup_refused(page)
        load = asyncio.ensure_future(
            page.wait_for_event("domcontentloaded", timeout=self.navigation_timeout * 1000)
        )
        popup = asyncio.ensure_future(seen.wait())
        try:
            await asyncio.wait({load, popup}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (load, popup):
                task.cancel()
            await asyncio.gather(load, popup, return_exceptions=True)
        if load.done() and not load.cancelled() and load.exception() is None:
            return True
        if seen.is_set():
            seen.clear()
            return await self._popup_refused(page)
        return False

    async def _popup_refused(self, page: Any) -> bool:
        self.notice = "the page opened a new window; it was closed (a session is one tab)"
        await page.evaluate(_RESET_LEAVING_JS)
        return True

    async def _after(self, loads_before: int, error: str | None = None) -> str | None:
        try:
            await self._observe(loads_before)
        except BrowserError as exc:
            if "left the site" in str(exc):
                await self._reopen()
                return f"navigation outside the site was blocked; back at {self.slot.url}"
            raise
        return error

    async def _noop(self) -> str | None:
        return await self._after(self.slot.loads)

    async def _open(self, path: str, fresh: bool) -> str | None:
        if fresh:
            self.slot.resets += 1
            if self.slot.resets % self.runtime.recycle_after == 0:
                await self.runtime.recycle(self.slot)
            elif await self._swap_to(path):
                return await self._after(self.slot.loads)
        return await self._goto(path)

    async def _swap_to(self, path: str) -> bool:
        """A reset on a site page that swaps its body in (``static/swap.js``): fetch the start
        page and swap it in instead of loading a new document (the same page and element
        ids, at a fraction of the CPU). False where the page cannot (another origin, a
        document still loading or leaving, a site without the script): then it is loaded."""
        page = self.slot.page
        if page is None or not page.url.startswith(self.slot.origin + "/"):
            return False
        try:
            return bool(await page.evaluate(_SWAP_TO_JS, self.slot.origin + path))
        except Exception:  # a document going away: load the page instead
            return False

    async def _locate(self, bid: str) -> dict[str, Any]:
        return await self.slot.page.evaluate(_LOCATE_JS, bid)

    async def _click(self, bid: str) -> str | None:
        loads = self.slot.loads
        where = await self._locate(bid)
        if "error" in where:
            return await self._after(loads, where["error"])
        if where.get("disabled"):
            return await self._after(loads, f"element [{bid}] is disabled")
        await self.slot.page.mouse.click(where["x"], where["y"])
        return await self._after(loads)

    async def _fill(self, bid: str, text: str) -> str | None:
        loads = self.slot.loads
        where = await self._locate(bid)
        if "error" in where:
            return await self._after(loads, where["error"])
        if where.get("disabled"):
            return await self._after(loads, f"element [{bid}] is disabled")
        page = self.slot.page
        await page.mouse.click(where["x"], where["y"])
        await page.evaluate(_SELECT_JS, bid)
        if text:
            await page.keyboard.insert_text(text)
        else:
            await page.keyboard.press("Delete")
        return await self._after(loads)

    async def _select(self, bid: str, option: str) -> str | None:
        loads = self.slot.loads
        where = await self._locate(bid)
        if "error" in where:
            return await self._after(loads, where["error"])
        sel = f'[data-bid="{bid}"]'
        try:
            await self.slot.page.select_option(sel, label=option, timeout=2000)
        except Exception:
            try:
                await self.slot.page.select_option(sel, value=option, timeout=1000)
            except Exception:
                return await self._after(loads, f"dropdown [{bid}] has no option {option!r}")
        return await self._after(loads)

    async def _set_checked(self, bid: str, value: bool) -> str | None:
        loads = self.slot.loads
        where = await self._locate(bid)
        if "error" in where:
            return await self._after(loads, where["error"])
        if where.get("checked") is None:
            return await self._after(loads, f"element [{bid}] is not a checkbox or radio button")
        if bool(where["checked"]) != value:
            if where.get("disabled"):
                return await self._after(loads, f"element [{bid}] is disabled")
            await self.slot.page.mouse.click(where["x"], where["y"])
        return await self._after(loads)

    async def _press(self, key: str) -> str | None:
        loads = self.slot.loads
        try:
            await self.slot.page.keyboard.press(key)
        except Exception as exc:
            if "Unknown key" in str(exc):
                return await self._after(loads, f"unknown key {key!r}")
            raise
        return await self._after(loads)

    async def _scroll(self, direction: str) -> str | None:
        loads = self.slot.loads
        dx, dy = {"up": (0, -600), "down": (0, 600), "left": (-600, 0), "right": (600, 0)}[
            direction
        ]
        page = self.slot.page
        await page.mouse.move(VIEW_CENTRE[0], VIEW_CENTRE[1])
        await page.mouse.wheel(dx, dy)
        return await self._after(loads)

    async def _goto(self, path: str) -> str | None:
        loads = self.slot.loads
        await self.slot.page.goto(
            self.slot.origin + path,
            wait_until="domcontentloaded",
            timeout=self.navigation_timeout * 1000,
        )
        return await self._after(loads)

    async def _back(self) -> str | None:
        loads = self.slot.loads
        page = self.slot.page
        entry = await page.evaluate(_HISTORY_ENTRY_JS)
        resp = await page.go_back(
            wait_until="domcontentloaded", timeout=self.navigation_timeout * 1000
        )
        if resp is None and self.slot.loads == loads:
            # no load: either there was nothing to go back to, or the entry belongs to this
            # same document (a page that swapped its body in, static/swap.js, which fetches
            # the address again itself on the way back)
            try:
                moved = await page.evaluate(_HISTORY_ENTRY_JS) != entry
            except Exception:  # the document is being replaced: that is a move too
                moved = True
            if not moved:
                return await self._after(loads, "there is no previous page")
        return await self._after(loads)


VIEW_CENTRE = (512, 384)


def _describe(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if isinstance(exc, TimeoutError | asyncio.TimeoutError) or "Timeout" in text:
        return "the browser did not respond in time"
    if "crash" in text.lower():
        return "the page crashed"
    if "closed" in text.lower() or "disconnected" in text.lower():
        return "the browser tab or browser was closed"
    return f"browser error: {text[:200]}"
