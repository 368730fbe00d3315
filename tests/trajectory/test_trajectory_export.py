"""Exporters: OpenAI-style chat JSONL for SFT, and plain dict rows for `datasets`."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import gymnasium as gym
import numpy as np
from agentgym.wrappers import Record
from agentgym.wrappers.chat import ChatHistory

import agentgym.trajectory as trj
from agentgym.cli import main as cli_main


def test_jsonl_messages_match_the_chat_the_policy_saw(tmp_path: Path) -> None:
    path = tmp_path / "s.agtr"
    env = Record(ChatHistory(gym.make("agentgym/Sokoban-Small-v0")), path)
    _, info = env.reset(seed=2)
    while True:
        *_, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
        if terminated or truncated:
            break
    env.close()
    out = tmp_path / "s.jsonl"
    assert cli_main(["export", str(path), "--format", "jsonl", "-o", str(out)]) == 0
    (line,) = out.read_text().splitlines()
    row = json.loads(line)
    # the full, untrimmed conversation equals ChatHistory's (history_turns=None keeps all)
    assert row["messages"] == info["messages"]
    assert [m["role"] for m in row["messages"][:3]] == ["system", "user", "assistant"]
    assert row["tools"][0]["function"]["name"] == "move"
    assert row["success"] is True and row["length"] == (len(row["messages"]) - 2) // 2


def test_jsonl_images_are_png_data_urls_or_omitted(tmp_path: Path, pixel_env_id: str) -> None:
    path = tmp_path / "p.agtr"
    env = Record(gym.make(pixel_env_id), path)
    obs, _ = env.reset(seed=0)
    env.step("<answer>3</answer>")
    env.close()
    out = tmp_path / "p.jsonl"
    assert trj.export_jsonl(path, out) == 1
    row = json.loads(out.read_text())
    first_user = row["messages"][1]
    url = first_user["content"][0]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    png = base64.b64decode(url.split(",", 1)[1])
    img = trj.StoredImage(png, "", ()).to_array()
    np.testing.assert_array_equal(img, obs["images"][0])
    assert first_user["content"][1] == {"type": "text", "text": obs["text"]}
    trj.export_jsonl(path, out, images="omit")
    row = json.loads(out.read_text())
    assert row["messages"][1]["content"] == obs["text"]


def test_rows_have_one_schema_and_filters_apply(tmp_path: Path, pixel_env_id: str) -> None:
    from agentgym.agents.scripted import OraclePolicy, RandomPolicy
    from agentgym.episodes import play

    path = tmp_path / "r.agtr"
    env_id = "agentgym/Sokoban-Tiny-v0"
    with trj.Recorder(path) as rec:
        play(
            env_id,
            RandomPolicy(3),
            episodes=6,
            seed=0,
            progress=False,
            **rec.play_callbacks(env_id, seed=0),
        )
        play(
            env_id,
            OraclePolicy(),
            episodes=2,
            seed=50,
            progress=False,
            **rec.play_callbacks(env_id, seed=50),
        )
        env = Record(gym.make(pixel_env_id), rec)
        env.reset(seed=1)
        env.step("<answer>1</answer>")
        env.close()
    rows = list(trj.iter_rows(path))
    assert len(rows) == 9
    keys = set(rows[0])
    for row in rows:
        assert set(row) == keys
        assert all(isinstance(m["content"], str) for m in row["messages"])
        assert len(row["rewards"]) == len(row["actions"]) == row["length"]
        assert abs(sum(row["rewards"]) - row["return"]) < 1e-9
    assert sum(len(r["images"]) for r in rows) == 2  # the pixel episode: reset + 1 step
    assert rows[-1]["images"][0]["bytes"].startswith(b"\x89PNG")
    wins = list(trj.iter_rows(path, success=True))
    assert 2 <= len(wins) < len(rows)
    assert [r["episode_id"] for r in wins] == [r["episode_id"] for r in rows if r["success"]]
    some = list(trj.iter_rows(path, task_id=rows[0]["task_id"]))
    assert {r["task_id"] for r in some} == {rows[0]["task_id"]}


def test_cli_export_filters(tmp_path: Path) -> None:
    from agentgym.agents.scripted import OraclePolicy, RandomPolicy
    from agentgym.episodes import play

    path = tmp_path / "f.agtr"
    with trj.Recorder(path) as rec:
        for env_id, policy, kwargs in (
            ("agentgym/Sokoban-Tiny-v0", OraclePolicy(), {}),  # solves every level
            ("agentgym/Sokoban-Medium-v0", RandomPolicy(7), {"max_turns": 1}),  # cannot
        ):
            play(
                env_id,
                policy,
                episodes=4,
                seed=0,
                env_kwargs=kwargs,
                progress=False,
                **rec.play_callbacks(env_id, env_kwargs=kwargs, seed=0),
            )
    with trj.open(path) as reader:
        wins = {e.episode_id for e in reader.episodes() if e.success}
    assert len(wins) == 4
    out = tmp_path / "f.jsonl"
    assert (
        cli_main(["export", str(path), "--success-only", "--images", "omit", "-o", str(out)]) == 0
    )
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["episode_id"] for r in got} == wins
    assert {r["env_id"] for r in got} == {"agentgym/Sokoban-Tiny-v0"}
    assert cli_main(["export", str(path), "--min-return", "-100", "-o", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 8
