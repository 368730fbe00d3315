"""Helpers for the trajectory tests: a tiny vision env and small real recordings.

A uniquely named module (not ``conftest``) so the env's entry point always resolves here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from agentgym.agents.scripted import OraclePolicy
from agentgym.core import AgentEnv, ResetOutcome, StepOutcome
from agentgym.episodes import play
from agentgym.parsing import ParsedAction
from agentgym.trajectory import Recorder

PIXEL_ID = "tests/Pixels-v0"


class PixelEnv(AgentEnv):
    """Guess a hidden digit; every observation carries a screenshot drawn from the state."""

    metadata: ClassVar[dict[str, Any]] = {"family": "tests", "render_modes": ["ansi"]}
    default_reward_weights: ClassVar[Mapping[str, float]] = {"format": 0.1, "outcome": 1.0}
    default_max_turns = 4

    def __init__(self, height: int = 48, width: int = 64, **kwargs: Any):
        super().__init__(**kwargs)
        self.height, self.width = height, width
        self._target = 0
        self._guesses: list[int] = []

    def task_ids(self, split: str | None = None) -> Sequence[str]:
        return [f"pix-{i}" for i in range(10)] if (split or self.split) == "train" else ["pix-t"]

    def _image(self) -> np.ndarray:
        img = np.zeros((self.height, self.width, 3), np.uint8)
        img[..., 0] = self._noise
        img[: 8 * (len(self._guesses) + 1), : 6 * (self._target + 1), 1] = 255
        return img

    def _reset(self, task_id: str, options: Mapping[str, Any]) -> ResetOutcome:
        self._target = int(self.np_random.integers(10))
        self._noise = self.np_random.integers(0, 255, (self.height, self.width), dtype=np.uint8)
        self._guesses = []
        return ResetOutcome(
            text="Guess the digit shown by the green bar's width.",
            instruction="Answer with <answer>d</answer>.",
            system_prompt="You see images.",
            images=(self._image(),),
        )

    def _step(self, action: ParsedAction) -> StepOutcome:
        guess = -1
        if action.answer is not None and action.answer.strip().isdigit():
            guess = int(action.answer.strip())
        self._guesses.append(guess)
        right = guess == self._target
        return StepOutcome(
            text="right" if right else f"wrong: {guess}",
            images=(self._image(),),
            components={"outcome": float(right)},
            terminated=right,
            success=right,
            action_valid=guess >= 0,
        )

    def state_key(self) -> str:
        return f"{self._target}:{len(self._guesses)}"

    def oracle_action(self) -> str:
        return f"<answer>{self._target if self._guesses else (self._target + 1) % 10}</answer>"


def record_sokoban(path: Path, episodes: int = 3, env_id: str = "agentgym/Sokoban-Tiny-v0") -> Path:
    """A small real recording: oracle episodes of a Sokoban id."""
    with Recorder(path) as rec:
        play(
            env_id,
            OraclePolicy(),
            episodes=episodes,
            seed=0,
            num_envs=2,
            progress=False,
            **rec.play_callbacks(env_id),
        )
    return path


def record_pixels(path: Path, env_id: str = PIXEL_ID, seeds: Sequence[int] = (0, 1)) -> Path:
    """A small real recording of the pixel env (screenshots on every observation)."""
    import gymnasium as gym
    from agentgym.wrappers import Record

    with Recorder(path) as rec:
        env = Record(gym.make(env_id), rec)
        for seed in seeds:
            env.reset(seed=seed)
            for _ in range(3):
                *_, terminated, truncated, _ = env.step(env.unwrapped.oracle_action())
                if terminated or truncated:
                    break
        env.close()
    return path


def raw_frames(path: Path) -> list[dict[str, Any]]:
    """Every decoded frame of a file, header included, exactly as stored (images as maps)."""
    from agentgym.trajectory import TrajectoryReader

    with TrajectoryReader(path) as reader:
        return [frame for _, frame in reader.frames_with_offsets()]


def write_frames(path: Path, frames: Sequence[Mapping[str, Any]]) -> Path:
    """Write ``frames`` as a file whose every frame has valid checksums (whatever it holds)."""
    from agentgym.trajectory import format as fmt

    parts = [fmt.preamble_bytes()]
    parts += [fmt.frame_bytes(fmt.pack(dict(frame))) for frame in frames]
    path.write_bytes(b"".join(parts))
    return path


ECHO_ID = "tests/Echo-v0"


class EchoEnv(AgentEnv):
    """Echoes the raw action back in the observation, lone surrogates and all.

    It breaks the contract on purpose (observations must be valid UTF-8), to show what the
    recorder stores when an env does.
    """

    metadata: ClassVar[dict[str, Any]] = {"family": "tests", "render_modes": ["ansi"]}
    default_reward_weights: ClassVar[Mapping[str, float]] = {"format": 0.1, "outcome": 1.0}
    default_max_turns = 6

    def task_ids(self, split: str | None = None) -> Sequence[str]:
        return ["echo-0", "echo-1"] if (split or self.split) == "train" else ["echo-t"]

    def _reset(self, task_id: str, options: Mapping[str, Any]) -> ResetOutcome:
        self._turns = 0
        return ResetOutcome(text="Say anything.", instruction="Say anything.")

    def _step(self, action: ParsedAction) -> StepOutcome:
        self._turns += 1
        done = action.answer is not None
        return StepOutcome(
            text=f"you said: {action.raw}",
            components={"outcome": float(done)},
            terminated=done,
            success=done,
        )

    def state_key(self) -> str:
        return str(self._turns)


def run_cli(*argv: str) -> tuple[int, str]:
    """Run ``agentgym ARGV`` in this process; (exit code, stdout and stderr together)."""
    import contextlib
    import io

    from agentgym.cli import main as cli_main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = cli_main(list(argv))
    return code, out.getvalue()
