"""The HTML viewer: self-contained markup, and a real render in headless Chromium."""

from __future__ import annotations

import os
import re
from pathlib import Path

import gymnasium as gym
import pytest
from agentgym.wrappers import Record

import agentgym.trajectory as trj
from agentgym.cli import main as cli_main

CHROMIUM = "/usr/lib/chromium/chromium"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def mixed_file(tmp_path: Path, pixel_env_id: str, sokoban_file: Path) -> Path:
    """Sokoban oracle episodes, then pixel-env episodes with screenshots, in one file."""
    path = tmp_path / "mixed.agtr"
    path.write_bytes(sokoban_file.read_bytes())
    rec = trj.Recorder(path, mode="a")
    env = Record(gym.make(pixel_env_id), rec)
    for seed in (0, 1):
        env.reset(seed=seed)
        for _ in range(3):
            *_, terminated, truncated, _ = env.step(env.unwrapped.oracle_action())
            if terminated or truncated:
                break
    env.reset(seed=2)
    env.step('<tool_call>{"name": "zoom", "arguments": {}}</tool_call>')  # a parse error
    env.close()
    rec.close()
    return path


def test_html_is_self_contained_and_shows_every_part(mixed_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "view.html"
    assert cli_main(["view", str(mixed_file), "-o", str(out)]) == 0
    page = out.read_text()
    # nothing fetched from anywhere: no http(s) URLs in src/href, a CSP that forbids it
    assert not re.search(r"""(src|href)=['"]?(https?:)?//""", page)
    assert "default-src 'none'" in page
    with trj.open(mixed_file) as reader:
        episodes = list(reader.episodes())
    assert page.count("class='episode'") == len(episodes) == 6
    assert page.count("data-ep=") == len(episodes)
    assert page.count("<svg class='chart'") == len(episodes)
    assert (
        page.count("data:image/png;base64,")
        == sum(
            len((f.get("observation") or {}).get("images", []))
            for e in episodes
            for f in [e.start, *e.steps]
        )
        > 0
    )
    assert "&lt;tool_call&gt;" in page  # model output, escaped
    assert "&quot;direction&quot;" in page or '"direction"' in page  # parsed tool calls
    assert "error:" in page and "zoom" in page  # the invalid action's error
    assert "invalid action" in page
    assert "<script>alert" not in page


def test_html_escapes_model_output(tmp_path: Path) -> None:
    path = tmp_path / "xss.agtr"
    with trj.Recorder(path) as rec:
        ep = rec.start_episode(
            env_id="agentgym/Sokoban-Tiny-v0", obs={"text": "<b>hi</b>"}, info={}
        )
        rec.record_step(
            ep,
            action="<script>alert(1)</script>",
            obs={"text": "<img src=x>"},
            reward=1.0,
            terminated=True,
            truncated=False,
            info={},
        )
        rec.end_episode(ep)
    page = trj.render_html(path)
    assert page is not None
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    assert "<img src=x>" not in page and "<b>hi</b>" not in page


@pytest.mark.browser
def test_viewer_renders_in_headless_chromium(mixed_file: Path, tmp_path: Path) -> None:
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"Debian chromium not installed at {CHROMIUM}")
    playwright = pytest.importorskip("playwright.sync_api")
    out = tmp_path / "view.html"
    trj.render_html(mixed_file, out)
    shots = Path(os.environ.get("AGENTGYM_TEST_ARTIFACTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    requests: list[str] = []
    errors: list[str] = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("request", lambda r: requests.append(r.url))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(out.as_uri())
            # the first episode is shown, the others hidden; the list has one link each
            assert page.locator("nav a").count() == 6
            assert page.locator("section.episode.show").count() == 1
            assert page.locator("section.episode.show svg.chart rect").count() > 1
            page.screenshot(path=str(shots / "viewer_sokoban.png"))
            # pick a pixel-env episode: its screenshots decode and have real size
            page.locator("nav a").nth(4).click()
            shown = page.locator("section.episode.show")
            assert shown.get_attribute("id") == "ep4"
            imgs = shown.locator("img.shot")
            assert imgs.count() >= 2
            widths = imgs.evaluate_all("els => els.map(e => e.naturalWidth)")
            assert all(w == 64 for w in widths)
            page.screenshot(path=str(shots / "viewer_pixels.png"), full_page=False)
        finally:
            browser.close()
    assert errors == []
    assert all(u.startswith(("file:", "data:")) for u in requests), requests


def test_viewer_lists_file_damage_and_still_renders(sokoban_file: Path) -> None:
    with trj.open(sokoban_file) as reader:
        offsets = [o for o, _ in reader.frames_with_offsets()]
    data = bytearray(sokoban_file.read_bytes())
    data[offsets[2] + 20] ^= 0xFF
    sokoban_file.write_bytes(bytes(data))
    page = trj.render_html(sokoban_file)
    assert page is not None
    assert "corrupt_frame" in page and f"@{offsets[2]}" in page
    assert page.count("class='episode'") == 3  # every episode still shown
