"""``agentgym eval --policy openai`` against a fake OpenAI-compatible server (issue 18).

The server (``tests/fake_openai.py``) answers every request that carries the env's tools
with a structured ``move`` call, so the episodes are real Sokoban episodes played through
the HTTP policy: the summary table, the per-episode rows of ``--out`` and the ``.agtr``
file of ``--record`` are checked against each other. Mistakes (no model, no base URL, a
server that is not there, a key variable that is not set, a server that wants a key) end
in one line and exit code 2.
"""

from __future__ import annotations

import json
import socket

import pytest
from agentgym.envs.grid.sokoban import MOVE_TOOL

from agentgym import trajectory
from agentgym.cli import main
from agentgym.parsing import parse_action

ENV = "agentgym/Sokoban-Tiny-v0"
TWO_TURNS = ["--env-kwargs", '{"max_turns": 2}']


def _eval(*args: str) -> list[str]:
    return ["eval", ENV, "--policy", "openai", *TWO_TURNS, "--no-progress", *args]


def _one_line_error(err: str, *needles: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err and lines[0].startswith("agentgym eval: error:"), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def test_eval_openai_plays_records_and_reports_every_episode(
    fake_openai, tmp_path, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("AGENTGYM_TEST_KEY", "sk-test-123")
    out, rec = tmp_path / "eval.jsonl", tmp_path / "eval.agtr"
    code = main(
        _eval(
            "--base-url", fake_openai.url, "--model", "tiny-model",
            "--api-key-env", "AGENTGYM_TEST_KEY", "--episodes", "4", "--num-envs", "4",
            "--mode", "greedy", "--out", str(out), "--record", str(rec),
        )
    )  # fmt: skip
    stdout = capsys.readouterr().out
    assert code == 0, stdout

    # the summary table: one greedy row over 4 episodes of 2 turns each
    assert f"policy=tiny-model @ {fake_openai.url}" in stdout
    row = next(line.split() for line in stdout.splitlines() if line.startswith("greedy"))
    assert row[1] == "4" and row[5] == "2.0", stdout
    assert f"recorded 4 episodes to {rec}" in stdout

    # per-episode rows: task ids of the test split, seeds 0..3
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["seed"] for r in rows] == [0, 1, 2, 3]
    assert all(r["task_id"] and r["split"] == "test" and r["mode"] == "greedy" for r in rows)
    assert all(r["turns"] == 2 for r in rows)

    # the recording reads back: the same episodes, each step the model's tool call
    with trajectory.open(rec) as reader:
        episodes = list(reader.episodes())
    assert len(episodes) == 4 and all(ep.complete for ep in episodes)
    assert sorted(ep.task_id for ep in episodes) == sorted(r["task_id"] for r in rows)
    assert sorted(ep.seed for ep in episodes) == [0, 1, 2, 3]
    by_seed = {ep.seed: ep for ep in episodes}
    for r in rows:
        ep = by_seed[r["seed"]]
        assert ep.length == 2 and ep.success == r["success"]
        assert ep.return_ == pytest.approx(r["total_reward"])
        assert ep.start["env_kwargs"] == {"max_turns": 2, "split": "test"}
        assert ep.start["meta"]["mode"] == "greedy"
        for step in ep.steps:
            assert step["action_valid"], step["action"]
            call = parse_action(step["action"], [MOVE_TOOL]).tool_calls[0]
            assert (call.name, call.arguments) == ("move", {"direction": "up"})

    assert main(["replay", str(rec)]) == 0  # the recorded episodes re-execute identically
    capsys.readouterr()

    # what the server saw: the model, the env's tools, greedy decoding, the key, concurrency
    assert len(fake_openai.requests) == 4 * 2
    for path, auth, body in fake_openai.requests:
        assert path == "/v1/chat/completions" and auth == "Bearer sk-test-123"
        assert body["model"] == "tiny-model" and body["temperature"] == 0.0
        assert body["tools"][0]["function"]["name"] == "move"
    assert fake_openai.max_in_flight > 1
    # the default history is the whole conversation: the second turn sees the first
    second_turns = [b for _, _, b in fake_openai.requests if len(b["messages"]) > 2]
    assert len(second_turns) == 4 and all(
        b["messages"][-2]["role"] == "assistant" for b in second_turns
    )


def test_eval_openai_both_modes_record_to_one_file(fake_openai, tmp_path, capsys) -> None:
    rec = tmp_path / "both.agtr"
    args = _eval("--base-url", fake_openai.url, "--model", "m", "--episodes", "2")
    assert main([*args, "--mode", "both", "--record", str(rec)]) == 0
    stdout = capsys.readouterr().out
    assert any(line.startswith("greedy") for line in stdout.splitlines())
    assert any(line.startswith("sampled") for line in stdout.splitlines())
    with trajectory.open(rec) as reader:
        modes = sorted(ep.start["meta"]["mode"] for ep in reader.episodes())
    assert modes == ["greedy", "greedy", "sampled", "sampled"]


def test_eval_openai_retries_a_rate_limit(fake_openai, capsys) -> None:
    fake_openai.statuses = [429, 503]
    args = _eval("--base-url", fake_openai.url, "--model", "m", "--episodes", "1")
    assert main([*args, "--mode", "greedy", "--num-envs", "1"]) == 0
    assert len(fake_openai.requests) == 2 + 2  # two refusals, then the episode's two turns


def test_eval_openai_without_a_model_or_base_url_says_which(fake_openai, capsys) -> None:
    assert main(_eval("--base-url", fake_openai.url)) == 2
    _one_line_error(capsys.readouterr().err, "--model NAME")
    assert main(_eval("--model", "m")) == 2
    _one_line_error(capsys.readouterr().err, "--base-url URL")
    assert main(_eval("--model", "m", "--base-url", "127.0.0.1:8000/v1")) == 2
    _one_line_error(capsys.readouterr().err, "http://")
    assert not fake_openai.requests


def test_eval_openai_unreachable_server_is_one_line(capsys) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    assert main(_eval("--base-url", url, "--model", "m", "--episodes", "1")) == 2
    _one_line_error(capsys.readouterr().err, url, "Is the server up")


def test_eval_openai_named_key_variable_must_be_set(fake_openai, monkeypatch, capsys) -> None:
    monkeypatch.delenv("AGENTGYM_NO_SUCH_KEY", raising=False)
    args = _eval("--base-url", fake_openai.url, "--model", "m", "--api-key-env")
    assert main([*args, "AGENTGYM_NO_SUCH_KEY"]) == 2
    _one_line_error(capsys.readouterr().err, "AGENTGYM_NO_SUCH_KEY", "not set")
    assert not fake_openai.requests  # failed before any request or env


def test_eval_openai_server_wanting_a_key_names_the_variable(
    fake_openai, monkeypatch, capsys
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fake_openai.statuses = [401]
    args = _eval("--base-url", fake_openai.url, "--model", "m", "--episodes", "1")
    assert main([*args, "--num-envs", "1", "--mode", "greedy"]) == 2
    _one_line_error(capsys.readouterr().err, "HTTP 401", "OPENAI_API_KEY", "--api-key-env")
    assert fake_openai.requests[0][1] is None  # no key was sent: none was set
