"""``HTTPPolicy``: any OpenAI-compatible chat-completions server as a batched policy.

For evaluation and data collection with served models (vLLM, SGLang, llama.cpp, a hosted
API). One :meth:`HTTPPolicy.act` call sends the batch's requests concurrently (a thread per
request, up to ``max_concurrency``). Structured ``tool_calls`` in the reply are rendered back
to the canonical ``<tool_call>{...}</tool_call>`` text the envs parse, so the env sees the
same action whichever way the model produced it. Token logprobs are returned when the server
gives them (``logprobs=True``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from agentgym.agents.base import Generation, PolicyInput
from agentgym.error import AgentGymError, DependencyMissingError
from agentgym.parsing import render_tool_call


class PolicyRequestError(AgentGymError, RuntimeError):
    """The model server refused or failed a request (``status``: its HTTP status, if any)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def _retry_after(header: str | None, attempt: int) -> float:
    """Seconds to wait before retry ``attempt`` (0-based): the server's say, else 1, 2, 4..."""
    try:
        wait = float(header) if header else 2.0**attempt
    except ValueError:  # an HTTP date: not worth parsing for a retry
        wait = 2.0**attempt
    return min(max(wait, 0.0), 30.0)


def _one_line(text: str, limit: int = 300) -> str:
    """A server's reply body squeezed onto one line, for an error message."""
    return " ".join(text.split())[:limit]


def reply_to_text(message: Mapping[str, Any]) -> str:
    """An assistant message (content and/or ``tool_calls``) as one action string."""
    parts = []
    if message.get("content"):
        parts.append(str(message["content"]))
    for call in message.get("tool_calls") or []:
        fn = call.get("function", {})
        raw = fn.get("arguments", "{}")
        try:
            args = json.loads(raw) if isinstance(raw, str) else dict(raw)
        except (json.JSONDecodeError, TypeError, ValueError):
            # keep the model's malformed arguments visible to the env's parser
            parts.append(
                f'<tool_call>{{"name": {json.dumps(fn.get("name", ""))}, '
                f'"arguments": {raw}}}</tool_call>'
            )
            continue
        parts.append(render_tool_call(str(fn.get("name", "")), args))
    return "\n".join(parts)


class HTTPPolicy:
    """Chat completions over HTTP.

    Args:
        base_url: e.g. ``http://127.0.0.1:8000/v1`` (``/chat/completions`` is appended).
        model: the served model name.
        api_key: sent as ``Authorization: Bearer ...`` when given.
        send_tools: pass the env's ``info["tools"]`` as OpenAI ``tools``.
        temperature: sampling temperature (``agentgym eval`` sets 0 for its greedy mode).
        max_tokens: generation budget of one reply.
        logprobs: ask for token logprobs.
        timeout: seconds to wait for one reply.
        max_concurrency: requests in flight at once (one :meth:`act` batch is sent together).
        retries: how often a request answered 429 (rate limit) or 502/503/504 (server busy
            or restarting) is retried, after ``Retry-After`` or 1, 2, 4... s (at most 30 s);
            hosted APIs rate-limit bursts of concurrent requests.
        extra_body: merged into every request (e.g. ``{"top_p": 0.9}``).
    """

    #: HTTP statuses that say "try again later" rather than "this request is wrong".
    RETRY_STATUSES = frozenset({429, 502, 503, 504})

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float = 1.0,
        max_tokens: int = 512,
        send_tools: bool = True,
        logprobs: bool = False,
        timeout: float = 120.0,
        max_concurrency: int = 16,
        retries: int = 2,
        extra_body: Mapping[str, Any] | None = None,
    ):
        try:
            import httpx
        except ImportError as exc:
            raise DependencyMissingError(
                "httpx (needed by HTTPPolicy)", "pip install httpx"
            ) from exc
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.send_tools = send_tools
        self.logprobs = logprobs
        self.retries = retries
        self.extra_body = dict(extra_body or {})
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)
        self._pool = ThreadPoolExecutor(max_workers=max_concurrency)

    def _request(self, item: PolicyInput) -> Generation:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": item.messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            **self.extra_body,
        }
        if self.send_tools and item.info.get("tools"):
            body["tools"] = item.info["tools"]
        if self.logprobs:
            body["logprobs"] = True
        for attempt in range(self.retries + 1):
            try:
                resp = self._client.post(self.url, json=body)
            except Exception as exc:
                why = _one_line(str(exc)) or type(exc).__name__
                raise PolicyRequestError(
                    f"request to {self.url} failed: {why}. Is the server up at that address?"
                ) from exc
            if resp.status_code not in self.RETRY_STATUSES or attempt == self.retries:
                break
            time.sleep(_retry_after(resp.headers.get("retry-after"), attempt))
        if resp.status_code != 200:
            hint = ""
            if resp.status_code in (401, 403):
                hint = " (the server wants an API key: is the right one set?)"
            raise PolicyRequestError(
                f"{self.url} answered HTTP {resp.status_code}{hint}: {_one_line(resp.text)}",
                status=resp.status_code,
            )
        try:
            data = resp.json()
            choice = data["choices"][0]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise PolicyRequestError(
                f"{self.url} answered without a chat completion (expected JSON with "
                f"'choices'): {_one_line(resp.text)}"
            ) from exc
        text = reply_to_text(choice.get("message", {}))
        lps = None
        content = (choice.get("logprobs") or {}).get("content")
        if content:
            lps = np.array([float(t.get("logprob", 0.0)) for t in content], dtype=np.float32)
        return Generation(
            text=text,
            logprobs=lps,
            meta={"finish_reason": choice.get("finish_reason"), "usage": data.get("usage", {})},
        )

    def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]:
        """Send all requests at once; results come back in input order."""
        return list(self._pool.map(self._request, inputs))

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self._client.close()
