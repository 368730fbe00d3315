"""The viewer shows what a person needs to read a run: real web screenshots at their
recorded resolution, reward weights, a chart with a step axis, unfinished episodes marked as
such, code as code, and a filterable, sortable episode list (checked in headless Chromium)."""

from __future__ import annotations

import os
from pathlib import Path

import gymnasium as gym
import pytest
from agentgym.wrappers import Record

import agentgym.trajectory as trj

CHROMIUM = "/usr/lib/chromium/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
CODE = "total = 0\nfor k in range(4):\n    total += k\nprint(total)"


@pytest.fixture(scope="module")
def run_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real web episode with PNG screenshots, a code episode, and an aborted episode."""
    path = tmp_path_factory.mktemp("viewer") / "run.agtr"
    rec = trj.Recorder(path)
    web = Record(gym.make("agentgym/WebWidgets-v0", screenshot="png"), rec)
    web.reset(seed=0)
    for _ in range(4):
        *_, terminated, truncated, _ = web.step(web.unwrapped.oracle_action())
        if terminated or truncated:
            break
    web.close()
    code = Record(gym.make("agentgym/CodeMath-L1-v0"), rec)
    code.reset(seed=0)
    code.step(
        f'<tool_call>{{"name": "python", "arguments": {{"code": {CODE!r}}}}}</tool_call>'.replace(
            "'", '"'
        )
    )
    code.step("<answer>-1</answer>")
    code.close()
    grid = Record(gym.make("agentgym/Sokoban-Tiny-v0"), rec)
    grid.reset(seed=0)
    grid.step("no tool call at all")  # a small negative reward (format + step)
    grid.close()  # closed mid-episode: recorded as aborted
    rec.close()
    return path


def test_html_marks_unfinished_episodes_and_shows_weights_and_code(run_file: Path) -> None:
    page = trj.render_html(run_file)
    assert page is not None
    assert page.count("data-status='unfinished'") == 1
    assert page.count("data-status='success'") == 1
    assert page.count("data-status='failure'") == 1
    assert "<th>weight</th>" in page and "<td>outcome</td>" in page
    assert f"<pre>{CODE.replace('<', '&lt;')}</pre>" in page  # newlines kept, not \\n escapes
    assert "image-rendering:pixelated" not in page


def test_viewer_in_chromium_shows_web_screenshots_at_recorded_resolution(
    run_file: Path, tmp_path: Path
) -> None:
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"Debian chromium not installed at {CHROMIUM}")
    playwright = pytest.importorskip("playwright.sync_api")
    with trj.open(run_file) as reader:
        web = next(iter(reader.episodes()))
    recorded = web.steps[0]["observation"]["images"][0].shape  # (768, 1024, 3)
    out = tmp_path / "view.html"
    trj.render_html(run_file, out)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(out.as_uri())
            shot = page.locator("section.episode.show img.shot").first
            size = shot.evaluate(
                "e => [e.naturalWidth, e.naturalHeight, e.clientWidth, e.clientHeight]"
            )
            assert size == [recorded[1], recorded[0], recorded[1], recorded[0]]
            box = page.locator("section.episode.show .shotbox").first.bounding_box()
            assert box is not None and box["height"] <= 0.6 * 900 + 2  # a bounded scroll box
            shot.click()  # fit to the column: smaller, aspect kept
            fitted = shot.evaluate("e => [e.clientWidth, e.clientHeight]")
            assert fitted[0] < recorded[1]
            assert abs(fitted[0] / fitted[1] - recorded[1] / recorded[0]) < 0.01
            # the reward chart has a step axis and keeps small negative bars visible
            page.locator("nav a[data-status='unfinished']").click()
            bars = page.locator("section.episode.show svg.chart rect[fill='#d93025']")
            assert bars.count() == 1 and float(bars.first.get_attribute("height")) >= 2
            assert "step" in (page.locator("section.episode.show svg.chart").text_content() or "")
            # filter by outcome and by text; sort by return
            page.select_option("#which", "unfinished")
            visible = page.locator("nav a:visible")
            assert (
                visible.count() == 1 and visible.first.get_attribute("data-status") == "unfinished"
            )
            page.select_option("#which", "all")
            page.fill("#q", "codemath")
            assert page.locator("nav a:visible").count() == 1
            page.fill("#q", "")
            page.select_option("#order", "return")
            returns = page.locator("nav a").evaluate_all(
                "els => els.map(e => parseFloat(e.dataset.ret))"
            )
            assert returns == sorted(returns, reverse=True)
        finally:
            browser.close()
