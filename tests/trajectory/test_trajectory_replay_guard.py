"""Replay does not trust a file's env settings or take unbounded time (issue 23).

``agentgym replay`` of a three-frame file whose ``env_kwargs`` asked for
``{"min_moves": 100000}`` (Sokoban) or ``catalog_size=3_000_000`` (WebShopText) was still
running after 45 s. Now such settings are refused with the reason, and with
``--trust-settings`` the episode stops at the time limit, also with the reason. (Issue 38
made the time limit cover the whole file and judged settings together: see
test_trajectory_replay_budget.py.)
"""

from __future__ import annotations

import math
import signal
from pathlib import Path

import gymnasium as gym
from agentgym.wrappers import Record
from trajectory_helpers import raw_frames, run_cli, write_frames

import agentgym  # noqa: F401
import agentgym.trajectory as trj
from agentgym.trajectory.replay_guard import oversized_settings

SOKOBAN = "agentgym/Sokoban-Tiny-v0"


def _sokoban_file(tmp_path: Path, **settings: object) -> Path:
    """A real one-step recording whose episode_start names other settings."""
    path = tmp_path / "real.agtr"
    env = Record(gym.make(SOKOBAN), path)
    env.reset(seed=0)
    env.step("hello")
    env.close()
    frames = raw_frames(path)
    for frame in frames:
        if frame.get("type") == "episode_start":
            frame["env_kwargs"].update(settings)
    return write_frames(tmp_path / "hostile.agtr", frames)


def test_sokoban_min_moves_100000_is_refused_with_the_reason(tmp_path: Path):
    path = _sokoban_file(tmp_path, min_moves=100000)
    code, out = run_cli("replay", str(path))
    assert code == 1
    assert "ERROR" in out and "steps 0/1" in out
    assert "refused to replay" in out
    assert "min_moves=100000 (the registered env uses 2; at most 20)" in out
    assert "--trust-settings" in out


def test_webshop_text_catalog_of_three_million_is_refused(tmp_path: Path):
    env_id = "agentgym/WebShopText-v0"
    frames = [
        {"type": "header", "schema": [1, 1], "env_id": env_id},
        {
            "type": "episode_start",
            "episode_id": "e1",
            "env_id": env_id,
            "env_kwargs": {"mode": "text", "catalog_size": 3_000_000},
            "task_id": "shop-0",
            "seed": 0,
            "observation": {"text": "", "images": []},
        },
        {"type": "episode_end", "episode_id": "e1", "return": 0.0, "success": False},
    ]
    path = write_frames(tmp_path / "shop.agtr", frames)
    report = trj.replay(path)
    (episode,) = report.episodes
    assert not report.ok and episode.error is not None
    assert "catalog_size=3000000 (the registered env uses 3000; at most 30000)" in episode.error


def test_trusted_settings_stop_at_the_time_limit_and_outer_timers_survive(tmp_path: Path):
    path = _sokoban_file(tmp_path, min_moves=100000)
    outer_handler = signal.getsignal(signal.SIGALRM)
    outer_left, _ = signal.getitimer(signal.ITIMER_REAL)
    report = trj.replay(path, trust_settings=True, time_limit_s=0.5)
    (episode,) = report.episodes
    assert episode.error is not None
    assert episode.error.startswith(
        "stopped at the time limit of 0.5 s for the whole file, while building and resetting"
    )
    assert "min_moves=100000" in episode.error
    # a timer that was running before (pytest-timeout's, if any) is put back
    assert signal.getsignal(signal.SIGALRM) == outer_handler
    assert bool(signal.getitimer(signal.ITIMER_REAL)[0]) == bool(outer_left)

    code, out = run_cli("replay", str(path), "--trust-settings", "--time-limit", "0.5")
    assert code == 1 and "stopped at the time limit of 0.5 s" in out


def test_settings_near_the_registered_ones_replay(tmp_path: Path):
    path = tmp_path / "near.agtr"
    env = Record(gym.make(SOKOBAN, max_turns=50), path)  # 5x the registered 10: allowed
    env.reset(seed=1)
    env.step("hello")
    env.close()
    report = trj.replay(path)
    assert report.ok, report.format()


def test_oversized_settings_rule():
    assert oversized_settings(SOKOBAN, {"max_turns": 100}) == []
    assert oversized_settings(SOKOBAN, {"min_moves": 20}) == []
    # together they are 100x the registered env: refused since issue 38 (see
    # test_trajectory_replay_budget.py for the rule that multiplies growths)
    assert len(oversized_settings(SOKOBAN, {"max_turns": 100, "min_moves": 20})) == 1
    assert oversized_settings(SOKOBAN, {"max_turns": 101}) == [
        "max_turns=101 (the registered env uses 10; at most 100)"
    ]
    # constructor defaults count when the registration does not name the setting
    assert oversized_settings("agentgym/CodeMath-v0", {"cell_timeout": 1e6}) == [
        "cell_timeout=1000000.0 (the registered env uses 10.0; at most 100)"
    ]
    assert oversized_settings("agentgym/VisualMaze-v0", {"grounding_noise": math.nan}) == [
        "grounding_noise=nan (not a finite number)"
    ]
    # non-numeric settings, bools and unknown ids are left to the env's own checks
    assert oversized_settings(SOKOBAN, {"split": "test", "render_mode": None}) == []
    assert oversized_settings("nope/Missing-v0", {"size": 10**9}) == []
