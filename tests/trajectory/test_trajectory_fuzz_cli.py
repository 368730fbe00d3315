"""``agentgym view|export|replay`` over 1,000 damaged files: no traceback, ever (issue 15).

The files are made from real recordings of a text env (Sokoban) and a visual env (VisualMaze,
screenshots on every observation) by :mod:`trajectory_fuzz`: flipped bytes, truncation,
splices, and payloads re-framed with valid checksums but wrong types. Each file goes through
all three commands in-process (``agentgym.cli.main``, 3,000 runs); a few go through the real
command line in a subprocess too.
"""

from __future__ import annotations

import contextlib
import functools
import io
import subprocess
import sys
from pathlib import Path

import pytest
from trajectory_fuzz import damaged_file
from trajectory_helpers import raw_frames

import agentgym.cli as cli
from agentgym.agents.scripted import OraclePolicy
from agentgym.cli import main as cli_main
from agentgym.episodes import play
from agentgym.trajectory import Recorder

FILES = 1000
ENVS = (("agentgym/Sokoban-Tiny-v0", 2), ("agentgym/VisualMaze-v0", 1))


def _record(path: Path, env_id: str, episodes: int) -> Path:
    with Recorder(path) as rec:
        play(
            env_id,
            OraclePolicy(),
            episodes=episodes,
            seed=0,
            progress=False,
            **rec.play_callbacks(env_id),
        )
    return path


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("real")
    return [
        _record(folder / f"{env_id.split('/')[1]}.agtr", env_id, episodes)
        for env_id, episodes in ENVS
    ]


def _commands(path: Path, out: Path, index: int) -> list[list[str]]:
    return [
        ["view", str(path), "-o", str(out) + ".html"],
        ["export", str(path), "-o", str(out) + ".jsonl", "--images", "data_url"],
        ["replay", str(path), "--json"] if index % 2 else ["replay", str(path)],
    ]


@pytest.mark.slow
def test_cli_survives_1000_damaged_recordings(
    recordings: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # main() builds its argparse parser on every call (5 ms, most of a view or export of a
    # small file); build it once so the 3,000 runs test the commands, not argparse
    monkeypatch.setattr(cli, "build_parser", functools.cache(cli.build_parser))
    data = [p.read_bytes() for p in recordings]
    frames = [raw_frames(p) for p in recordings]
    path, out = tmp_path / "damaged.agtr", tmp_path / "out"
    failures: list[str] = []
    codes: dict[int, int] = {}
    for index in range(FILES):
        blob, what = damaged_file(index, data, frames)
        path.write_bytes(blob)
        for argv in _commands(path, out, index):
            stdout, stderr = io.StringIO(), io.StringIO()
            try:
                with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                    code = cli_main(argv)
            except BaseException as exc:  # the bug this test is about
                failures.append(f"file {index} ({what}): {argv[0]} raised {exc!r}")
                (tmp_path / f"failure-{index}.agtr").write_bytes(blob)
                continue
            if "Traceback" in stdout.getvalue() + stderr.getvalue() or code not in (0, 1, 2):
                failures.append(f"file {index} ({what}): {argv[0]} exit {code}")
            codes[code] = codes.get(code, 0) + 1
    assert failures == [], f"{len(failures)} tracebacks:\n" + "\n".join(failures[:20])
    # the damage was real: some files could not be read at all, some did not replay
    assert codes.get(2, 0) > 0 and codes.get(1, 0) > 0 and codes.get(0, 0) > 0


@pytest.mark.slow
def test_real_command_line_on_damaged_recordings(recordings: list[Path], tmp_path: Path):
    data = [p.read_bytes() for p in recordings]
    frames = [raw_frames(p) for p in recordings]
    for index, command in ((1, "view"), (2, "export"), (3, "replay")):
        blob, what = damaged_file(index, data, frames)
        path = tmp_path / f"damaged-{index}.agtr"
        path.write_bytes(blob)
        argv = [sys.executable, "-m", "agentgym", command, str(path)]
        if command != "replay":
            argv += ["-o", str(tmp_path / f"out-{index}.{command}")]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert proc.returncode in (0, 1, 2), (what, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr + proc.stdout, (what, proc.stderr[-2000:])
