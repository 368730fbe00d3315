"""The browser pool: one Chromium per process, a context per env slot, one event loop.

:class:`BrowserRuntime` owns a background thread running an asyncio loop, the async
Playwright driver, one Chromium (Debian's binary, launched through ``executable_path``) and
the :class:`~agentgym.simulators.browser.server.SiteServer`. Envs hold a :class:`Slot`: a
browser context of its own with one tab on its own origin, plus the site behind it. Every
page, popup, dialog and download of a slot belongs to its context and is closed with it, so
closing an env leaves nothing behind in the shared Chromium. A slot is one tab: the page
helper folds new-window requests (``target=_blank``, ``window.open``, Shift/Ctrl+Enter or
click) into that tab, and a window that opens anyway is closed at once and reported
(:attr:`Slot.popups`). Envs on several threads step concurrently (their coroutines interleave
on the loop); every call has a timeout.

A forked child never uses its parent's runtime: the loop thread does not survive ``fork``,
so an ``os.register_at_fork`` hook drops the inherited runtime in the child, whose first
browser env then starts its own Chromium (Gymnasium's async vector envs fork their workers).

Faults are contained per slot: a crashed renderer or a closed tab gets a fresh tab that
reopens the slot's current address (the site's state lives in Python, so nothing the server
knows is lost); a dead browser is relaunched once for everyone, and each slot reattaches
lazily on its next call. Tabs are recycled after ``recycle_after`` resets because renderer
memory drifts over thousands of steps. Chromium is not relaunched once the Playwright driver
has exited: Ctrl-C reaches the driver too (it shares the terminal's process group) and it
closes the browser on its way out, so the loss is the interrupt, not a crash; calls then
fail at once with :class:`BrowserUnavailableError` instead of relaunching over and over.

Nothing leaves the machine, at no cost per request: Chromium sends every request that is
not for ``localhost`` or ``*.localhost`` to a proxy address on which nothing listens (a
port this runtime holds bound but never listens on), so it fails to connect; IP literals
(``127.0.0.1``, ``10.x``) included, as the proxy bypass list drops Chromium's implicit
loopback exception. The host resolver also maps every other name to nothing. (A Playwright
route did this before; it paused every request of every page for a round trip through the
driver, about a quarter of a browser step's CPU.)

Chromium runs with its own sandbox where the machine allows it (also as root, through an
unprivileged uid; see :mod:`.sandbox`), else with ``--no-sandbox`` and a warning;
``runtime.sandboxed`` says which.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import logging
import multiprocessing.util
import os
import shutil
import signal
import socket
import threading
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agentgym.simulators.browser.sandbox import SandboxLauncher, sandbox_mode
from agentgym.simulators.browser.server import SiteServer, static_text
from agentgym.simulators.browser.site import Site

from agentgym.error import DependencyMissingError, InvalidEnvironmentVariableError

logger = logging.getLogger(__name__)
T = TypeVar("T")

CHROMIUM_CANDIDATES = ("/usr/lib/chromium/chromium", "/usr/lib/chromium-browser/chromium-browser")
CHROMIUM_FLAGS = (
    "--disable-gpu",
    # Compositing runs on a thread of the browser process, not in a GPU process of its own:
    # one process less per browser, and no IPC hop for every frame.
    "--in-process-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # One list: Chromium keeps only the last --disable-features, so Playwright's own list
    # (as of 1.65) is repeated here next to ours.
    "--disable-features=BackForwardCache,Translate,MediaRouter,"
    "AvoidUnnecessaryBeforeUnloadCheckSync,DestroyProfileOnBrowserClose,HttpsUpgrades,"
    "HttpsFirstBalancedModeAutoEnable,LensOverlay,PaintHolding,ThirdPartyStoragePartitioning,"
    "AvoidCorsURLLoaderRestartOnRedirect,OptimizationHints,NetworkTimeServiceQuerying,"
    "AimEnabled,PreconnectToSearch,"
    # A cross-document navigation reuses the frame's host instead of building a new one.
    "RenderDocument",
    # Tiny pages: one raster thread, and V8 compiles functions when first called. With the
    # line above, about 20% less CPU per navigation (benchmarks/bench_browser_scale.py).
    "--num-raster-threads=1",
    "--js-flags=--max-lazy",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--disable-extensions",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE *.localhost",
)
VIEWPORT = {"width": 1024, "height": 768}
TABS_OPENING_AT_ONCE = 4


def find_chromium(explicit: str | None = None) -> str:
    """The Chromium binary to launch, or a DependencyMissingError saying how to get one.

    A set ``AGENTGYM_CHROMIUM`` is the user's explicit choice: when it names no runnable
    browser this raises an error naming the variable instead of falling back silently.
    """
    env_path = os.environ.get("AGENTGYM_CHROMIUM")
    if not explicit and env_path:
        return check_chromium_binary(env_path, "AGENTGYM_CHROMIUM")
    for path in (explicit, *CHROMIUM_CANDIDATES):
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    which = shutil.which("chromium")
    if which and os.path.realpath(which).endswith("/chromium") and not which.startswith("/usr/bin"):
        return which
    raise DependencyMissingError(
        "Chromium (the real browser binary, e.g. /usr/lib/chromium/chromium)",
        "apt-get install -y chromium   (or set AGENTGYM_CHROMIUM=/path/to/chrome)",
    )


def check_chromium_binary(path: str, variable: str) -> str:
    """``path`` if it is a Chromium that answers ``--version``; else a typed error naming
    ``variable`` (a missing file, a non-executable one, or a binary that fails to start)."""
    import subprocess

    fix = f"Point {variable} at a Chromium binary (e.g. /usr/lib/chromium/chromium) or unset it."
    if not os.path.isfile(path):
        raise InvalidEnvironmentVariableError(variable, path, "names no file", fix)
    if not os.access(path, os.X_OK):
        raise InvalidEnvironmentVariableError(variable, path, "is not executable", fix)
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InvalidEnvironmentVariableError(
            variable, path, f"could not be started ({exc})", fix
        ) from None
    if out.returncode != 0 or "chrom" not in (out.stdout + out.stderr).lower():
        detail = (out.stderr or out.stdout).strip().splitlines()[-1:] or ["no output"]
        raise InvalidEnvironmentVariableError(
            variable,
            path,
            f"is not a working Chromium (`--version` exited {out.returncode}: {detail[0][:120]})",
            fix,
        )
    return path


def _import_playwright() -> Any:
    try:
        from playwright.async_api import async_playwright
    except ImportError as exc:
        raise DependencyMissingError(
            "The Python package playwright", "pip install 'agentgym-suite[web]'"
        ) from exc
    return async_playwright


@dataclass
class Slot:
    """One env's place in the pool: an id (and origin), its site, and its tab."""

    id: int
    origin: str
    site: Site
    page: Any = None
    generation: int = -1
    crashed: bool = False
    loads: int = 0
    url: str = "/"
    resets: int = 0
    lock: asyncio.Lock | None = None
    events: list[str] = field(default_factory=list)
    context: Any = None
    popups: int = 0
    """Windows the slot's page opened although the page helper folds them (closed at once)."""
    popup_seen: asyncio.Event | None = None
    context_generation: int = -1
    opening: asyncio.Task[None] | None = None


class BrowserRuntime:
    """One Chromium, one site server and many slots, driven from any thread."""

    def __init__(
        self,
        *,
        executable_path: str | None = None,
        headless: bool = True,
        launch_timeout: float = 60.0,
        recycle_after: int = 200,
        sandbox: bool | None = None,
    ):
        """``sandbox``: True requires Chromium's sandbox, False turns it off, None (default;
        or the ``AGENTGYM_BROWSER_SANDBOX`` variable) tries it and falls back to
        ``--no-sandbox`` with a warning where the machine cannot run it."""
        self.executable_path = find_chromium(executable_path)
        self.sandbox = sandbox_mode(sandbox)
        self.sandboxed: bool | None = None
        """Whether the running Chromium has its sandbox (None before the first launch)."""
        self._launcher: SandboxLauncher | None = None
        self._async_playwright = _import_playwright()
        self.headless = headless
        self.launch_timeout = launch_timeout
        self.recycle_after = recycle_after
        self.token = uuid.uuid4().hex[:12]
        self.server = SiteServer()
        self.generation = 0
        self.restarts = 0
        self._driver_pids: list[int] = []
        self._driver_gone = False
        self._slots: dict[int, Slot] = {}
        self._next_slot = 0
        self._pw: Any = None
        self._browser: Any = None
        self._alive = False
        self._closed = False
        self._launch_lock: asyncio.Lock | None = None
        self._tab_gate: asyncio.Semaphore | None = None
        # bound, never listening: a connection to it is refused (the proxy of every request
        # that is not for the site server)
        self._dead_end = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._dead_end.bind(("127.0.0.1", 0))
        self._loop = asyncio.new_event_loop()
        self._loop.set_exception_handler(self._loop_exception)
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="agentgym-browser", daemon=True
        )
        self._thread.start()
        try:
            self.call(self._start(), timeout=launch_timeout)
        except BaseException:
            self.close()
            raise

    # -- plumbing --------------------------------------------------------------------------

    def call(self, coro: Awaitable[T], timeout: float) -> T:
        """Run a coroutine on the pool's loop and wait for it, at most ``timeout`` seconds."""
        if self._closed:
            raise RuntimeError("the browser runtime is closed")

        async def bounded() -> T:
            return await asyncio.wait_for(coro, timeout)

        fut = asyncio.run_coroutine_threadsafe(bounded(), self._loop)
        try:
            return fut.result(timeout + 5.0)
        except concurrent.futures.TimeoutError as exc:
            fut.cancel()
            raise TimeoutError(f"browser call did not finish in {timeout:.1f} s") from exc

    def gather(self, coros: list[Awaitable[Any]], timeout: float) -> list[Any]:
        """Run several coroutines concurrently; exceptions are returned, not raised."""

        async def run_all() -> list[Any]:
            return await asyncio.gather(*coros, return_exceptions=True)

        return self.call(run_all(), timeout)

    async def _start(self) -> None:
        self._launch_lock = asyncio.Lock()
        self._tab_gate = asyncio.Semaphore(TABS_OPENING_AT_ONCE)
        await self.server.start()
        before = set(_driver_children())
        self._pw = await self._async_playwright().start()
        self._driver_pids = [pid for pid in _driver_children() if pid not in before]
        await self._launch()

    async def _launch_chromium(self, sandboxed: bool) -> Any:
        args = [
            *CHROMIUM_FLAGS,
            f"--agentgym-runtime={self.token}",
            f"--proxy-server=http://127.0.0.1:{self._dead_end.getsockname()[1]}",
            "--proxy-bypass-list=<-loopback>;localhost;*.localhost",
        ]
        executable = self.executable_path
        if sandboxed:
            if self._launcher is None:
                self._launcher = SandboxLauncher(self.executable_path)
            executable = self._launcher.executable
        return await self._pw.chromium.launch(
            executable_path=executable,
            headless=self.headless,
            args=args,
            chromium_sandbox=sandboxed,  # False makes Playwright add --no-sandbox
            timeout=self.launch_timeout * 1000,
        )

    async def _launch(self) -> None:
        if self.sandboxed is None and self.sandbox is not False:
            # First launch: find out whether the sandbox can run here (a failure is fast).
            try:
                self._browser = await self._launch_chromium(True)
                self.sandboxed = True
            except Exception as exc:
                if self.sandbox:
                    raise RuntimeError(
                        "Chromium's sandbox could not start (sandbox=True / "
                        f"AGENTGYM_BROWSER_SANDBOX=1): {str(exc).splitlines()[0][:300]}. It needs "
                        "unprivileged user namespaces and, as root, setpriv; see docs/web.md."
                    ) from exc
                logger.warning(
                    "Chromium's sandbox could not start here (%s); running it with "
                    "--no-sandbox. See docs/web.md.",
                    str(exc).splitlines()[0][:200],
                )
                self.sandboxed = False
                self._browser = await self._launch_chromium(False)
        else:
            if self.sandboxed is None:
                self.sandboxed = False
            self._browser = await self._launch_chromium(self.sandboxed)
        self._browser.on("disconnected", self._on_disconnect)
        self._alive = True
        self.generation += 1

    async def _new_context(self) -> Any:
        """A fresh browser context for one slot: the page helper, and no way off the site."""
        context = await self._browser.new_context(
            viewport=VIEWPORT,
            device_scale_factor=1,
            service_workers="block",
            accept_downloads=False,
            locale="en-US",
            timezone_id="UTC",
        )
        context.set_default_timeout(10_000)
        await context.add_init_script(script=static_text("agent.js"))
        return context

    def _on_disconnect(self, *_: Any) -> None:
        self._alive = False

    async def _ensure_browser(self) -> None:
        assert self._launch_lock is not None
        async with self._launch_lock:
            if self._alive and self._browser is not None and self._browser.is_connected():
                return
            if self._driver_gone or await self._driver_exiting():
                self._driver_gone = True
                raise BrowserUnavailableError(
                    "the Playwright driver has exited (Ctrl-C, or the process is ending), so "
                    "Chromium is not relaunched; make the env again in a new process"
                )
            try:
                if self._browser is not None:
                    await asyncio.wait_for(self._browser.close(), 5.0)
            except Exception:
                pass
            self.restarts += 1
            await self._launch()
            logger.warning("Chromium was gone; relaunched it (restart %d)", self.restarts)

    async def _driver_exiting(self, grace_s: float = 1.0) -> bool:
        """True when the Playwright driver has exited, or does within ``grace_s``.

        On Ctrl-C the driver first closes Chromium, then exits: the browser's disconnect
        arrives a moment before the driver is gone, so a crash is told from an interrupt
        by waiting briefly for the driver.
        """
        if not self._driver_pids:
            return False  # not known (driver started elsewhere): relaunch as before
        deadline = self._loop.time() + grace_s
        while True:
            if not any(_process_running(pid) for pid in self._driver_pids):
                return True
            if self._loop.time() >= deadline:
                return False
            await asyncio.sleep(0.05)

    def _loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """Playwright leaves an unretrieved 'Connection closed' error behind when its driver
        exits (Ctrl-C); that is expected then, so it is logged at debug level, not printed."""
        try:
            quiet = self._closed or self._driver_gone
            quiet = quiet or (
                bool(self._driver_pids)
                and not any(_process_running(pid) for pid in self._driver_pids)
            )
        except Exception:  # interpreter teardown: nothing left worth reporting
            return
        if quiet:
            logger.debug("browser loop after the driver exited: %s", context.get("message"))
            return
        loop.default_exception_handler(context)

    # -- slots -----------------------------------------------------------------------------

    def open_slot(self, site: Site) -> Slot:
        """A new slot (own origin) serving ``site``; its tab opens on first use."""
        slot_id = self._next_slot
        self._next_slot += 1
        slot = Slot(slot_id, self.server.origin(slot_id), site)
        self.server.sites[slot_id] = site
        self._slots[slot_id] = slot
        return slot

    def close_slot(self, slot: Slot) -> None:
        """Forget the slot and close its context: its tab and anything the tab opened."""
        self.server.sites.pop(slot.id, None)
        self._slots.pop(slot.id, None)
        if not self._closed:
            with contextlib.suppress(Exception):
                self.call(self._forget(slot), timeout=30.0)

    async def _forget(self, slot: Slot) -> None:
        """On the loop: let a tab still opening finish, then close the slot's context."""
        if slot.opening is not None and not slot.opening.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(slot.opening)
        context, slot.context, slot.page = slot.context, None, None
        if context is not None:
            await self._close_context(context)

    async def _close_context(self, context: Any) -> None:
        with contextlib.suppress(Exception):
            await context.close()

    async def _close_page(self, page: Any) -> None:
        with contextlib.suppress(Exception):
            await page.close(run_before_unload=False)

    async def ensure_page(self, slot: Slot) -> bool:
        """Make sure the slot has a live tab; True when a new tab had to be opened."""
        if slot.lock is None:
            slot.lock = asyncio.Lock()
        if not (self._alive and self._browser is not None and self._browser.is_connected()):
            await self._ensure_browser()
        page = slot.page
        if (
            page is not None
            and not slot.crashed
            and slot.generation == self.generation
            and not page.is_closed()
        ):
            return False
        if page is not None and not page.is_closed():
            asyncio.get_running_loop().create_task(self._close_page(page))
        slot.page = None
        try:
            await self._new_page(slot)
        except Exception:
            if self._browser is not None and self._browser.is_connected():
                raise  # a slow or failed tab is this slot's problem, not a dead browser
            await self._ensure_browser_forced()
            await self._new_page(slot)
        return True

    async def _new_page(self, slot: Slot) -> None:
        """Give the slot a new tab (in a new context when it has none from this browser).

        The work runs as its own task, shielded from the caller's timeout: a cancelled
        caller leaves the tab and context on the slot (to be used, or closed with the slot),
        never orphaned in Chromium. At most a few tabs are created at once: each starts a
        renderer process, and on a loaded machine dozens at a time starve one another.
        """
        task = slot.opening
        if task is None or task.done():
            task = slot.opening = asyncio.get_running_loop().create_task(self._open_tab(slot))
        await asyncio.shield(task)

    async def _open_tab(self, slot: Slot) -> None:
        assert self._tab_gate is not None
        async with self._tab_gate:
            if slot.context is None or slot.context_generation != self.generation:
                old, slot.context = slot.context, None
                if old is not None:
                    asyncio.get_running_loop().create_task(self._close_context(old))
                slot.context = await self._new_context()
                slot.context_generation = self.generation
            page = await slot.context.new_page()
        if slot.popup_seen is None:
            slot.popup_seen = asyncio.Event()

        def on_crash(*_: Any) -> None:
            slot.crashed = True

        def on_load(*_: Any) -> None:
            slot.loads += 1

        def on_popup(popup: Any) -> None:
            slot.popups += 1
            if slot.popup_seen is not None:
                slot.popup_seen.set()
            asyncio.get_running_loop().create_task(self._close_page(popup))

        page.on("crash", on_crash)
        page.on("domcontentloaded", on_load)
        page.on("popup", on_popup)
        page.set_default_timeout(10_000)
        slot.crashed = False
        slot.generation = self.generation
        slot.page = page
        if slot.id not in self._slots:  # the slot was closed while its tab was opening
            context, slot.context, slot.page = slot.context, None, None
            await self._close_context(context)

    async def _ensure_browser_forced(self) -> None:
        self._alive = False
        await self._ensure_browser()

    async def recycle(self, slot: Slot) -> None:
        """Replace the slot's tab with a fresh one (memory drift, hung renderer)."""
        old = slot.page
        slot.page = None
        if old is not None:
            asyncio.get_running_loop().create_task(self._close_page(old))
        await self.ensure_page(slot)

    # -- introspection for tests and benchmarks ---------------------------------------------

    def browser_pids(self) -> list[int]:
        """Process ids of this runtime's Chromium main process (found by its marker flag).

        A child that Chromium has just forked carries the main process's command line until
        it execs, so a match whose parent also matches is that child, not a second browser.
        """
        parents: dict[int, int] = {}
        marker = f"--agentgym-runtime={self.token}".encode()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    cmd = fh.read().split(b"\0")
                if marker not in cmd or any(part.startswith(b"--type=") for part in cmd):
                    continue
                parents[int(entry)] = _parent_pid(entry)
            except (OSError, IndexError, ValueError):
                continue
        return [pid for pid, ppid in parents.items() if ppid not in parents]

    def kill_browser(self) -> None:
        """SIGKILL this runtime's Chromium (fault injection for tests)."""
        for pid in self.browser_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def memory_rss_mb(self) -> float:
        """Memory of this runtime's Chromium and all its descendants, in MiB.

        Uses the proportional set size (shared pages split between the processes sharing
        them) where the kernel reports it, else RSS (an upper bound).
        """
        parents: dict[int, int] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                parents[int(entry)] = _parent_pid(entry)
            except (OSError, ValueError, IndexError):
                continue
        family = set(self.browser_pids())
        grew = True
        while grew:
            grew = False
            for pid, ppid in parents.items():
                if ppid in family and pid not in family:
                    family.add(pid)
                    grew = True
        total = 0
        for pid in family:
            try:
                with open(f"/proc/{pid}/smaps_rollup") as fh:
                    pss = next(ln for ln in fh if ln.startswith("Pss:"))
                total += int(pss.split()[1]) * 1024
                continue
            except (OSError, ValueError, StopIteration):
                pass
            try:
                with open(f"/proc/{pid}/statm") as fh:
                    total += int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, ValueError):
                continue
        return total / 2**20

    @property
    def slots(self) -> dict[int, Slot]:
        return dict(self._slots)

    def open_pages(self) -> tuple[int, int]:
        """(contexts, pages) open in this runtime's Chromium right now, as the driver sees them."""

        async def count() -> tuple[int, int]:
            if self._browser is None or not self._browser.is_connected():
                return 0, 0
            contexts = self._browser.contexts
            return len(contexts), sum(len(c.pages) for c in contexts)

        return self.call(count(), 10.0)

    # -- shutdown --------------------------------------------------------------------------

    def _abandon(self) -> None:
        """Make this copy inert (a forked child's view of its parent's runtime): calls fail
        at once and ``close`` touches nothing, since the browser is the parent's."""
        self._closed = True

    def close(self) -> None:
        """Close the browser, the server and the loop thread. Idempotent."""
        if self._closed:
            return
        try:
            fut = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
            fut.result(20.0)
        except Exception:
            pass
        self._closed = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5.0)
        if not self._thread.is_alive():
            # a stopped loop still holds its self-pipe sockets: close it, or interpreter exit
            # warns "unclosed event loop" (ResourceWarning) after any web env
            with contextlib.suppress(Exception):
                self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()
        if self._launcher is not None:
            self._launcher.cleanup()
        self._dead_end.close()

    async def _shutdown(self) -> None:
        for coro_fn in (
            lambda: self._browser.close() if self._browser is not None else None,
            lambda: self._pw.stop() if self._pw is not None else None,
            self.server.stop,
        ):
            try:
                coro = coro_fn()
                if coro is not None:
                    await asyncio.wait_for(coro, 10.0)
            except Exception:
                pass


_RUNTIME: BrowserRuntime | None = None
_RUNTIME_LOCK = threading.Lock()


def get_runtime(factory: Callable[[], BrowserRuntime] | None = None) -> BrowserRuntime:
    """The process-wide runtime, started on first use and closed at exit."""
    global _RUNTIME
    with _RUNTIME_LOCK:
        if _RUNTIME is None or _RUNTIME._closed:
            _RUNTIME = (factory or BrowserRuntime)()
            atexit.register(_RUNTIME.close)
            # a multiprocessing child (an async vector env's worker) ends without atexit
            # handlers; multiprocessing's own exit finalizers still run there
            multiprocessing.util.Finalize(None, _RUNTIME.close, exitpriority=0)
        return _RUNTIME


def _drop_inherited_runtime() -> None:
    """In a forked child: forget the parent's runtime, which is only half there.

    ``fork`` copies the runtime object but not its loop thread, so a call on it would wait
    forever, and its Playwright pipes and Chromium belong to the parent. The child marks it
    abandoned (its ``close`` then does nothing, also at exit) and starts its own on first use.
    """
    global _RUNTIME, _RUNTIME_LOCK
    _RUNTIME_LOCK = threading.Lock()  # another thread may have held it at the fork
    inherited, _RUNTIME = _RUNTIME, None
    if inherited is not None:
        inherited._abandon()


os.register_at_fork(after_in_child=_drop_inherited_runtime)


def shutdown_runtime() -> None:
    """Close the process-wide runtime (a later :func:`get_runtime` starts a new one)."""
    global _RUNTIME
    with _RUNTIME_LOCK:
        if _RUNTIME is not None:
            _RUNTIME.close()
            _RUNTIME = None


class BrowserUnavailableError(RuntimeError):
    """The browser cannot be used any more in this process (its Playwright driver exited)."""


def _driver_children() -> list[int]:
    """Process ids of this process's Playwright driver children (``node ... run-driver``)."""
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if _parent_pid(entry) != me:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                if b"run-driver" in fh.read().split(b"\0"):
                    found.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return found


def _process_running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (exited, not yet reaped)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def _parent_pid(pid: str) -> int:
    """The parent of process ``pid``, read from /proc (raises OSError once it has gone)."""
    with open(f"/proc/{pid}/stat", "rb") as fh:
        # the command name (field 2) may hold spaces: the ppid is 2 fields after its ')'
        return int(fh.read().rsplit(b")", 1)[1].split()[1])
