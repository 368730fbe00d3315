"""The sidecar index is a cache the frames must confirm, never the truth (issue 23).

With a still-fresh index (same size, same first 4 KiB), one flipped byte in a step frame
made ``reader.episode(id)`` raise instead of skipping the frame, and index rows that lie
about ``success`` made ``episodes(success=True)`` return none of the real successes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import agentgym.trajectory as trj
from agentgym.agents.scripted import OraclePolicy, RandomPolicy
from agentgym.episodes import play
from agentgym.trajectory import format as fmt
from agentgym.trajectory.index import build_index, index_path, load_index

ENV_ID = "agentgym/Sokoban-Small-v0"


@pytest.fixture
def mixed_file(tmp_path: Path) -> Path:
    """3 oracle successes, then 3 random-policy failures, with a fresh index."""
    path = tmp_path / "mixed.agtr"
    with trj.Recorder(path) as rec:
        for policy, seed in ((OraclePolicy(), 0), (RandomPolicy(1), 10)):
            play(
                ENV_ID,
                policy,
                episodes=3,
                seed=seed,
                progress=False,
                **rec.play_callbacks(ENV_ID, seed=seed),
            )
    build_index(path)
    return path


def _rewrite_index(path: Path, edit) -> None:
    data = fmt.unpack(index_path(path).read_bytes())
    for row in data["episodes"]:
        edit(row)
    index_path(path).write_bytes(fmt.pack(data))
    assert load_index(path) is not None  # still "fresh": the fingerprint matches


def _steps(ep: trj.Episode) -> list[int]:
    return [s["step"] for s in ep.steps]


def test_flipped_byte_in_a_step_past_4k_is_skipped_not_raised(mixed_file: Path):
    rows = build_index(mixed_file)
    target = next(r for r in rows if r["offsets"][1] > 4096 and r["length"] >= 2)
    bad_offset = target["offsets"][1]  # its first step frame
    data = bytearray(mixed_file.read_bytes())
    data[bad_offset + fmt.FRAME_HEAD.size + 20] ^= 0xFF  # inside the payload: CRC fails
    mixed_file.write_bytes(bytes(data))
    assert load_index(mixed_file) is not None  # size and first 4 KiB unchanged

    with trj.open(mixed_file) as reader:
        by_id = reader.episode(target["episode_id"])
        assert [p.kind for p in reader.problems] == ["corrupt_frame"]
    with trj.open(mixed_file) as reader:
        scanned = next(
            e for e in reader.episodes(use_index=False) if e.episode_id == target["episode_id"]
        )
    assert _steps(by_id) == _steps(scanned) == list(range(2, target["length"] + 1))
    assert by_id.end == scanned.end and by_id.start == scanned.start


def test_rows_that_lie_about_success_do_not_change_filtered_results(mixed_file: Path):
    with trj.open(mixed_file) as reader:
        truth = {e.episode_id: e.success for e in reader.episodes(use_index=False)}
    successes = sorted(k for k, v in truth.items() if v)
    failures = sorted(k for k, v in truth.items() if not v)
    assert len(successes) == 3 and len(failures) == 3

    for lie in (False, True):
        _rewrite_index(mixed_file, lambda row, lie=lie: row.update(success=lie, **{"return": 0}))
        with trj.open(mixed_file) as reader:
            got_ok = sorted(e.episode_id for e in reader.episodes(success=True))
            got_bad = sorted(e.episode_id for e in reader.episodes(success=False))
            got_high = sorted(e.episode_id for e in reader.episodes(min_return=5.0))
            assert reader.problems == []
        assert got_ok == successes
        assert got_bad == failures
        assert got_high == successes  # oracle returns are above 5, random ones below
        with trj.open(mixed_file) as reader:
            ep = next(reader.episodes(success=True))
        assert ep.complete and ep.length == len(ep.steps) > 0 and ep.start is not None


def test_rows_missing_from_the_index_are_still_found_by_filters(mixed_file: Path):
    data = fmt.unpack(index_path(mixed_file).read_bytes())
    data["episodes"] = data["episodes"][:1]
    index_path(mixed_file).write_bytes(fmt.pack(data))
    with trj.open(mixed_file) as reader:
        assert len(list(reader.episodes(success=True))) == 3


def test_rows_pointing_at_the_wrong_frames_fall_back_to_a_scan(mixed_file: Path):
    rows = build_index(mixed_file)
    first, second = rows[0], rows[1]
    with trj.open(mixed_file) as reader:
        expected = {e.episode_id: _steps(e) for e in reader.episodes(use_index=False)}

    # another episode's offsets, then a row with its steps left out
    _rewrite_index(
        mixed_file,
        lambda row: (
            row.update(offsets=second["offsets"])
            if row["episode_id"] == first["episode_id"]
            else None
        ),
    )
    with trj.open(mixed_file) as reader:
        assert _steps(reader.episode(first["episode_id"])) == expected[first["episode_id"]]
    _rewrite_index(
        mixed_file,
        lambda row: row.update(offsets=[row["offsets"][0], row["offsets"][-1]]),
    )
    with trj.open(mixed_file) as reader:
        for row in rows:
            assert _steps(reader.episode(row["episode_id"])) == expected[row["episode_id"]]
