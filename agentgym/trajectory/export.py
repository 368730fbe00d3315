"""Exporters: episodes as OpenAI-style chat messages (JSONL for SFT) and as plain dict rows.

:func:`episode_messages` rebuilds the whole conversation of an episode: the system prompt,
the task, then each model output as an ``assistant`` message (the raw text the model wrote,
tool-call markup included, which is what SFT should imitate) and each env feedback as a
``user`` message. Screenshots become ``image_url`` parts with PNG data URLs (or are left out).

:func:`iter_rows` yields one flat dict per episode with a fixed set of keys and simple
types, so ``datasets.Dataset.from_generator(lambda: iter_rows(path))`` works without this
module importing ``datasets``.

Both give valid UTF-8 text only: a lone surrogate a model emitted (kept exactly in the
``.agtr`` file, see :mod:`.format`) becomes U+FFFD, as tokenizers and Arrow need.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentgym.text import safe_text
from agentgym.trajectory.images import StoredImage
from agentgym.trajectory.reader import Episode, Problem, TrajectoryReader


def _observation_content(frame: dict[str, Any], mode: str) -> Any:
    obs = frame.get("observation") or {}
    text = obs.get("text", "")
    images = [im for im in obs.get("images", []) or [] if isinstance(im, StoredImage)]
    if not images or mode == "omit":
        return text
    parts: list[dict[str, Any]] = [
        {
            "type": "image_url",
            "image_url": {"url": "data:image/png;base64," + base64.b64encode(im.png).decode()},
        }
        for im in images
    ]
    parts.append({"type": "text", "text": text})
    return parts


def resolve_message(frame: dict[str, Any], message: dict[str, Any], images: str) -> dict:
    """A stored message with its ``content_ref`` (if any) replaced by real ``content``.

    ``content_ref`` names the frame field that holds the content, so the same text is not
    stored twice: ``"observation"`` (text, plus image parts), ``"action"``, ``"system_prompt"``.
    """
    ref = message.get("content_ref")
    if not isinstance(ref, str):
        ref = None
    out = {k: v for k, v in message.items() if k != "content_ref"}
    if ref == "observation":
        out["content"] = _observation_content(frame, images)
    elif isinstance(ref, str):
        out["content"] = frame.get(ref, "")
    return out


def episode_messages(episode: Episode, *, images: str = "data_url") -> list[dict[str, Any]]:
    """The full chat of ``episode`` as OpenAI-style messages.

    Args:
        images: ``"data_url"`` (image parts with base64 PNG data URLs) or ``"omit"`` (text only).
    """
    if images not in ("data_url", "omit"):
        raise ValueError(f"images must be 'data_url' or 'omit', got {images!r}")
    out: list[dict[str, Any]] = []
    frames = ([episode.start] if episode.start else []) + episode.steps
    for frame in frames:
        for msg in frame.get("messages", []) or []:
            if isinstance(msg, dict):
                out.append(resolve_message(frame, msg, images))
    return out


def _summary(ep: Episode) -> dict[str, Any]:
    start = ep.start or {}
    return {
        "episode_id": safe_text(ep.episode_id),
        "env_id": safe_text(ep.env_id or ""),
        "task_id": safe_text(ep.task_id or ""),
        "seed": -1 if ep.seed is None else int(ep.seed),
        "return": ep.return_,
        "success": ep.success,
        "length": ep.length,
        "complete": ep.complete,
        "termination": (ep.end or {}).get("termination", "incomplete"),
        "tools_json": json.dumps(_jsonable(start.get("tools", []) or [])),  # ASCII
    }


def iter_rows(
    path: str | os.PathLike[str], *, include_images: bool = True, **filters: Any
) -> Iterator[dict[str, Any]]:
    """One plain dict per episode, with the same keys and value types on every row.

    Keys: the episode summary (``episode_id``, ``env_id``, ``task_id``, ``seed`` (-1 if
    unknown), ``return``, ``success``, ``length``, ``complete``, ``termination``,
    ``tools_json``), ``messages`` (list of ``{"role", "content"}`` with text content),
    ``rewards`` (per step), ``actions``, and ``images`` (list of ``{"bytes": png}``, the
    form ``datasets.Image`` accepts; empty without screenshots). ``filters`` go to
    :meth:`TrajectoryReader.episodes` (``task_id``, ``success``, ``min_return``...).
    """
    with TrajectoryReader(path) as reader:
        for ep in reader.episodes(**filters):
            row = _summary(ep)
            row["messages"] = [
                {
                    "role": safe_text(str(m.get("role", ""))),
                    "content": safe_text(str(m.get("content", ""))),
                }
                for m in episode_messages(ep, images="omit")
            ]
            row["rewards"] = ep.rewards
            row["actions"] = [safe_text(str(s.get("action", ""))) for s in ep.steps]
            pics: list[dict[str, bytes]] = []
            if include_images:
                for frame in ([ep.start] if ep.start else []) + ep.steps:
                    for im in (frame.get("observation") or {}).get("images") or []:
                        if isinstance(im, StoredImage):
                            pics.append({"bytes": im.png})
            row["images"] = pics
            yield row


def _jsonable(value: Any) -> Any:
    """``value`` with what JSON cannot hold made plain: map keys as strings, bytes as base64
    text, other objects (numpy arrays, unknown msgpack extensions) as lists or their repr.

    Recorded messages and tools are free-form, and a damaged or foreign file may put anything
    there; one odd value must not stop an export.
    """
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if hasattr(value, "tolist"):
        return _jsonable(value.tolist())
    return repr(value)


def export_jsonl(
    path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    images: str = "data_url",
    problems: list[Problem] | None = None,
    **filters: Any,
) -> int:
    """Write one JSON line per episode: ``{"messages": [...], "tools": [...], ...summary}``.

    Returns the number of episodes written. ``filters`` as in :func:`iter_rows`;
    ``problems``, if given, receives what the read skipped or repaired.
    """
    count = 0
    with TrajectoryReader(path) as reader, Path(out).open("w", encoding="utf-8") as f:
        for ep in reader.episodes(**filters):
            row = _summary(ep)
            row["tools"] = json.loads(row.pop("tools_json"))
            row["messages"] = _jsonable(episode_messages(ep, images=images))
            # Valid UTF-8 on every line: lone surrogates (kept in the .agtr file) -> U+FFFD.
            f.write(safe_text(json.dumps(row, ensure_ascii=False)) + "\n")
            count += 1
        if problems is not None:
            problems.extend(reader.problems)
    return count
