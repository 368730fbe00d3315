"""The .agtr format's edges: the preamble's versions, the frame head's checks and size limit,
the msgpack codec's extension types, and what an episode read back reports.
"""

from __future__ import annotations

import msgpack
import numpy as np
import pytest

from agentgym.trajectory import format as fmt
from agentgym.trajectory.format import TrajectoryFormatError
from agentgym.trajectory.reader import Episode


def test_preamble_versions_accepted_and_refused():
    good = fmt.preamble_bytes()
    assert len(good) == fmt.PREAMBLE.size == 12
    assert fmt.check_preamble(good) == (fmt.SCHEMA_MAJOR, fmt.SCHEMA_MINOR)
    assert fmt.check_preamble(fmt.PREAMBLE.pack(fmt.MAGIC, 1, 99)) == (1, 99)
    with pytest.raises(TrajectoryFormatError, match="is empty"):
        fmt.check_preamble(b"", "x.agtr")
    with pytest.raises(TrajectoryFormatError, match=r"not an \.agtr trajectory"):
        fmt.check_preamble(good[:11])
    with pytest.raises(TrajectoryFormatError, match=r"not an \.agtr trajectory"):
        fmt.check_preamble(b"PK\x03\x04" + good[4:])
    with pytest.raises(TrajectoryFormatError, match=r"schema 2\.0, but this agentgym reads major"):
        fmt.check_preamble(fmt.PREAMBLE.pack(fmt.MAGIC, 2, 0))
    with pytest.raises(TrajectoryFormatError, match=r"invalid schema version 0\.3"):
        fmt.check_preamble(fmt.PREAMBLE.pack(fmt.MAGIC, 0, 3))


def test_a_frame_head_round_trips_and_any_flipped_byte_is_refused():
    payload = b"hello frame"
    frame = fmt.frame_bytes(payload)
    head = frame[: fmt.FRAME_HEAD.size]
    assert frame[fmt.FRAME_HEAD.size :] == payload
    assert fmt.parse_frame_head(head) == (len(payload), fmt.crc32(payload))
    for i in range(fmt.FRAME_HEAD.size):
        broken = head[:i] + bytes([head[i] ^ 0x01]) + head[i + 1 :]
        assert fmt.parse_frame_head(broken) is None, i
    assert fmt.parse_frame_head(head[:-1]) is None
    assert fmt.parse_frame_head(head + b"\x00") is None


def test_the_frame_size_limit_on_both_sides(monkeypatch):
    monkeypatch.setattr(fmt, "MAX_FRAME_BYTES", 8)
    at_limit = fmt.frame_bytes(b"x" * 8)
    assert fmt.parse_frame_head(at_limit[:16]) == (8, fmt.crc32(b"x" * 8))
    with pytest.raises(TrajectoryFormatError, match="a frame of 9 bytes exceeds the limit of 8"):
        fmt.frame_bytes(b"x" * 9)
    # a head that claims more than the limit is refused even with good checksums
    partial = fmt._HEAD3.pack(fmt.FRAME_MARK, 9, fmt.crc32(b"x" * 9))
    assert fmt.parse_frame_head(partial + fmt._U32.pack(fmt.crc32(partial))) is None


def test_arrays_and_surrogate_text_round_trip_exactly():
    frame = {
        "ids": np.arange(6, dtype=np.int32).reshape(2, 3),
        "lp": np.array([-0.5, -1.25], dtype=np.float16),
        "one": np.array([7], dtype=np.uint8),
        "text": "lone \udcff surrogate",
        "\ud800key": ["\udfff"],
        "scalar": np.float64(2.5),
        "set": {3, 1},
    }
    back = fmt.unpack(fmt.pack(frame))
    assert back["ids"].dtype == np.int32 and back["ids"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert back["lp"].dtype == np.float16 and back["lp"].tolist() == [-0.5, -1.25]
    assert back["one"].shape == (1,) and back["one"].flags.writeable
    assert back["text"] == "lone \udcff surrogate" and back["\ud800key"] == ["\udfff"]
    assert back["scalar"] == 2.5 and back["set"] == [1, 3]


def test_unknown_extension_types_pass_through_and_bad_arrays_are_refused():
    data = msgpack.packb({"x": msgpack.ExtType(42, b"new")}, use_bin_type=True)
    assert fmt.unpack(data) == {"x": msgpack.ExtType(42, b"new")}
    lying = msgpack.packb(["<i4", [3], b"\x00" * 8], use_bin_type=True)
    with pytest.raises(ValueError, match="shape and byte count disagree"):
        fmt.unpack(msgpack.packb(msgpack.ExtType(fmt.EXT_NDARRAY, lying)))
    objects = msgpack.packb(["|O", [1], b"\x00" * 8], use_bin_type=True)
    with pytest.raises(ValueError, match="refusing ndarray of dtype"):
        fmt.unpack(msgpack.packb(msgpack.ExtType(fmt.EXT_NDARRAY, objects)))


def test_an_episode_read_back_reports_its_end_or_its_steps():
    steps = [{"reward": 1.5}, {"reward": -0.5}, {}]
    open_ep = Episode("e", {"env_id": "X-v0", "task_id": "t", "seed": None}, steps, None)
    assert (open_ep.complete, open_ep.success, open_ep.length) == (False, False, 3)
    assert open_ep.return_ == 1.0 and open_ep.rewards == [1.5, -0.5, 0.0]
    assert open_ep.seed is None
    ended = Episode("e", {"seed": None}, steps, {"return": 9.0, "success": True, "seed": 4})
    assert (ended.complete, ended.success, ended.return_, ended.seed) == (True, True, 9.0, 4)
    no_start = Episode("e", None, [], {"success": False})
    assert no_start.complete is False and no_start.return_ == 0.0
    assert Episode("e", {"seed": 0}, [], {"seed": 5}).seed == 0
