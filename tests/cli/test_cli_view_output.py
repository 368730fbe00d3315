"""``agentgym view`` leaves no empty or partial page when it fails (issue 26, point 10)."""

from __future__ import annotations

import gymnasium as gym
from agentgym.wrappers import Record

from agentgym.cli import main


def test_a_failed_view_writes_no_html_and_keeps_an_older_page(tmp_path, capsys):
    junk = tmp_path / "junk.agtr"
    junk.write_bytes(b"not a trajectory\n")
    out = tmp_path / "junk.html"
    assert main(["view", str(junk), "-o", str(out)]) == 2
    assert "not an .agtr trajectory" in capsys.readouterr().err
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junk.agtr"]  # no temp file left

    out.write_text("an older page")
    assert main(["view", str(tmp_path / "missing.agtr"), "-o", str(out)]) == 2
    assert out.read_text() == "an older page"


def test_a_successful_view_replaces_the_page(tmp_path, capsys):
    path = tmp_path / "run.agtr"
    env = Record(gym.make("agentgym/Sokoban-Tiny-v0"), path)
    env.reset(seed=0)
    env.step('<tool_call>{"name": "move", "arguments": {"direction": "up"}}</tool_call>')
    env.close()
    out = tmp_path / "run.html"
    out.write_text("an older page")
    assert main(["view", str(path), "-o", str(out)]) == 0
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") or page.lower().startswith("<!doctype html")
    assert "Sokoban-Tiny" in page
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.agtr", "run.html"]
