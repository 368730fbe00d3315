"""Replay spends a budget per file, not per episode, and settings are judged together (issue 38).

A 12-frame Sokoban file whose settings were each within their own cap (16x16, 11 boxes,
shortest solution 20) replayed in 42 s against 1 s for the registered settings, and a file of
N episodes could take N times the per-episode time limit. Now the settings' growth factors
are multiplied and the product is held to the same cap, and one budget of seconds and work
units covers the whole file. No test here times anything: they assert the refusal, the stop
reason and the work accounting.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
from agentgym.wrappers import Record
from trajectory_helpers import raw_frames, run_cli, write_frames

import agentgym  # noqa: F401
import agentgym.trajectory as trj
from agentgym.trajectory.replay_guard import oversized_settings, settings_load

SOKOBAN = "agentgym/Sokoban-Tiny-v0"  # registered 5x5, 1 box, min_moves 2, max_turns 10
#: Each within its own cap (height/width <= 50, num_boxes <= 11, min_moves <= 20); a reset
#: with these takes seconds, so together they are refused.
EACH_WITHIN_ITS_CAP = {"height": 16, "width": 16, "num_boxes": 11, "min_moves": 20}


def _recording(tmp_path: Path, episodes: int, steps: int = 1, **settings: object) -> Path:
    """A real recording of ``episodes`` Sokoban episodes; ``settings`` rewrite its
    episode_start frames afterwards (what a hostile file would do)."""
    path = tmp_path / "real.agtr"
    env = Record(gym.make(SOKOBAN), path)
    for seed in range(episodes):
        env.reset(seed=seed)
        for _ in range(steps):
            env.step("hello")
    env.close()
    if not settings:
        return path
    frames = raw_frames(path)
    for frame in frames:
        if frame.get("type") == "episode_start":
            frame["env_kwargs"].update(settings)
    return write_frames(tmp_path / "edited.agtr", frames)


def test_settings_each_within_their_cap_are_refused_together(tmp_path: Path):
    for name, value in EACH_WITHIN_ITS_CAP.items():  # alone, each is allowed
        assert oversized_settings(SOKOBAN, {name: value}) == []
    (finding,) = oversized_settings(SOKOBAN, EACH_WITHIN_ITS_CAP)
    assert finding == (
        "height=16 (3.2x), width=16 (3.2x), num_boxes=11 (10x), min_moves=20 (10x) together "
        "ask for 1024x the registered env (each value over the registered one, multiplied; "
        "at most 10x together)"
    )
    path = _recording(tmp_path, episodes=3, **EACH_WITHIN_ITS_CAP)  # 10 frames
    report = trj.replay(path)
    assert [e.steps_checked for e in report.episodes] == [0, 0, 0]
    for episode in report.episodes:
        assert episode.error is not None
        assert episode.error.startswith("refused to replay: the file asks for env settings")
        assert "1024x the registered env" in episode.error and "--trust-settings" in episode.error
    assert report.work_used == 0  # nothing was built, reset or stepped


def test_the_combined_rule_counts_growth_only_and_stops_just_past_the_cap():
    # height 2x (10 over 5) times min_moves 5x (10 over 2) is exactly the cap
    assert oversized_settings(SOKOBAN, {"height": 10, "min_moves": 10}) == []
    assert settings_load(SOKOBAN, {"height": 10, "min_moves": 10}) == 10
    (finding,) = oversized_settings(SOKOBAN, {"height": 10, "min_moves": 11})
    assert "height=10 (2x), min_moves=11 (5.5x) together ask for 11x" in finding
    # small registered values have slack: a growth is value / max(registered, (registered
    # + 10) / 10), so 11 boxes over 1 are 10x, and one more setting tips it over
    assert settings_load(SOKOBAN, {"num_boxes": 11}) == 10
    assert oversized_settings(SOKOBAN, {"num_boxes": 11, "height": 6}) != []
    # a setting below its registered value does not buy room for another
    assert settings_load(SOKOBAN, {"height": 12, "min_moves": 10, "max_turns": 5}) == 12
    (finding,) = oversized_settings(SOKOBAN, {"height": 12, "min_moves": 10, "max_turns": 5})
    assert finding.startswith("height=12 (2.4x), min_moves=10 (5x) together ask for 12x")
    # unjudged settings (not numbers, or no registered value) weigh nothing
    assert settings_load(SOKOBAN, {"split": "test", "colour": 10**9}) == 1
    assert oversized_settings(SOKOBAN, {"colour": 10**9, "min_moves": 20}) == []
    assert settings_load("nope/Missing-v0", {"size": 10**9}) == 1


def test_the_time_limit_covers_the_whole_file(tmp_path: Path):
    path = _recording(tmp_path, episodes=3, min_moves=100000)  # hours per reset, if trusted
    report = trj.replay(path, trust_settings=True, time_limit_s=0.5)
    first, *rest = report.episodes
    assert first.error is not None
    assert first.error.startswith(
        "stopped at the time limit of 0.5 s for the whole file, while building and resetting"
    )
    assert len(rest) == 2
    for episode in rest:  # the file's time is spent: the others never start
        assert episode.error is not None and episode.steps_checked == 0
        assert episode.error.startswith(
            "not replayed: the time limit of 0.5 s for the whole file is used up"
        )
        assert "--time-limit" in episode.error


def test_the_work_limit_counts_resets_and_steps_for_the_whole_file(tmp_path: Path):
    path = _recording(tmp_path, episodes=3, steps=1)  # each episode: 1 reset + 1 step = 2
    report = trj.replay(path, work_limit=6)
    assert report.ok and report.work_used == 6
    report = trj.replay(path, work_limit=5)
    assert [e.ok for e in report.episodes] == [True, True, False]
    assert report.work_used == 4
    error = report.episodes[2].error
    assert error == (
        "not replayed: the work limit of 5 units for the whole file would be exceeded (this "
        "episode needs 2: 1 reset and 1 step at 1x the registered env; 1 left). Raise it "
        "with --work-limit UNITS (work_limit=...), or 0 for no limit"
    )
    assert trj.replay(path, work_limit=0).ok  # 0: no limit
    one = trj.replay(path, work_limit=1)  # 1 is a limit: no episode fits
    assert [e.steps_checked for e in one.episodes] == [0, 0, 0] and one.work_used == 0
    # None or 0: no limit either way (the file is replayed whole)
    for limits in ({"time_limit_s": 0}, {"time_limit_s": None}, {"work_limit": None}):
        report = trj.replay(path, **limits)
        assert report.ok and report.work_used == 6, limits

    code, out = run_cli("replay", str(path), "--work-limit", "5")
    assert code == 1 and "the work limit of 5 units for the whole file" in out
    assert "work used: 4 of 5 units" in out


def test_settings_weigh_on_the_work_of_every_reset_and_step(tmp_path: Path):
    # max_turns 50 over the registered 10: 5x, so 1 reset + 2 steps cost 15 units
    path = _recording(tmp_path, episodes=1, steps=2, max_turns=50)
    assert not trj.replay(path, work_limit=14).ok
    report = trj.replay(path, work_limit=15)
    assert report.ok and report.work_used == 15
    # trusted settings are still counted at their weight
    (tmp_path / "t").mkdir()
    trusted = _recording(tmp_path / "t", episodes=1, steps=1, height=6, min_moves=30)
    assert trj.replay(trusted, trust_settings=True, work_limit=35).episodes[0].error == (
        "not replayed: the work limit of 35 units for the whole file would be exceeded (this "
        "episode needs 36: 1 reset and 1 step at 18x the registered env; 35 left). Raise it "
        "with --work-limit UNITS (work_limit=...), or 0 for no limit"
    )


def test_one_episode_replayed_alone_has_a_budget_of_its_own(tmp_path: Path):
    path = _recording(tmp_path, episodes=1, steps=2)
    with trj.open(path) as reader:
        (episode,) = list(reader.episodes())
    assert trj.replay_episode(episode, work_limit=3).ok  # 1 reset + 2 steps
    refused = trj.replay_episode(episode, work_limit=2)
    assert refused.steps_checked == 0 and refused.error is not None
    assert refused.error.startswith("not replayed: the work limit of 2 units for this episode")
    # an env the caller built is the caller's: its settings weigh nothing
    env = gym.make(SOKOBAN, max_turns=50)
    assert trj.replay_episode(episode, env=env, work_limit=3).ok
    env.close()
