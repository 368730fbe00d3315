"""Record -> read -> replay round trip for every registered single-agent env, and divergences."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from agentgym.wrappers import Record

import agentgym
import agentgym.trajectory as trj
from agentgym.agents.scripted import OraclePolicy, RandomPolicy
from agentgym.cli import main as cli_main
from agentgym.core import AgentEnv
from agentgym.episodes import play
from agentgym.trajectory.writer import TrajectoryWriter

#: Families whose envs need a marked resource (so `-m "not browser"` etc. deselects them).
FAMILY_MARKS = {"web": pytest.mark.browser, "code": pytest.mark.sandbox}
FAMILY_MARKS["repo"] = pytest.mark.sandbox  # RepoFix runs its tools in the sandbox too
SINGLE_AGENT_IDS = [
    pytest.param(r.id, marks=[FAMILY_MARKS[r.family]] if r.family in FAMILY_MARKS else [])
    for r in agentgym.list_envs(multi_agent=False)
]
MAX_TURNS = 8  # small budgets keep the round trip quick for every family


def _policy_for(env_id: str):  # type: ignore[no-untyped-def]
    """The env's oracle when it has one, else the random baseline; None if neither works."""
    cls = agentgym.get_record(env_id).load()
    if cls.oracle_action is not AgentEnv.oracle_action:
        return OraclePolicy(), "oracle"
    return RandomPolicy(seed=1), "random"


def _kwargs_for(env_id: str) -> dict:
    cls = agentgym.get_record(env_id).load()
    return {"max_turns": MAX_TURNS} if issubclass(cls, AgentEnv) else {}


@pytest.mark.parametrize("env_id", SINGLE_AGENT_IDS)
def test_record_read_replay_round_trip(tmp_path: Path, env_id: str) -> None:
    try:
        policy, _ = _policy_for(env_id)
        kwargs = _kwargs_for(env_id)
        gym.make(env_id, **kwargs).close()
    except (ImportError, agentgym.error.DependencyMissingError) as exc:
        pytest.skip(f"{env_id} cannot be built here (optional dependency missing): {exc}")
    path = tmp_path / "run.agtr"
    with trj.Recorder(path) as rec:
        summaries = play(
            env_id,
            policy,
            episodes=2,
            seed=11,
            num_envs=2,
            env_kwargs=kwargs,
            progress=False,
            **rec.play_callbacks(env_id, env_kwargs=kwargs),
        )
    with trj.open(path) as reader:
        episodes = sorted(reader.episodes(), key=lambda e: e.seed)
        assert reader.problems == []
    assert [e.seed for e in episodes] == [11, 12]
    for ep, summary in zip(episodes, summaries):
        assert ep.complete and ep.env_id == agentgym.get_record(env_id).id
        assert ep.task_id == summary.task_id and ep.length == summary.turns
        assert ep.return_ == pytest.approx(summary.total_reward)
        assert ep.success == summary.success
        assert [s["step"] for s in ep.steps] == list(range(1, ep.length + 1))
    report = trj.replay(path)
    assert report.ok, report.format()
    assert [e.steps_checked for e in report.episodes] == [e.steps_recorded for e in report.episodes]


def test_episode_ids_are_unique_across_interleaved_envs(tmp_path: Path) -> None:
    import threading

    path = tmp_path / "many.agtr"
    with trj.Recorder(path) as rec:
        runs = [
            threading.Thread(
                target=play,
                args=(env_id, RandomPolicy(seed=i)),
                kwargs=dict(
                    episodes=4,
                    seed=100 * i,
                    num_envs=3,
                    progress=False,
                    **rec.play_callbacks(env_id, seed=100 * i),
                ),
            )
            for i, env_id in enumerate(["agentgym/Sokoban-Tiny-v0", "agentgym/Sokoban-Small-v0"])
        ]
        for t in runs:
            t.start()
        for t in runs:
            t.join()
    with trj.open(path) as reader:
        episodes = list(reader.episodes())
        assert reader.problems == []
    ids = [e.episode_id for e in episodes]
    assert len(ids) == len(set(ids)) == 8
    assert sorted(e.seed for e in episodes) == [0, 1, 2, 3, 100, 101, 102, 103]
    assert all(e.start["seed"] == e.seed for e in episodes)  # seed known at reset time
    assert trj.replay(path).ok


def _rewrite(src: Path, dst: Path, edit) -> None:  # type: ignore[no-untyped-def]
    """Copy every frame of src to dst through ``edit(frame)`` (the writer adds a header)."""
    with trj.open(src) as reader, TrajectoryWriter(dst) as w:
        for frame in reader.frames():
            obs = frame.get("observation")
            if obs:
                obs["images"] = [
                    {"png": im.png, "sha256": im.sha256, "shape": list(im.shape)}
                    for im in obs.get("images", [])
                ]
            w.write(edit(frame))


def _edit_step(n: int, change):  # type: ignore[no-untyped-def]
    seen = {"k": 0}

    def edit(frame: dict) -> dict:
        if frame["type"] == "step" and frame["step"] == n:
            seen["k"] += 1
            if seen["k"] == 1:  # only the first episode's step n
                change(frame)
        return frame

    return edit


def test_replay_reports_first_divergence_with_a_text_diff(
    sokoban_file: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.agtr"

    def change(frame: dict) -> None:
        frame["observation"]["text"] = frame["observation"]["text"].replace("#", "%", 1)

    _rewrite(sokoban_file, bad, _edit_step(2, change))
    report = trj.replay(bad)
    assert not report.ok and len(report.diverged) == 1
    div = report.diverged[0].divergence
    assert div is not None and div.step == 2 and div.field == "observation.text"
    assert "-%" in div.diff and "+#" in div.diff
    assert "step 2: observation.text differs" in report.format()
    assert cli_main(["replay", str(bad)]) == 1
    assert cli_main(["replay", str(sokoban_file)]) == 0


@pytest.mark.parametrize(
    ("field", "change"),
    [
        ("reward", lambda f: f.update(reward=f["reward"] + 0.5)),
        ("terminated", lambda f: f.update(terminated=not f["terminated"])),
        ("reward_components", lambda f: f["reward_components"].update(step=123.0)),
        ("observation.text", lambda f: f.update(action='<tool_call>{"name": "move"}</tool_call>')),
    ],
)
def test_replay_detects_each_kind_of_change(
    sokoban_file: Path, tmp_path: Path, field, change
) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.agtr"
    _rewrite(sokoban_file, bad, _edit_step(1, change))
    report = trj.replay(bad)
    (diverged,) = report.diverged
    assert diverged.divergence is not None and diverged.divergence.field == field
    assert diverged.divergence.step == 1


def test_replay_compares_images_by_hash(tmp_path: Path, pixel_env_id: str) -> None:
    path = tmp_path / "pix.agtr"
    env = Record(gym.make(pixel_env_id), path)
    for seed in (0, 1):
        env.reset(seed=seed)
        for _ in range(2):
            env.step(env.unwrapped.oracle_action())
    env.close()
    assert trj.replay(path).ok

    def change(frame: dict) -> None:
        pixels = frame["observation"]["images"][0].to_array().copy()
        pixels[0, 0, 2] ^= 1  # one bit of one pixel
        from agentgym.trajectory.images import encode_image

        frame["observation"]["images"] = [encode_image(pixels)]

    bad = tmp_path / "bad.agtr"
    with trj.open(path) as reader, TrajectoryWriter(bad) as w:
        for frame in reader.frames():
            images = (frame.get("observation") or {}).get("images", [])
            if frame["type"] == "step" and frame["step"] == 2 and frame["episode_id"].endswith("1"):
                change(frame)
            else:
                frame.get("observation", {})["images"] = (
                    [{"png": im.png, "sha256": im.sha256, "shape": list(im.shape)} for im in images]
                    if images
                    else []
                )
            w.write(frame)
    report = trj.replay(bad)
    (diverged,) = report.diverged
    assert diverged.divergence is not None
    assert (diverged.divergence.step, diverged.divergence.field) == (2, "observation.images")


def test_replay_of_unknown_env_is_an_error_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "x.agtr"
    with trj.Recorder(path) as rec:
        ep = rec.start_episode(env_id="agentgym/NoSuchEnv-v9", obs={"text": ""}, info={}, seed=0)
        rec.end_episode(ep)
    report = trj.replay(path)
    assert not report.ok and "could not re-create the env" in (report.episodes[0].error or "")
    assert cli_main(["replay", str(path)]) == 1


def test_record_wrapper_passes_everything_through(tmp_path: Path) -> None:
    bare = gym.make("agentgym/Sokoban-Small-v0")
    recorded = Record(gym.make("agentgym/Sokoban-Small-v0"), tmp_path / "w.agtr")
    for env in (bare, recorded):
        env.reset(seed=4)
    rng = np.random.default_rng(0)
    for _ in range(20):
        action = bare.unwrapped.admissible_actions()[int(rng.integers(4))]
        a = bare.step(action)
        b = recorded.step(action)
        assert a[0] == b[0] and a[1:4] == b[1:4] and a[4] == b[4]
        if a[2] or a[3]:
            break
    recorded.reset(seed=5)  # a reset mid-episode ends the open one as aborted
    recorded.close()
    with trj.open(tmp_path / "w.agtr") as reader:
        episodes = list(reader.episodes())
        assert reader.header["env_id"] == "agentgym/Sokoban-Small-v0"
    assert [e.end["termination"] for e in episodes][-1] == "aborted"
    assert all(s["timings"]["env_ms"] >= 0 for s in episodes[0].steps)
    assert trj.replay(tmp_path / "w.agtr").ok
