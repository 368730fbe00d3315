"""Trajectory store: record episodes to ``.agtr`` files, read, replay, view and export them.

* :class:`Recorder` writes episodes (one writer, any number of envs);
  :class:`agentgym.wrappers.Record` records a single env.
* :func:`open` streams a file back (episodes, steps, filters); :mod:`.index` keeps an
  optional sidecar index.
* :func:`replay` re-runs the recorded actions and reports the first divergence.
* :func:`render_html` writes the self-contained viewer; :func:`iter_rows` and
  :func:`export_jsonl` turn episodes into training data.

The byte format is documented in docs/trajectory.md and :mod:`.format`.
"""

from agentgym.trajectory.export import episode_messages, export_jsonl, iter_rows
from agentgym.trajectory.format import SCHEMA_MAJOR, SCHEMA_MINOR, TrajectoryFormatError
from agentgym.trajectory.images import StoredImage
from agentgym.trajectory.index import build_index, load_index, load_or_build
from agentgym.trajectory.reader import Episode, Problem, TrajectoryReader, open
from agentgym.trajectory.recorder import Recorder
from agentgym.trajectory.replay import (
    Divergence,
    EpisodeReplay,
    ReplayReport,
    replay,
    replay_episode,
)
from agentgym.trajectory.viewer import render_html
from agentgym.trajectory.writer import TrajectoryWriter

__all__ = [
    "SCHEMA_MAJOR",
    "SCHEMA_MINOR",
    "Divergence",
    "Episode",
    "EpisodeReplay",
    "Problem",
    "Recorder",
    "ReplayReport",
    "StoredImage",
    "TrajectoryFormatError",
    "TrajectoryReader",
    "TrajectoryWriter",
    "build_index",
    "episode_messages",
    "export_jsonl",
    "iter_rows",
    "load_index",
    "load_or_build",
    "open",
    "render_html",
    "replay",
    "replay_episode",
]
