"""Wording backends: the guard, the replay cache, an OpenAI-compatible server, transformers."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import ClassVar

import gymnasium as gym
import pytest
from agentgym.simulators.users import (
    Guard,
    OpenAICompatibleWording,
    ReplayCache,
    TemplateWording,
    WordingRequest,
)
from agentgym.simulators.users.wording import validate_topic_ids, word_reply
from users_helpers import oracle, run_episode, talk

from agentgym.error import InvalidConfigError

REQ = WordingRequest(
    persona="a traveller",
    message="What is your budget?",
    template="My budget is at most $160 per night.",
    allowed=("160",),
    forbidden=("beach", "4 stars"),
)


@pytest.mark.parametrize(
    ("reply", "ok"),
    [
        ("I can spend up to 160 dollars a night.", True),
        ("160 a night, and I want the beach.", False),  # leaks an unreleased value
        ("160, and 4 stars at least.", False),
        ("", False),
        ("   ", False),
        ("x" * 601, False),
        (None, False),
    ],
)
def test_guard_blocks_leaks_empty_and_long_replies(reply, ok):
    verdict = Guard().check(reply, REQ)
    assert verdict.ok is ok
    assert verdict.text == (reply.strip() if ok else REQ.template)


class _Fixed:
    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.calls = 0

    def word(self, request: WordingRequest) -> str:
        self.calls += 1
        return self.reply


class _Broken:
    def word(self, request: WordingRequest) -> str:
        raise ConnectionError("model server down")


def test_word_reply_falls_back_and_reports_errors():
    assert word_reply(TemplateWording(), Guard(), REQ).text == REQ.template
    leak = word_reply(_Fixed("beach please"), Guard(), REQ)
    assert leak.text == REQ.template and leak.guarded
    broken = word_reply(_Broken(), Guard(), REQ)
    assert broken.text == REQ.template
    assert broken.sim_error is not None and "model server down" in broken.sim_error


def test_replay_cache_records_then_replays_without_the_backend(tmp_path: Path):
    path = tmp_path / "cache.jsonl"
    backend = _Fixed("I'd say 160 a night at most.")
    rec = ReplayCache(path, backend, mode="record")
    assert rec.word(REQ) == "I'd say 160 a night at most."
    assert backend.calls == 1 and len(rec) == 1
    replay = ReplayCache(path, mode="replay")
    assert replay.word(REQ) == "I'd say 160 a night at most."
    assert replay.stats.hits == 1
    with pytest.raises(KeyError):
        replay.word(WordingRequest("p", "other", "template"))
    path.write_text(path.read_text() + "not json\n")
    assert len(ReplayCache(path, mode="replay")) == 1  # a corrupt line is skipped


def test_replay_cache_needs_a_backend_to_record(tmp_path: Path):
    with pytest.raises(InvalidConfigError):
        ReplayCache(tmp_path / "c.jsonl", mode="record")


def test_env_dialogue_is_reproducible_through_the_replay_cache(tmp_path: Path):
    path = tmp_path / "travel.jsonl"

    class Paraphrase:
        def word(self, request: WordingRequest) -> str:
            return "Well... " + request.template

    env = gym.make("agentgym/UserTravel-v0", wording=ReplayCache(path, Paraphrase(), "record"))
    first = run_episode(env, oracle, 5)
    assert any(t.startswith("User: Well... ") for t in first[0])
    replayed = gym.make("agentgym/UserTravel-v0", wording=ReplayCache(path, mode="replay"))
    second = run_episode(replayed, oracle, 5)
    assert second[0] == first[0]
    assert all(i["sim_error"] is None for i in second[2])
    # A replay miss falls back to the template and is reported, not scored as a silent 0.
    miss = gym.make("agentgym/UserTravel-v0", wording=ReplayCache(path, mode="replay"))
    miss.reset(seed=6)
    _, _, _, _, info = miss.step(talk("What is your budget per night?"))
    assert info["sim_error"] is not None and "replay cache" in info["sim_error"]


class _FakeChatServer(BaseHTTPRequestHandler):
    """A tiny OpenAI-compatible /v1/chat/completions server on 127.0.0.1."""

    replies: ClassVar[list[str]] = []
    seen: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), **body}
        )
        reply = type(self).replies.pop(0) if type(self).replies else "500"
        if reply == "500":
            self.send_response(500)
            self.end_headers()
            return
        data = json.dumps({"choices": [{"message": {"role": "assistant", "content": reply}}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(data.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def chat_server():
    server = HTTPServer(("127.0.0.1", 0), _FakeChatServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _FakeChatServer.replies, _FakeChatServer.seen = [], []
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_openai_compatible_backend_words_replies_and_is_guarded(chat_server):
    backend = OpenAICompatibleWording(chat_server, "tiny-user", api_key="k", timeout=5)
    _FakeChatServer.replies = ["Up to 160 a night, please.", "160, near the beach!", "500"]
    assert word_reply(backend, Guard(), REQ).text == "Up to 160 a night, please."
    leaked = word_reply(backend, Guard(), REQ)
    assert leaked.text == REQ.template and leaked.guarded
    failed = word_reply(backend, Guard(), REQ)
    assert failed.text == REQ.template and "HTTP" in (failed.sim_error or "")
    sent = _FakeChatServer.seen[0]
    assert sent["path"] == "/v1/chat/completions" and sent["model"] == "tiny-user"
    assert sent["auth"] == "Bearer k"
    assert REQ.template in sent["messages"][-1]["content"]


def test_openai_backend_in_an_env_never_releases_more_than_the_core(chat_server):
    backend = OpenAICompatibleWording(chat_server, "m", timeout=5)
    env = gym.make("agentgym/UserTravel-v0", wording=backend)
    env.reset(seed=0)
    user = env.unwrapped.dialogue.user
    hidden = [f for f in user.facts.values()]
    # The server tries to leak the second fact's value while answering about the first.
    _FakeChatServer.replies = [f"Sure! Also, {hidden[1].value}."]
    obs, _, _, _, info = env.step(talk(hidden[0].question))
    assert hidden[1].value not in obs["text"]
    assert "guarded" in info["user"]["flags"]
    assert info["user"]["revealed"] == [hidden[0].id]


def test_llm_topic_classification_is_validated(chat_server):
    backend = OpenAICompatibleWording(chat_server, "m", timeout=5)
    _FakeChatServer.replies = ['["budget"]', '["budget", "hacked"]']
    options = {"budget": "the price", "area": "the area"}
    assert backend.classify("how much?", options) == ["budget"]
    with pytest.raises(ValueError):
        backend.classify("how much?", options)
    with pytest.raises(ValueError):
        validate_topic_ids("not json", options)


def test_bad_base_url_is_a_typed_error():
    with pytest.raises(InvalidConfigError, match="http"):
        OpenAICompatibleWording("127.0.0.1:8000", "m")


@pytest.mark.slow
def test_transformers_backend_with_a_tiny_random_model():
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    tokenizers = pytest.importorskip("tokenizers")
    from agentgym.simulators.users import TransformersWording

    words = ["[UNK]", "[PAD]", "my", "budget", "is", "160", "beach", "a", "night", "ok"]
    tok = tokenizers.Tokenizer(
        tokenizers.models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]")
    )
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]"
    )
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=len(words),
        n_positions=512,
        n_embd=16,
        n_layer=1,
        n_head=2,
        bos_token_id=1,
        eos_token_id=1,
    )
    backend = TransformersWording(
        model=transformers.GPT2LMHeadModel(config), tokenizer=fast, max_new_tokens=6
    )
    reply = backend.word(REQ)
    assert isinstance(reply, str)
    assert backend.word(REQ) == reply  # greedy decoding: deterministic
    out = word_reply(backend, Guard(), REQ)
    assert out.sim_error is None
    assert out.text == (reply if Guard().check(reply, REQ).ok else REQ.template)
