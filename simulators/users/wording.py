"""Wording backends: how a simulated user's reply is *phrased*, never what it says.

The scripted core decides every fact a reply releases, when the user stops and every reward;
it hands a backend a :class:`WordingRequest` holding its own template reply, the values it
has released (``allowed``) and the values it has not (``forbidden``). A backend may only
re-word the template. :class:`Guard` checks each reply and falls back to the template when a
reply leaks a forbidden value, comes back empty or grows too long, so an LLM can make the
user sound natural without ever inventing or leaking facts.

Backends:

* :class:`TemplateWording` - the template itself (the default; no model).
* :class:`OpenAICompatibleWording` - any server speaking ``POST /v1/chat/completions``
  (vLLM, SGLang, llama.cpp, OpenAI). Standard library HTTP only.
* :class:`TransformersWording` - a local ``transformers`` causal LM (imported lazily).
* :class:`ReplayCache` - wraps any backend; records replies to a JSONL file and replays them,
  so an evaluation with an LLM user is exactly reproducible and costs no model calls.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from agentgym.simulators.users.text import mentions, mentions_number, normalise

from agentgym.error import DependencyMissingError, InvalidConfigError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WordingRequest:
    """Everything a backend may use to phrase one reply."""

    persona: str
    message: str
    template: str
    allowed: tuple[str, ...] = ()
    forbidden: tuple[str, ...] = ()

    def key(self) -> str:
        """A stable digest of the request (the replay cache's key)."""
        blob = json.dumps(asdict(self), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()

    def prompt(self) -> list[dict[str, str]]:
        """Chat messages asking a model to re-word the template and nothing more."""
        system = (
            f"You play a user talking to an assistant. Persona: {self.persona}\n"
            "Rewrite the DRAFT reply in your own natural words, in one or two sentences. "
            "Keep exactly the facts of the draft; add no new facts, numbers or preferences. "
            "Reply with the rewritten text only."
        )
        user = f"Assistant said: {self.message[:1000]}\nDRAFT reply: {self.template}"
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]


@runtime_checkable
class WordingBackend(Protocol):
    """Anything that phrases a reply from a :class:`WordingRequest`."""

    def word(self, request: WordingRequest) -> str: ...


class TemplateWording:
    """The scripted template, unchanged (the default backend)."""

    def word(self, request: WordingRequest) -> str:
        return request.template


@dataclass
class GuardResult:
    """The guard's verdict on one reply."""

    text: str
    ok: bool
    reason: str | None = None


@dataclass
class Guard:
    """Blocks replies that reveal what the core has not released.

    A reply fails when it mentions a ``forbidden`` value (whole words, or the same number),
    is empty, or is longer than ``max_chars``; the template is used instead.
    """

    max_chars: int = 600

    def check(self, reply: Any, request: WordingRequest) -> GuardResult:
        if not isinstance(reply, str) or not normalise(reply):
            return GuardResult(request.template, False, "empty reply")
        if len(reply) > self.max_chars:
            return GuardResult(request.template, False, "reply too long")
        for value in request.forbidden:
            if value in request.allowed or not normalise(value):
                continue
            if _mentions_value(reply, value) and not _mentions_value(request.template, value):
                return GuardResult(
                    request.template, False, f"leaked an unreleased fact ({value!r})"
                )
        return GuardResult(reply.strip(), True)


def _mentions_value(text: str, value: str) -> bool:
    try:
        return mentions_number(text, float(value))
    except ValueError:
        return mentions(text, value)


class OpenAICompatibleWording:
    """Phrases replies with a chat model behind an OpenAI-compatible HTTP endpoint.

    Args:
        base_url: Server root, e.g. ``"http://127.0.0.1:8000/v1"``.
        model: The model name the server expects.
        api_key: Sent as a bearer token when given (else ``$OPENAI_API_KEY`` if set).
        temperature: Sampling temperature (0 for the most repeatable wording).
        max_tokens: Reply length limit.
        timeout: Seconds per request.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 96,
        timeout: float = 30.0,
    ):
        if not base_url.startswith(("http://", "https://")):
            raise InvalidConfigError(
                f"base_url must start with http:// or https://, got {base_url!r}."
            )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout

    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(payload).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(
            f"{self.base_url}/chat/completions", data=data, headers=headers, method="POST"
        )
        with urllib.request.urlopen(req, timeout=self.timeout) as resp:
            return json.loads(resp.read().decode("utf-8"))

    def complete(self, messages: list[dict[str, str]]) -> str:
        """One chat completion; raises on HTTP or format errors (the user falls back)."""
        body = self._post(
            {
                "model": self.model,
                "messages": messages,
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
            }
        )
        try:
            return str(body["choices"][0]["message"]["content"])
        except (KeyError, IndexError, TypeError) as exc:
            raise ValueError(f"unexpected response shape: {str(body)[:200]}") from exc

    def word(self, request: WordingRequest) -> str:
        return self.complete(request.prompt())

    def classify(self, message: str, options: dict[str, str]) -> list[str]:
        """Which of ``options`` (id -> description) the message asks about; validated ids."""
        listing = "\n".join(f"- {k}: {v}" for k, v in options.items())
        content = self.complete(
            [
                {
                    "role": "system",
                    "content": "Which topics does the message ask about? Answer with a JSON "
                    "list of topic ids from this list only, [] if none.\n" + listing,
                },
                {"role": "user", "content": message[:1000]},
            ]
        )
        return validate_topic_ids(content, options)


def validate_topic_ids(content: str, options: dict[str, str]) -> list[str]:
    """Parse a model's JSON list of topic ids; raise ValueError unless every id is allowed."""
    ids = json.loads(content.strip())
    if not isinstance(ids, list) or not all(isinstance(i, str) and i in options for i in ids):
        raise ValueError(f"not a list of allowed topic ids: {content[:200]!r}")
    return list(dict.fromkeys(ids))


class TransformersWording:
    """Phrases replies with a local ``transformers`` causal LM (greedy decoding).

    Pass a checkpoint path, or an already built ``model`` and ``tokenizer``. ``transformers``
    is imported only here, when this backend is built.
    """

    def __init__(
        self,
        model_name_or_path: str | None = None,
        *,
        model: Any = None,
        tokenizer: Any = None,
        max_new_tokens: int = 48,
        device: str | None = None,
    ):
        try:
            import transformers
        except ImportError as exc:  # pragma: no cover - depends on the installation
            raise DependencyMissingError("transformers", "pip install transformers") from exc
        if model is None or tokenizer is None:
            if model_name_or_path is None:
                raise InvalidConfigError(
                    "TransformersWording needs model_name_or_path, or both model and tokenizer."
                )
            tokenizer = transformers.AutoTokenizer.from_pretrained(model_name_or_path)
            model = transformers.AutoModelForCausalLM.from_pretrained(model_name_or_path)
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        if device is not None:
            self.model.to(device)
        self._lock = threading.Lock()

    def _prompt_text(self, messages: list[dict[str, str]]) -> str:
        if getattr(self.tokenizer, "chat_template", None):
            return str(
                self.tokenizer.apply_chat_template(
                    messages, tokenize=False, add_generation_prompt=True
                )
            )
        return "\n".join(f"{m['role']}: {m['content']}" for m in messages) + "\nuser:"

    def word(self, request: WordingRequest) -> str:
        import torch

        text = self._prompt_text(request.prompt())
        enc = self.tokenizer(text, return_tensors="pt")
        device = next(self.model.parameters()).device
        enc = {k: v.to(device) for k, v in enc.items()}
        pad = self.tokenizer.pad_token_id
        if pad is None:
            pad = self.tokenizer.eos_token_id if self.tokenizer.eos_token_id is not None else 0
        with self._lock, torch.no_grad():
            out = self.model.generate(
                **enc, max_new_tokens=self.max_new_tokens, do_sample=False, pad_token_id=pad
            )
        new = out[0, enc["input_ids"].shape[1] :]
        return str(self.tokenizer.decode(new, skip_special_tokens=True)).strip()


@dataclass
class CacheStats:
    """Counters of a :class:`ReplayCache`."""

    hits: int = 0
    misses: int = 0
    recorded: int = 0


class ReplayCache:
    """Record/replay of any backend's replies, keyed by the request digest.

    Args:
        path: A JSONL file (one ``{"key", "reply"}`` per line); created when recording.
        backend: The backend to call on a miss (``None`` in pure replay mode).
        mode: ``"record"`` (call the backend on a miss and append), ``"replay"`` (never call
            a backend; a miss raises ``KeyError`` so the user falls back to its template and
            reports ``sim_error``), or ``"auto"`` (replay hits, record misses).
    """

    MODES = ("record", "replay", "auto")

    def __init__(
        self,
        path: str | os.PathLike[str],
        backend: WordingBackend | None = None,
        mode: str = "auto",
    ):
        if mode not in self.MODES:
            raise InvalidConfigError(f"mode must be one of {self.MODES}, got {mode!r}.")
        if mode != "replay" and backend is None:
            raise InvalidConfigError(f"mode={mode!r} needs a backend to call on a miss.")
        self.path = os.fspath(path)
        self.backend = backend
        self.mode = mode
        self.stats = CacheStats()
        self._lock = threading.Lock()
        self._entries: dict[str, str] = {}
        if os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as fh:
                for line in fh:
                    try:
                        row = json.loads(line)
                        self._entries[str(row["key"])] = str(row["reply"])
                    except (ValueError, KeyError, TypeError):
                        logger.warning("skipping a corrupt line in replay cache %s", self.path)

    def __len__(self) -> int:
        return len(self._entries)

    def word(self, request: WordingRequest) -> str:
        key = request.key()
        with self._lock:
            if key in self._entries and self.mode != "record":
                self.stats.hits += 1
                return self._entries[key]
        if self.mode == "replay" or self.backend is None:
            with self._lock:
                self.stats.misses += 1
            raise KeyError(f"replay cache {self.path} has no reply for request {key[:12]}")
        reply = self.backend.word(request)
        with self._lock:
            self.stats.misses += 1
            if key not in self._entries:
                self._entries[key] = reply
                self.stats.recorded += 1
                with open(self.path, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps({"key": key, "reply": reply}, ensure_ascii=False) + "\n")
        return reply


@dataclass
class WordingOutcome:
    """What :func:`word_reply` settled on."""

    text: str
    sim_error: str | None = None
    guarded: str | None = None
    flags: Sequence[str] = field(default_factory=tuple)


def word_reply(
    backend: WordingBackend | None, guard: Guard, request: WordingRequest
) -> WordingOutcome:
    """Ask ``backend`` for a wording, check it with ``guard``, fall back to the template."""
    if backend is None or isinstance(backend, TemplateWording):
        return WordingOutcome(request.template)
    try:
        reply = backend.word(request)
    except Exception as exc:  # any backend failure: template + a reported error, never a crash
        logger.debug("wording backend failed: %r", exc)
        return WordingOutcome(request.template, sim_error=f"{type(exc).__name__}: {exc}"[:300])
    verdict = guard.check(reply, request)
    if not verdict.ok:
        return WordingOutcome(verdict.text, guarded=verdict.reason)
    return WordingOutcome(verdict.text)
