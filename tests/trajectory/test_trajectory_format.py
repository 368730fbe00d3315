"""The .agtr byte format: round trips, and bad input that must give clear errors or recover."""

from __future__ import annotations

import struct
import threading
import tracemalloc
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trajectory_helpers import record_sokoban

import agentgym.trajectory as trj
from agentgym.error import AgentGymError
from agentgym.trajectory import format as fmt
from agentgym.trajectory.writer import TrajectoryWriter, scan_good_end


def _frames(path: Path) -> tuple[list[dict], list[trj.Problem]]:
    with trj.open(path) as reader:
        frames = list(reader.frames())
        return frames, list(reader.problems)


def _offsets(path: Path) -> list[int]:
    with trj.open(path) as reader:
        return [o for o, _ in reader.frames_with_offsets()]


# ---- round trips --------------------------------------------------------------------------


def test_numpy_arrays_round_trip_through_the_ext_type(tmp_path: Path) -> None:
    arrays = {
        "token_ids": np.arange(400, dtype=np.int32),
        "logprobs": -np.linspace(0, 3, 400, dtype=np.float32),
        "matrix": np.arange(12, dtype=np.float64).reshape(3, 4)[:, ::2],  # non-contiguous
        "scalar": np.array(7, dtype=np.int16),
        "mask": np.array([True, False, True]),
        "big_endian": np.arange(5, dtype=">u4"),
    }
    path = tmp_path / "a.agtr"
    with TrajectoryWriter(path) as w:
        w.write({"type": "step", "episode_id": "e", "arrays": arrays, "np_scalar": np.float32(2.5)})
    (frame,), problems = _frames(path)
    assert problems == []
    for key, value in arrays.items():
        got = frame["arrays"][key]
        assert isinstance(got, np.ndarray) and got.dtype == value.dtype, key
        np.testing.assert_array_equal(got, value)
    assert frame["np_scalar"] == 2.5


def test_object_arrays_are_not_pickled_but_stored_as_lists(tmp_path: Path) -> None:
    path = tmp_path / "o.agtr"
    with TrajectoryWriter(path) as w:
        w.write({"type": "x", "v": np.array(["a", 1], dtype=object)})
    (frame,), _ = _frames(path)
    assert frame["v"] == ["a", 1]


def test_header_holds_versions_and_creation_time(sokoban_file: Path) -> None:
    with trj.open(sokoban_file) as reader:
        h = reader.header
        assert reader.schema == (fmt.SCHEMA_MAJOR, fmt.SCHEMA_MINOR)
    assert h["type"] == "header" and h["schema"] == [fmt.SCHEMA_MAJOR, fmt.SCHEMA_MINOR]
    assert h["agentgym_version"] and h["created_at"].endswith("+00:00")
    assert {"python", "numpy", "gymnasium", "msgpack"} <= set(h["packages"])


def test_images_are_lossless_png_with_pixel_sha256(tmp_path: Path, pixel_env_id: str) -> None:
    import gymnasium as gym
    from agentgym.wrappers import Record

    path = tmp_path / "pix.agtr"
    env = Record(gym.make(pixel_env_id), path)
    obs, _ = env.reset(seed=3)
    obs2, *_ = env.step("<answer>1</answer>")
    env.close()
    with trj.open(path) as reader:
        (ep,) = list(reader.episodes())
    stored = ep.start["observation"]["images"][0]
    assert isinstance(stored, trj.StoredImage)
    assert stored.png.startswith(b"\x89PNG\r\n\x1a\n")
    np.testing.assert_array_equal(stored.to_array(), obs["images"][0])
    assert stored.verify() and stored.shape == obs["images"][0].shape
    np.testing.assert_array_equal(
        ep.steps[0]["observation"]["images"][0].to_array(), obs2["images"][0]
    )


# ---- bad input: clear errors --------------------------------------------------------------


def test_empty_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.agtr"
    path.write_bytes(b"")
    with pytest.raises(trj.TrajectoryFormatError, match="is empty"):
        trj.open(path)


@pytest.mark.parametrize("data", [b'{"messages": []}\n', b"\x89PNG\r\n\x1a\n0000", b"AG"])
def test_wrong_magic_is_a_clear_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "x.agtr"
    path.write_bytes(data)
    with pytest.raises(trj.TrajectoryFormatError, match=r"not an \.agtr trajectory"):
        trj.open(path)


def test_missing_file_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(AgentGymError, match="no trajectory file"):
        trj.open(tmp_path / "nope.agtr")


def test_unknown_major_version_is_refused(sokoban_file: Path) -> None:
    data = bytearray(sokoban_file.read_bytes())
    data[8:10] = struct.pack("<H", fmt.SCHEMA_MAJOR + 1)
    sokoban_file.write_bytes(bytes(data))
    with pytest.raises(
        trj.TrajectoryFormatError, match=rf"schema 2\.{fmt.SCHEMA_MINOR}.*Upgrade agentgym"
    ):
        trj.open(sokoban_file)


def test_newer_minor_version_and_unknown_fields_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "future.agtr"
    with TrajectoryWriter(path) as w:
        w.write({"type": "episode_start", "episode_id": "e1", "task_id": "t", "new_field": [1]})
        w.write({"type": "hologram", "episode_id": "e1", "data": b"\x00"})  # unknown frame type
        w.write({"type": "step", "episode_id": "e1", "step": 1, "reward": 1.5, "vibes": {"a": 1}})
        w.write({"type": "episode_end", "episode_id": "e1", "return": 1.5, "success": True})
    data = bytearray(path.read_bytes())
    data[10:12] = struct.pack("<H", fmt.SCHEMA_MINOR + 7)
    path.write_bytes(bytes(data))
    with trj.open(path) as reader:
        (ep,) = list(reader.episodes())
        assert reader.problems == []
    assert ep.task_id == "t" and ep.return_ == 1.5 and ep.success and ep.length == 1


# ---- bad input: recovered reads -----------------------------------------------------------


def test_truncation_at_any_point_reads_a_clean_prefix(sokoban_file: Path) -> None:
    full, _ = _frames(sokoban_file)
    data = sokoban_file.read_bytes()
    offsets = _offsets(sokoban_file)
    cut_points = sorted(
        {
            *range(fmt.PREAMBLE.size + 1, len(data), max(1, len(data) // 40)),
            *(o + 5 for o in offsets),
        }
    )
    for cut in cut_points:
        sokoban_file.write_bytes(data[:cut])
        frames, problems = _frames(sokoban_file)
        assert frames == full[: len(frames)], cut
        ends = [*offsets[1:], len(data)]  # where each frame (header first) ends
        whole_events = max(0, sum(1 for e in ends if e <= cut) - 1)
        assert len(frames) == whole_events, cut
        assert all(p.kind == "incomplete_tail" for p in problems), (cut, problems)
        if cut not in offsets:
            assert len(problems) == 1


def test_flipped_payload_byte_skips_one_frame_and_reports_it(sokoban_file: Path) -> None:
    full, _ = _frames(sokoban_file)
    offsets = _offsets(sokoban_file)
    data = bytearray(sokoban_file.read_bytes())
    victim = offsets[4]  # a frame in the middle (offsets[0] is the header)
    data[victim + fmt.FRAME_HEAD.size + 10] ^= 0x40
    sokoban_file.write_bytes(bytes(data))
    frames, problems = _frames(sokoban_file)
    assert frames == full[:3] + full[4:]
    assert [(p.kind, p.offset) for p in problems] == [("corrupt_frame", victim)]
    assert "resynchronised" in problems[0].detail


@pytest.mark.parametrize("where", [0, 4, 8, 12])  # mark, length, payload crc, head crc
def test_flipped_head_byte_resynchronises(sokoban_file: Path, where: int) -> None:
    full, _ = _frames(sokoban_file)
    offsets = _offsets(sokoban_file)
    data = bytearray(sokoban_file.read_bytes())
    data[offsets[5] + where + 1] ^= 0xFF
    sokoban_file.write_bytes(bytes(data))
    frames, problems = _frames(sokoban_file)
    assert frames == full[:4] + full[5:]
    assert [p.kind for p in problems] == ["corrupt_frame"]


def _evil_head(length: int) -> bytes:
    partial = struct.pack("<4sII", fmt.FRAME_MARK, length, 0)
    return partial + struct.pack("<I", zlib.crc32(partial))


@pytest.mark.parametrize("length", [0xFFFF_FFF0, 0x8000_0000, fmt.MAX_FRAME_BYTES - 1])
def test_frame_claiming_gigabytes_is_never_allocated(sokoban_file: Path, length: int) -> None:
    full, _ = _frames(sokoban_file)
    offsets = _offsets(sokoban_file)
    data = sokoban_file.read_bytes()
    # a well-formed head (valid head CRC) claiming `length` bytes, spliced in the middle
    spliced = data[: offsets[3]] + _evil_head(length) + data[offsets[3] :]
    sokoban_file.write_bytes(spliced)
    tracemalloc.start()
    try:
        frames, problems = _frames(sokoban_file)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024 * 1024
    # the bogus head is skipped and the reader resynchronises on the next intact frame
    assert frames == full
    assert [(p.kind, p.offset) for p in problems] == [("corrupt_frame", offsets[3])]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(junk=st.binary(max_size=600), pos=st.integers(min_value=0, max_value=10_000))
def test_random_junk_never_crashes_the_reader(tmp_path_factory, junk: bytes, pos: int) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "f.agtr"
    with TrajectoryWriter(path) as w:
        for i in range(6):
            w.write({"type": "step", "episode_id": "e", "step": i, "text": "x" * (i * 50)})
    data = path.read_bytes()
    at = fmt.PREAMBLE.size + pos % (len(data) - fmt.PREAMBLE.size)
    path.write_bytes(data[:at] + junk + data[at + len(junk) // 2 :])
    with trj.open(path) as reader:
        frames = list(reader.frames())
        list(reader.episodes())
    assert all(f["type"] == "step" for f in frames)


# ---- append and concurrency ---------------------------------------------------------------


def test_reopen_for_append_truncates_a_torn_tail(tmp_path: Path) -> None:
    path = record_sokoban(tmp_path / "r.agtr", episodes=2)
    data = path.read_bytes()
    path.write_bytes(data[:-7])  # a torn last frame
    good_end, _ = scan_good_end(path)
    with trj.Recorder(path, mode="a") as rec:
        assert rec.writer.truncated_bytes == len(data) - 7 - good_end > 0
        ep = rec.start_episode(env_id="agentgym/Sokoban-Tiny-v0", obs={"text": "hi"}, info={})
        rec.end_episode(ep)
    with trj.open(path) as reader:
        episodes = list(reader.episodes())
        assert reader.problems == []
    # the first episode, the second without its torn end frame, and the appended one
    texts = [e.start["observation"]["text"] for e in episodes]
    assert len(episodes) == 3 and texts.count("hi") == 1
    assert [e.complete for e in episodes] == [True, True, False]  # unfinished ones come last
    assert episodes[1].start["observation"]["text"] == "hi"


def test_append_after_mid_file_damage_keeps_the_intact_frames(sokoban_file: Path) -> None:
    full, _ = _frames(sokoban_file)
    offsets = _offsets(sokoban_file)
    data = bytearray(sokoban_file.read_bytes())
    data[offsets[3] + fmt.FRAME_HEAD.size + 3] ^= 0x01  # damage one frame in the middle
    sokoban_file.write_bytes(bytes(data) + b"\xa7AG")  # and leave a torn tail
    with TrajectoryWriter(sokoban_file, "a") as w:
        assert w.truncated_bytes == 3
        w.write({"type": "note", "episode_id": "x"})
    frames, problems = _frames(sokoban_file)
    assert frames[:-1] == full[:2] + full[3:] and frames[-1]["type"] == "note"
    assert [p.kind for p in problems] == ["corrupt_frame"]


def test_reader_follows_a_file_being_written(tmp_path: Path) -> None:
    path = tmp_path / "live.agtr"
    writer = TrajectoryWriter(path)
    stop = threading.Event()

    def write() -> None:
        i = 0
        while not stop.is_set() and i < 3000:
            writer.write({"type": "step", "episode_id": "e", "step": i, "pad": "p" * (i % 997)})
            i += 1

    t = threading.Thread(target=write)
    t.start()
    seen = []
    try:
        for _ in range(30):
            with trj.open(path) as reader:
                steps = [f["step"] for f in reader.frames()]
                assert steps == list(range(len(steps)))
                assert all(p.kind == "incomplete_tail" for p in reader.problems)
                seen.append(len(steps))
    finally:
        stop.set()
        t.join()
        writer.close()
    assert seen == sorted(seen)
    with trj.open(path) as reader:
        assert len(list(reader.frames())) == writer.frames_written - 1  # minus the header
        assert reader.problems == []


def test_sidecar_index_filters_and_goes_stale_on_append(tmp_path: Path) -> None:
    from agentgym.agents.scripted import RandomPolicy
    from agentgym.episodes import play

    path = tmp_path / "mix.agtr"
    env_id = "agentgym/Sokoban-Tiny-v0"
    with trj.Recorder(path) as rec:
        play(
            env_id,
            RandomPolicy(0),
            episodes=4,
            seed=0,
            progress=False,
            **rec.play_callbacks(env_id),
        )
    rows = trj.build_index(path)
    assert trj.load_index(path) == rows and len(rows) == 4
    with trj.open(path) as reader:
        no_index = sorted(e.episode_id for e in reader.episodes(success=False, use_index=False))
        with_index = sorted(e.episode_id for e in reader.episodes(success=False))
        by_id = reader.episode(rows[2]["episode_id"])
    assert no_index == with_index == sorted(r["episode_id"] for r in rows if not r["success"])
    assert by_id.episode_id == rows[2]["episode_id"] and by_id.length == rows[2]["length"]
    with trj.Recorder(path, mode="a") as rec:
        rec.end_episode(rec.start_episode(env_id=env_id, obs={"text": ""}, info={}))
    assert trj.load_index(path) is None
    assert len(trj.load_or_build(path)) == 5


def test_many_threads_share_one_recorder_without_mixing_bytes(tmp_path: Path) -> None:
    path = tmp_path / "threads.agtr"
    rec = trj.Recorder(path, fsync=False)

    def worker(k: int) -> None:
        ep = rec.start_episode(env_id="agentgym/Sokoban-Tiny-v0", obs={"text": str(k)}, info={})
        for i in range(150):
            rec.record_step(
                ep,
                action=f"{k}:{i}",
                obs={"text": "y" * (k * 300 + i)},
                reward=float(k),
                terminated=False,
                truncated=False,
                info={},
            )
        rec.end_episode(ep)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rec.close()
    with trj.open(path) as reader:
        episodes = list(reader.episodes())
        assert reader.problems == []
    assert len({e.episode_id for e in episodes}) == 8
    for ep in episodes:
        k = int(ep.start["observation"]["text"])
        assert [s["action"] for s in ep.steps] == [f"{k}:{i}" for i in range(150)]
        assert ep.return_ == 150.0 * k and ep.end["termination"] == "aborted"


def test_fsync_mode_and_close_ends_open_episodes(tmp_path: Path) -> None:
    path = tmp_path / "sync.agtr"
    with trj.Recorder(path, fsync=True) as rec:
        ep = rec.start_episode(env_id="agentgym/Sokoban-Tiny-v0", obs={"text": "a"}, info={})
        rec.record_step(
            ep,
            action="x",
            obs={"text": "b"},
            reward=0.5,
            terminated=False,
            truncated=False,
            info={"reward_components": {"outcome": 0.5}},
        )
        assert rec.open_episodes == [ep]
    with trj.open(path) as reader:
        (got,) = list(reader.episodes())
    assert got.end["termination"] == "aborted" and got.end["reward_components"] == {"outcome": 0.5}
    with pytest.raises(trj.TrajectoryFormatError, match="after close"):
        rec.writer.write({"type": "x"})


def test_index_of_a_rewritten_file_of_equal_size_is_not_trusted(tmp_path: Path) -> None:
    path = record_sokoban(tmp_path / "same.agtr", episodes=2)
    trj.build_index(path)
    data = bytearray(path.read_bytes())
    data[40] ^= 0x01  # same size, different header bytes: e.g. another recording
    path.write_bytes(bytes(data))
    assert trj.load_index(path) is None


def test_extra_observation_keys_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "extra.agtr"
    with trj.Recorder(path) as rec:
        ep = rec.start_episode(env_id="e", obs={"text": "a", "url": "file:///x"}, info={})
        rec.record_step(
            ep,
            action="a",
            obs={"text": "b", "dom": [1, 2]},
            reward=0.0,
            terminated=True,
            truncated=False,
            info={},
        )
    with trj.open(path) as reader:
        (got,) = list(reader.episodes())
    assert got.start["observation"] == {"text": "a", "images": [], "url": "file:///x"}
    assert got.steps[0]["observation"] == {"text": "b", "images": [], "dom": [1, 2]}
