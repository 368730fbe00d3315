"""Lone surrogates (a model's half emoji) record, read, view, export and replay (issue 23).

A ``str`` holding ``"\\ud800"`` has no UTF-8 form, so msgpack refused it and ``Record.step``
raised after the env had taken the turn; the step was counted before it was written, so
``episode_end`` claimed a step the file did not hold. Now such strings travel as ext type 2
(lossless), stored observation text is valid UTF-8, and every derived output is valid UTF-8.
"""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import msgpack
import pytest
from agentgym.wrappers import Record
from trajectory_helpers import raw_frames, run_cli

import agentgym  # noqa: F401
import agentgym.trajectory as trj
from agentgym.trajectory import format as fmt
from agentgym.trajectory.index import build_index

SOKOBAN = "agentgym/Sokoban-Tiny-v0"
UP = '<tool_call>{"name": "move", "arguments": {"direction": "up"}}</tool_call>'
ACTIONS = (
    "\ud800 think",  # a raw lone surrogate
    # pure ASCII, but the JSON escape decodes to a lone surrogate inside the tool call
    '<tool_call>{"name": "move", "arguments": {"direction": "\\ud800"}}</tool_call>',
    "half an emoji \ud83d and a low half \udc00 " + UP,
)


def _strict_strings(path: Path) -> int:
    """Decode every payload with strict UTF-8 for msgpack ``str``; returns the frame count."""
    data = path.read_bytes()
    pos, count = fmt.PREAMBLE.size, 0
    while pos < len(data):
        parsed = fmt.parse_frame_head(data[pos : pos + fmt.FRAME_HEAD.size])
        assert parsed is not None, f"bad frame head at {pos}"
        length, _ = parsed
        start = pos + fmt.FRAME_HEAD.size
        msgpack.unpackb(data[start : start + length], raw=False, strict_map_key=False)
        pos = start + length
        count += 1
    return count


def test_record_keeps_lone_surrogates_exactly_and_counts_only_written_steps(tmp_path: Path):
    path = tmp_path / "s.agtr"
    env = Record(gym.make(SOKOBAN), path)
    env.reset(seed=3)
    for action in ACTIONS:
        env.step(action)  # used to raise UnicodeEncodeError from the msgpack packer
    env.close()

    with trj.open(path) as reader:
        (ep,) = list(reader.episodes())
        assert reader.problems == []
    assert [s["action"] for s in ep.steps] == list(ACTIONS)  # lossless, exactly as written
    assert ep.end is not None and ep.end["length"] == len(ep.steps) == 3
    # the parsed call kept its argument (an invalid direction, so none was executed)
    assert ep.steps[1]["tool_calls"] == []
    assert ep.steps[1]["action"].isascii()
    # every msgpack str in the file is valid UTF-8 (the surrogate text is an ext value)
    assert _strict_strings(path) == 1 + 1 + 3 + 1  # header, start, 3 steps, end
    assert build_index(path)[0]["length"] == 3


def test_tool_call_arguments_with_a_surrogate_escape_are_recorded(tmp_path: Path):
    path = tmp_path / "u.agtr"
    call = '<tool_call>{"name": "talk", "arguments": {"message": "is it \\ud83d?"}}</tool_call>'
    env = Record(gym.make("agentgym/UserTwentyQuestions-v0"), path)
    env.reset(seed=0)
    env.step(call)
    env.close()
    (ep,) = trj.open(path).episodes()
    assert ep.steps[0]["tool_calls"] == [
        {"name": "talk", "arguments": {"message": "is it \ud83d?"}, "id": None}
    ]
    assert ep.end is not None and ep.end["length"] == 1


def test_a_step_that_fails_to_write_is_not_counted(tmp_path: Path, monkeypatch):
    path = tmp_path / "w.agtr"
    env = Record(gym.make(SOKOBAN), path)
    env.reset(seed=0)
    env.step(UP)
    real_write = env.recorder.writer.write

    def full_disk(payload):
        if payload.get("type") == "step":
            raise OSError(28, "No space left on device")
        return real_write(payload)

    monkeypatch.setattr(env.recorder.writer, "write", full_disk)
    with pytest.raises(OSError):
        env.step(UP)
    monkeypatch.setattr(env.recorder.writer, "write", real_write)
    env.close()
    (ep,) = trj.open(path).episodes()
    assert len(ep.steps) == 1
    assert ep.end is not None and ep.end["length"] == 1


def test_observation_text_is_stored_as_valid_utf8_and_replays(tmp_path: Path, echo_env_id: str):
    path = tmp_path / "echo.agtr"
    env = Record(gym.make(echo_env_id), path)
    env.reset(seed=1)
    env.step("half \ud83d emoji")
    env.step("<answer>\udfff</answer>")
    env.close()

    frames = raw_frames(path)
    steps = [f for f in frames if f.get("type") == "step"]
    assert [s["observation"]["text"] for s in steps] == [
        "you said: half \ufffd emoji",
        "you said: <answer>\ufffd</answer>",
    ]
    assert [s["action"] for s in steps] == ["half \ud83d emoji", "<answer>\udfff</answer>"]

    code, out = run_cli("replay", str(path))
    assert code == 0, out
    assert "all episodes replayed identically" in out

    code, out = run_cli("export", str(path), "-o", str(tmp_path / "echo.jsonl"))
    assert code == 0, out
    line = (tmp_path / "echo.jsonl").read_bytes().decode("utf-8")  # strict: valid UTF-8
    row = json.loads(line)
    contents = [m["content"] for m in row["messages"]]
    assert "half \ufffd emoji" in contents and "<answer>\ufffd</answer>" in contents
    assert not any("\ud83d" in c or "\udfff" in c for c in contents)

    code, out = run_cli("view", str(path), "-o", str(tmp_path / "echo.html"))
    assert code == 0, out
    page = (tmp_path / "echo.html").read_bytes().decode("utf-8")
    assert "half \ufffd emoji" in page

    rows = list(trj.iter_rows(path))
    assert rows[0]["actions"] == ["half \ufffd emoji", "<answer>\ufffd</answer>"]
    for message in rows[0]["messages"]:
        message["content"].encode("utf-8")


def test_sokoban_recording_with_surrogates_replays_views_and_exports(tmp_path: Path):
    path = tmp_path / "s.agtr"
    env = Record(gym.make(SOKOBAN), path)
    env.reset(seed=5)
    for action in ACTIONS:
        env.step(action)
    env.close()
    code, out = run_cli("replay", str(path))
    assert code == 0 and "all episodes replayed identically" in out, out
    assert run_cli("view", str(path), "-o", str(tmp_path / "s.html"))[0] == 0
    assert run_cli("export", str(path), "-o", str(tmp_path / "s.jsonl"))[0] == 0
    (tmp_path / "s.html").read_bytes().decode("utf-8")
    exported = json.loads((tmp_path / "s.jsonl").read_bytes().decode("utf-8"))
    assistant = [m["content"] for m in exported["messages"] if m["role"] == "assistant"]
    assert assistant[0] == "\ufffd think"


def test_pack_round_trips_surrogates_in_keys_values_and_nested_lists():
    value = {
        "type": "step",
        "k\udc80": ["a\ud800", {"n": ("\udbff", 1)}],
        "plain": "caf\u00e9",
    }
    back = fmt.unpack(fmt.pack(value))
    assert back == {"type": "step", "k\udc80": ["a\ud800", {"n": ["\udbff", 1]}], "plain": "café"}
    # the fast path is untouched: no surrogate, plain msgpack str
    assert msgpack.unpackb(fmt.pack({"a": "café"}), raw=False) == {"a": "café"}
