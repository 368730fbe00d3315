"""Field types of the event frames, checked on every read.

A frame can pass both CRCs and still hold the wrong types: a buggy or foreign writer, or a
payload re-framed by hand (``return: "abc"``, ``reward: None``, an image ``shape: 5``). The
reader runs each decoded frame through :func:`check_frame` before anything uses it, so code
downstream (episodes, viewer, export, replay) can rely on the types listed here.

What happens to a bad value:

* a frame of a known type whose ``episode_id`` is not a string cannot be placed in any
  episode: the whole frame is dropped;
* any other known field with a wrong type is removed from the frame (readers then use the
  field's default, e.g. reward 0), and so is a bad image or reward component;
* fields and frame types this version does not know pass through untouched (a newer
  writer's additions, see the schema minor version).

Every change is reported as a message naming the field, the expected type and what was
found; the reader turns each into a :class:`~agentgym.trajectory.reader.Problem`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentgym.trajectory.images import StoredImage

Check = Callable[[Any], bool]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _opt(check: Check) -> Check:
    return lambda v: v is None or check(v)


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _is_dict(v: Any) -> bool:
    return isinstance(v, dict)


def _is_list(v: Any) -> bool:
    return isinstance(v, list)


_COMMON: dict[str, tuple[Check, str]] = {
    "t": (_is_num, "a number (unix time)"),
    "messages": (_is_list, "a list of message maps"),
    "observation": (_is_dict, "a map with 'text' and 'images'"),
    "info": (_is_dict, "a map"),
    "reward_components": (_is_dict, "a map of name -> number"),
    "error": (_opt(_is_str), "a string or nil"),
}

FIELDS: dict[str, dict[str, tuple[Check, str]]] = {
    "episode_start": {
        **_COMMON,
        "env_id": (_opt(_is_str), "a string or nil"),
        "env_kwargs": (_opt(_is_dict), "a map or nil"),
        "task_id": (_opt(_is_str), "a string or nil"),
        "seed": (_opt(_is_int), "an integer or nil"),
        "options": (_opt(_is_dict), "a map or nil"),
        "system_prompt": (_opt(_is_str), "a string"),
        "instruction": (_opt(_is_str), "a string"),
        "tools": (_is_list, "a list of tool maps"),
        "meta": (_opt(_is_dict), "a map"),
    },
    "step": {
        **_COMMON,
        "step": (_is_int, "an integer (1-based step index)"),
        "action": (_is_str, "a string (the model output)"),
        "tool_calls": (_is_list, "a list"),
        "action_valid": (_opt(_is_bool), "true or false"),
        "reward": (_is_num, "a number"),
        "terminated": (_is_bool, "true or false"),
        "truncated": (_is_bool, "true or false"),
        "timings": (_is_dict, "a map of name -> milliseconds"),
        "model_output": (_opt(_is_dict), "a map or nil"),
    },
    "episode_end": {
        **_COMMON,
        "return": (_is_num, "a number"),
        "success": (_is_bool, "true or false"),
        "length": (_is_int, "an integer"),
        "terminated": (_is_bool, "true or false"),
        "truncated": (_is_bool, "true or false"),
        "termination": (_is_str, "a string"),
        "seed": (_opt(_is_int), "an integer or nil"),
    },
}
"""Per frame type: field -> (check, what is expected). Unlisted fields are not checked."""


def _show(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _is_message(m: Any) -> bool:
    """A chat message map: ``role`` and ``content_ref`` (when present) are strings."""
    return (
        isinstance(m, dict)
        and isinstance(m.get("role", ""), str)
        and isinstance(m.get("content_ref", ""), str)
    )


def _image_problem(image: Any) -> str | None:
    if isinstance(image, StoredImage):
        return None
    if not isinstance(image, dict):
        return f"expected a map with png, sha256, shape; got {_show(image)}"
    if not isinstance(image.get("png"), bytes):
        return f"png: expected bytes, got {_show(image.get('png'))}"
    if not isinstance(image.get("sha256", ""), str):
        return f"sha256: expected a hex string, got {_show(image.get('sha256'))}"
    shape = image.get("shape", [])
    if not (isinstance(shape, list) and all(_is_int(n) and n >= 0 for n in shape)):
        return f"shape: expected a list of sizes like [h, w, 3], got {_show(shape)}"
    return None


def _check_observation(obs: dict[str, Any], issues: list[str]) -> None:
    if "text" in obs and not isinstance(obs["text"], str):
        issues.append(f"observation.text: expected a string, got {_show(obs.pop('text'))}")
    images = obs.get("images")
    if images is None:
        return
    if not isinstance(images, list):
        issues.append(f"observation.images: expected a list, got {_show(obs.pop('images'))}")
        return
    kept = []
    for i, image in enumerate(images):
        problem = _image_problem(image)
        if problem is None:
            kept.append(image)
        else:
            issues.append(f"observation.images[{i}] dropped: {problem}")
    obs["images"] = kept


def _check_components(comps: dict[Any, Any], issues: list[str]) -> None:
    for key in list(comps):
        if not isinstance(key, str) or not _is_num(comps[key]):
            issues.append(
                f"reward_components[{key!r}] dropped: expected a number under a string name, "
                f"got {_show(comps.pop(key))}"
            )


def check_frame(frame: dict[str, Any]) -> tuple[dict[str, Any] | None, list[str]]:
    """Check (and repair in place) one decoded frame.

    Returns ``(frame, issues)``; ``frame`` is None when the whole frame must be dropped.
    ``issues`` is empty for a well-formed frame.
    """
    kind = frame.get("type")
    if not isinstance(kind, str):
        return None, [f"type: expected a string, got {_show(kind)}; frame dropped"]
    fields = FIELDS.get(kind)
    if fields is None:  # the header, or a type from a newer writer
        return frame, []
    if not isinstance(frame.get("episode_id"), str):
        return None, [
            f"{kind}.episode_id: expected a string, got {_show(frame.get('episode_id'))}; "
            "frame dropped (it cannot be placed in an episode)"
        ]
    issues: list[str] = []
    for name, (check, expected) in fields.items():
        if name in frame and not check(frame[name]):
            issues.append(f"{kind}.{name}: expected {expected}, got {_show(frame.pop(name))}")
    if isinstance(frame.get("observation"), dict):
        _check_observation(frame["observation"], issues)
    if isinstance(frame.get("reward_components"), dict):
        _check_components(frame["reward_components"], issues)
    for name, keep in (("messages", _is_message), ("tools", _is_dict)):
        items = frame.get(name)
        if isinstance(items, list):
            kept = [m for m in items if keep(m)]
            if len(kept) != len(items):
                issues.append(f"{kind}.{name}: dropped {len(items) - len(kept)} malformed entries")
                frame[name] = kept
    return frame, issues
