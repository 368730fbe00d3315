"""The JSON the env server sends: schemas, JSON-safe values, observation/state payloads."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

try:
    import orjson
except ImportError:  # the standard library is the fallback codec
    orjson = None  # type: ignore[assignment]

from agentgym.integrations.session import SessionStart, SessionTurn
from agentgym.server.scheduler import Timed
from agentgym.server.sessions import Session
from agentgym.text import safe_text


def dumps(payload: Any) -> str:
    """``payload`` as compact JSON text that always encodes as UTF-8.

    Lone surrogates (a model's half emoji, echoed in an observation or in the parsed tool
    calls of ``info``) become U+FFFD, as everywhere an observation is echoed: written raw they
    make the UTF-8 encoding of the reply fail (a 500 after the env took the turn), and written
    as ``\\ud800`` escapes they would hand the client a string its tokenizer cannot encode.
    """
    return dumps_bytes(payload).decode("utf-8")


def dumps_bytes(payload: Any) -> bytes:
    """:func:`dumps` as UTF-8 bytes: orjson when installed (several times faster; it writes
    numpy values, tuples and non-finite floats the way :func:`jsonable` makes them), else, and
    for what orjson refuses (lone surrogates, keys it cannot write), the standard library."""
    if orjson is not None:
        try:
            return orjson.dumps(payload, default=_orjson_default, option=orjson.OPT_NON_STR_KEYS)
        except TypeError:  # orjson.JSONEncodeError: a lone surrogate, a key it cannot write
            pass
    text = json.dumps(jsonable(payload), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return safe_text(text).encode("utf-8")


def _orjson_default(obj: Any) -> Any:
    """What orjson cannot write itself, as :func:`jsonable` writes it."""
    if isinstance(obj, np.ndarray | np.generic):
        return jsonable(obj)
    return str(obj)


def loads(raw: str | bytes) -> Any:
    """Parse JSON text: orjson when installed; the standard library for what orjson refuses
    (escaped lone surrogates, which the stdlib accepts) and for its clearer error messages."""
    if orjson is not None:
        try:
            return orjson.loads(raw)
        except (orjson.JSONDecodeError, TypeError):
            pass
    return json.loads(raw)


ACTION_SCHEMA: dict[str, Any] = {
    "title": "AgentGymAction",
    "description": "One assistant turn: raw text, or an OpenAI assistant message.",
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "The model's raw output for the turn."},
        "content": {"type": ["string", "null"]},
        "tool_calls": {"type": "array", "items": {"type": "object"}},
    },
}
OBSERVATION_SCHEMA: dict[str, Any] = {
    "title": "AgentGymObservation",
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "What is new since the last turn."},
        "images": {"type": "array", "items": {"type": "string", "format": "data-url"}},
        "messages": {"type": "array", "items": {"type": "object"}},
        "tools": {"type": "array", "items": {"type": "object"}},
        "info": {"type": "object"},
        "episode_id": {"type": "string"},
    },
    "required": ["text", "messages", "info", "episode_id"],
}
STATE_SCHEMA: dict[str, Any] = {
    "title": "AgentGymState",
    "type": "object",
    "properties": {
        "episode_id": {"type": ["string", "null"]},
        "step_count": {"type": "integer", "minimum": 0},
        "env_id": {"type": "string"},
        "task_id": {"type": ["string", "null"]},
        "state_key": {"type": ["string", "null"]},
        "done": {"type": "boolean"},
        "total_reward": {"type": "number"},
    },
}


def jsonable(obj: Any) -> Any:
    """``obj`` with numpy values, tuples and non-finite floats made JSON-safe."""
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist()) if obj.size <= 4096 else f"<array {obj.shape} {obj.dtype}>"
    if isinstance(obj, np.generic):
        return jsonable(obj.item())  # a NaN float64 is a NaN float
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    return str(obj)


def _images(messages: list[dict[str, Any]]) -> list[str]:
    out = []
    for m in messages:
        if isinstance(m.get("content"), list):
            out += [p["image_url"]["url"] for p in m["content"] if p.get("type") == "image_url"]
    return out


def _text(messages: list[dict[str, Any]]) -> str:
    last = messages[-1]["content"] if messages else ""
    if isinstance(last, list):
        return "".join(p.get("text", "") for p in last if p.get("type") == "text")
    return str(last)


def _timing(timed: Timed[Any]) -> dict[str, float]:
    return {"queue_ms": round(timed.queue_s * 1e3, 3), "run_ms": round(timed.run_s * 1e3, 3)}


def reset_payload(session: Session, timed: Timed[SessionStart]) -> dict[str, Any]:
    """``{"observation", "reward": None, "done": False, "timing"}`` for a reset."""
    out = timed.value
    obs = {
        "text": _text(out.messages),
        "images": _images(out.messages),
        "messages": out.messages,
        "tools": out.tools,
        "info": out.info,
        "episode_id": session.id,
    }
    return {"observation": obs, "reward": None, "done": False, "timing": _timing(timed)}


def step_payload(session: Session, timed: Timed[SessionTurn]) -> dict[str, Any]:
    """``{"observation", "reward", "done", "timing"}`` for a step."""
    out = timed.value
    obs = {
        "text": _text(out.messages),
        "images": _images(out.messages),
        "messages": out.messages,
        "info": {**out.info, "terminated": out.terminated, "truncated": out.truncated},
        "episode_id": session.id,
    }
    return {
        "observation": obs,
        "reward": out.reward,
        "done": out.done,
        "timing": _timing(timed),
    }


def state_payload(session: Session, env_id: str) -> dict[str, Any]:
    """The ``/state`` answer: episode id, step count, task, state key, totals."""
    t = session.text
    return {
        "episode_id": session.id,
        "step_count": session.step_count,
        "env_id": env_id,
        "task_id": t.info.get("task_id"),
        "state_key": t.info.get("state_key"),
        "done": t.done,
        "total_reward": t.total_reward,
        "success": t.success,
    }
