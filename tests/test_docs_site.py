"""The documentation site builds with warnings as errors, and reads well in a real browser.

The site is built once per module (``mkdocs build --strict``: broken links, bad docstrings);
then every page is opened in Chromium at a 1280 px wide window and checked for what issue 26
(point 7) found: Sphinx roles shown as raw text (``:class:Recorder``), code blocks whose end
is hidden behind a scroll bar, env ids split across lines in table cells. The trajectory
viewer is checked at 400 px: both panes fit, and the episode gets most of the width.

The conversions behind it (``scripts/mkdocs_rst.py``, ``scripts/mkdocs_env_ids.py``) are
pinned on known inputs first; those tests are fast.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import gymnasium as gym
import pytest
from agentgym.wrappers import Record

import agentgym.trajectory as trj

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/lib/chromium/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


def _script(name: str) -> ModuleType:
    """A module of ``scripts/`` (mkdocs hooks and extensions are files, not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the conversions, on known inputs ------------------------------------------------------


def test_sphinx_roles_become_code_spans() -> None:
    pytest.importorskip("griffe", reason="the docs extra: pip install -e '.[docs]'")
    rst = _script("mkdocs_rst")
    convert = rst.rst_inline_to_markdown
    assert convert("see :class:`agentgym.core.AgentEnv`.") == "see `agentgym.core.AgentEnv`."
    assert convert(":func:`~agentgym.make` and :meth:`~.Recorder.close`") == ("`make` and `close`")
    for role in ("mod", "class", "func", "meth", "attr", "data", "obj", "exc", "py:class"):
        assert convert(f":{role}:`x.y`") == "`x.y`"
    assert convert("``a\nb`` stays one span") == "`a\nb` stays one span"
    assert convert("a plain: colon, and `code`") == "a plain: colon, and `code`"


def test_double_colon_paragraph_endings_become_plain() -> None:
    pytest.importorskip("griffe", reason="the docs extra: pip install -e '.[docs]'")
    convert = _script("mkdocs_rst").rst_docstring_to_markdown
    assert convert("Example::\n\n    x = 1\n") == "Example:\n\n    x = 1\n"
    assert convert("the same contract ::\n\n    f()\n") == "the same contract\n\n    f()\n"
    assert convert("Text.\n\n::\n\n    f()\n") == "Text.\n\n\n\n    f()\n"
    assert convert("std::vector and a::b stay") == "std::vector and a::b stay"


def test_env_id_spans_are_marked_and_nothing_else() -> None:
    mark = _script("mkdocs_env_ids").mark_env_ids
    assert mark("<td><code>agentgym/WebShopText-v0</code></td>") == (
        '<td><code class="env-id">agentgym/WebShopText-v0</code></td>'
    )
    assert mark("<code>CartPole-v1</code>") == '<code class="env-id">CartPole-v1</code>'
    for other in ("<code>agentgym/Web{Shop,Todo}-v0</code>", "<code>pip install x</code>"):
        assert mark(other) == other
    assert mark("<code>a/B-v0 --seed 1</code>") == "<code>a/B-v0 --seed 1</code>"


# --- the built site ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once with warnings as errors."""
    pytest.importorskip("mkdocs", reason="the docs extra: pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return out


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One headless Debian Chromium for the module's browser checks."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"Debian chromium not installed at {CHROMIUM}")
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@pytest.mark.slow
def test_docs_site_builds_strict(site: Path) -> None:
    assert (site / "own-env" / "index.html").exists()
    api = (site / "api" / "core" / "index.html").read_text()
    assert "AgentEnv" in api and "state_key" in api  # the reference came from the docstrings
    assert "fonts.googleapis.com" not in (site / "index.html").read_text()  # reads offline


# In the browser, per page: the text of raw roles, of paragraphs still ending in "::", the
# longest line of each code block wider than its box, each env id in a table cell that wraps.
_PAGE_CHECKS = r"""() => {
  const role = /:(?:py:)?(?:mod|class|func|meth|attr|data|obj|exc|const|ref):`?[\w~.]/g;
  const text = (document.querySelector('article') || document.body).innerText;
  const roles = text.match(role) || [];
  const colons = [...document.querySelectorAll('article p')]
    .map(p => p.innerText.trim()).filter(t => /\S::$/.test(t));
  const overflow = [];
  for (const pre of document.querySelectorAll('article pre')) {
    const boxes = [pre, ...pre.querySelectorAll(':scope > code')];
    if (boxes.some(b => b.scrollWidth > b.clientWidth + 1)) {
      const lines = pre.innerText.split('\n');
      overflow.push(lines.reduce((a, b) => (b.length > a.length ? b : a)).slice(0, 120));
    }
  }
  const id = /^(?:[\w.-]+\/)?[\w.-]+-v\d+$/;
  const split = [...document.querySelectorAll('article td code, article th code')]
    .filter(c => id.test(c.textContent.trim()) && c.getClientRects().length > 1)
    .map(c => c.textContent);
  const ids = [...document.querySelectorAll('article td code')]
    .filter(c => id.test(c.textContent.trim())).length;
  const blocks = document.querySelectorAll('article pre').length;
  const images = [...document.querySelectorAll('article img')];
  const broken = images.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src);
  return {roles, colons, overflow, split, ids, blocks, images: images.length, broken};
}"""


@pytest.fixture(scope="module")
def pages(site: Path, chromium: Any) -> dict[str, dict[str, Any]]:
    """Every page of the site, opened at 1280 x 900: page path -> what _PAGE_CHECKS found."""
    page = chromium.new_page(viewport={"width": 1280, "height": 900})
    found = {}
    for html in sorted(site.rglob("index.html")):
        page.goto(html.as_uri())
        found[str(html.relative_to(site))] = page.evaluate(_PAGE_CHECKS)
    page.close()
    return found


def _problems(pages: dict[str, dict[str, Any]], key: str) -> dict[str, list[str]]:
    return {name: found[key] for name, found in pages.items() if found[key]}


@pytest.mark.slow
def test_every_page_was_checked(pages: dict[str, dict[str, Any]]) -> None:
    families = ("games", "code", "users", "web", "visual", "household", "search")
    for name in (
        "index.html",
        "api/core/index.html",
        "evaluate/index.html",
        "benchmarks/index.html",
        *(f"envs/{f}/index.html" for f in families),
    ):
        assert name in pages
    assert sum(found["blocks"] for found in pages.values()) > 300  # the code blocks were seen


@pytest.mark.slow
def test_every_image_loads_and_the_visual_samples_are_shown(
    pages: dict[str, dict[str, Any]],
) -> None:
    assert _problems(pages, "broken") == {}
    assert pages["visual/index.html"]["images"] >= 20  # a view and a zoom per task type
    assert pages["training/index.html"]["images"] >= 1  # what a learning run looks like


@pytest.mark.slow
def test_no_raw_sphinx_roles_on_any_page(pages: dict[str, dict[str, Any]]) -> None:
    assert _problems(pages, "roles") == {}
    assert _problems(pages, "colons") == {}


@pytest.mark.slow
def test_no_code_block_overflows_at_1280_px(pages: dict[str, dict[str, Any]]) -> None:
    assert _problems(pages, "overflow") == {}


@pytest.mark.slow
def test_env_ids_in_tables_stay_on_one_line(pages: dict[str, dict[str, Any]]) -> None:
    assert _problems(pages, "split") == {}
    assert pages["web/index.html"]["ids"] >= 9  # its table of ids was among those checked


# --- the trajectory viewer on a narrow screen ----------------------------------------------


@pytest.mark.slow
def test_viewer_fits_a_400_px_window(tmp_path: Path, chromium: Any) -> None:
    run = tmp_path / "run.agtr"
    env = Record(gym.make("agentgym/Sokoban-Tiny-v0"), run)
    env.reset(seed=0)
    env.step("x" * 600)  # one unbroken token, as a model may emit: must wrap, not widen
    for _ in range(6):
        *_, terminated, truncated, _ = env.step(env.unwrapped.oracle_action())
        if terminated or truncated:
            break
    env.close()
    out = tmp_path / "view.html"
    trj.render_html(run, out)
    page = chromium.new_page(viewport={"width": 400, "height": 800})
    page.goto(out.as_uri())
    sizes = page.evaluate(
        """() => Object.fromEntries(['html', 'nav', 'main'].map(s => {
             const e = document.querySelector(s);
             return [s, [e.scrollWidth, e.clientWidth]];
           }))"""
    )
    for pane, (scroll, client) in sizes.items():
        assert scroll <= client, f"{pane} overflows sideways: {scroll} > {client} px"
    assert sizes["main"][1] >= 360  # the episode gets the width (not 400 minus a side list)
    assert page.locator("nav a").first.is_visible()  # the episode list is still there
    chart = page.locator("section.episode.show svg.chart").bounding_box()
    assert chart is not None and chart["width"] <= 400
    page.close()
