"""Frames with valid checksums but wrong field types (issue 15, T2).

The files are real recordings (Sokoban and the pixel env) whose payloads were changed and
re-framed with correct CRCs, so only the schema check can catch them.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from trajectory_helpers import raw_frames, record_pixels, write_frames

import agentgym.trajectory as trj
from agentgym.cli import main as cli_main


def _first(frames: list[dict], kind: str) -> dict:
    return next(f for f in frames if f.get("type") == kind)


@pytest.fixture
def bad_types_file(tmp_path: Path, pixel_env_id: str, sokoban_file: Path) -> Path:
    """Sokoban + pixel episodes with ``return: "abc"``, ``reward: None``, image ``shape: 5``."""
    record_pixels(tmp_path / "pix.agtr", pixel_env_id)
    frames = raw_frames(sokoban_file) + raw_frames(tmp_path / "pix.agtr")[1:]
    frames = copy.deepcopy(frames)
    _first(frames, "episode_end")["return"] = "abc"
    _first(frames, "step")["reward"] = None
    pixel_step = next(f for f in frames if f.get("type") == "step" and f["observation"]["images"])
    pixel_step["observation"]["images"][0]["shape"] = 5
    steps = [f for f in frames if f.get("type") == "step"]
    steps[2]["observation"] = "not a map"
    steps[3]["step"] = "three"
    steps[4]["episode_id"] = 7  # cannot belong to any episode
    start = _first(frames, "episode_start")
    start["tools"] = [{"function": "not a map"}, 5]
    return write_frames(tmp_path / "bad.agtr", frames)


def test_reader_repairs_wrong_types_and_reports_each(bad_types_file: Path, sokoban_file: Path):
    with trj.open(sokoban_file) as good:
        expected = len(list(good.episodes()))
    with trj.open(bad_types_file) as reader:
        episodes = list(reader.episodes())
        problems = list(reader.problems)
    assert len(episodes) == expected + 2  # + the two pixel episodes
    text = "\n".join(map(str, problems))
    assert "episode_end.return: expected a number, got str 'abc'" in text
    assert "step.reward: expected a number, got NoneType None" in text
    assert "shape: expected a list of sizes" in text and "got int 5" in text
    assert "step.observation: expected a map" in text
    assert "step.step: expected an integer" in text
    assert "episode_id: expected a string, got int 7; frame dropped" in text
    kinds = {p.kind for p in problems}
    assert kinds == {"invalid_field", "invalid_frame"}
    for ep in episodes:  # every value downstream code relies on has its type
        assert isinstance(ep.return_, float) and all(isinstance(r, float) for r in ep.rewards)
        for step in ep.steps:
            for image in step.get("observation", {}).get("images", []):
                assert isinstance(image, trj.StoredImage) and len(image.shape) == 3


@pytest.mark.parametrize(
    "argv",
    [
        ["view", "{f}", "-o", "{out}.html"],
        ["export", "{f}", "-o", "{out}.jsonl"],
        ["replay", "{f}"],
    ],
    ids=["view", "export", "replay"],
)
def test_cli_reports_bad_types_without_a_traceback(
    bad_types_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture, argv: list[str]
):
    args = [a.format(f=bad_types_file, out=tmp_path / "out") for a in argv]
    code = cli_main(args)  # raised before the fix
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    if argv[0] == "replay":
        assert code == 1  # the damaged episodes do not replay identically, and it says so
        assert "file problem" in out and "invalid_field" in out
    else:
        assert code == 0
        assert "invalid_field" in err  # the damage is named, not hidden


def test_sidecar_index_with_wrong_row_types_is_rebuilt_not_trusted(sokoban_file: Path):
    import msgpack

    from agentgym.trajectory.index import build_index, index_path

    rows = build_index(sokoban_file)
    ipath = index_path(sokoban_file)
    data = msgpack.unpackb(ipath.read_bytes(), raw=False)
    data["episodes"] = [{"episode_id": rows[0]["episode_id"], "offsets": "abc"}, 5]
    ipath.write_bytes(msgpack.packb(data, use_bin_type=True))  # fingerprint still matches
    assert trj.load_index(sokoban_file) is None
    with trj.open(sokoban_file) as reader:
        ep = reader.episode(rows[0]["episode_id"])  # raised TypeError before
    assert ep.complete and ep.length == rows[0]["length"]
