"""``agentgym eval --policy openai`` for real models (issue 26, point 5).

Checked on what the fake OpenAI server (``tests/fake_openai.py``) actually received: the
sampling settings and extra body fields of every request, one mode by default, past tool
calls as native ``tool_calls`` + ``role: tool`` messages (and the text fallback when the
server refuses them), 5xx retries; and pass@k / pass^k on a crafted case whose per-task
success counts are known.
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import pytest

from agentgym.agents.base import PolicyInput
from agentgym.agents.scripted import OraclePolicy
from agentgym.cli import main
from agentgym.evaluation import pass_k_summary
from tests.fake_openai import FakeOpenAI, move_up_or_echo

ENV = "agentgym/Sokoban-Tiny-v0"


def _eval(url: str, *args: str, turns: int = 2) -> list[str]:
    kwargs = json.dumps({"max_turns": turns})
    return ["eval", ENV, "--policy", "openai", "--base-url", url, "--model", "m",
            "--env-kwargs", kwargs, "--no-progress", *args]  # fmt: skip


def _bodies(server: FakeOpenAI) -> list[dict[str, Any]]:
    return [body for _, _, body in server.requests]


def test_sampling_flags_and_extra_body_reach_every_request(fake_openai, tmp_path, capsys):
    out = tmp_path / "eval.jsonl"
    extra = '{"chat_template_kwargs": {"enable_thinking": false}, "seed": 5}'
    args = ["--episodes", "2", "--num-envs", "2", "--temperature", "0.7", "--top-p", "0.9"]
    args += ["--extra-body", extra, "--samples-per-task", "2", "--out", str(out)]
    assert main(_eval(fake_openai.url, *args)) == 0
    stdout = capsys.readouterr().out
    bodies = _bodies(fake_openai)
    assert len(bodies) == 2 * 2 * 2  # tasks x samples x turns: sampled only, not twice
    for body in bodies:
        assert body["temperature"] == 0.7 and body["top_p"] == 0.9 and body["seed"] == 5
        assert body["chat_template_kwargs"] == {"enable_thinking": False}
    lines = stdout.splitlines()
    assert not any(line.startswith("greedy") for line in lines), stdout
    assert "sampled: pass@k and pass^k over the 2 tasks with all 2 samples" in lines, stdout
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["seed"], r["sample"]) for r in rows] == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_default_mode_is_one_greedy_pass(fake_openai, capsys):
    assert main(_eval(fake_openai.url, "--episodes", "3", "--num-envs", "3")) == 0
    bodies = _bodies(fake_openai)
    assert len(bodies) == 3 * 2 and all(b["temperature"] == 0.0 for b in bodies)
    assert all("top_p" not in b for b in bodies)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines if line.startswith(("greedy", "sampled"))] == [
        "greedy"
    ]


def test_temperature_with_greedy_mode_is_refused(fake_openai, capsys):
    assert main(_eval(fake_openai.url, "--mode", "greedy", "--temperature", "0.5")) == 2
    assert "--mode sampled" in capsys.readouterr().err and not fake_openai.requests


def test_openai_flags_with_another_policy_are_refused(capsys):
    args = ["eval", ENV, "--policy", "oracle", "--episodes", "1", "--top-p", "0.5"]
    assert main(args) == 2
    assert "--top-p only apply to --policy openai" in capsys.readouterr().err


def test_past_tool_calls_go_back_as_native_tool_messages(fake_openai):
    args = ["--episodes", "1", "--num-envs", "1", "--history-turns", "-1"]
    assert main(_eval(fake_openai.url, *args, turns=3)) == 0
    first, second, third = _bodies(fake_openai)
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    msgs = third["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    for call_msg, tool_msg, index in ((msgs[2], msgs[3], 2), (msgs[4], msgs[5], 4)):
        assert call_msg["content"] is None
        (call,) = call_msg["tool_calls"]
        assert call == {
            "id": f"call_{index}_0",
            "type": "function",
            "function": {"name": "move", "arguments": '{"direction": "up"}'},
        }
        assert tool_msg["tool_call_id"] == f"call_{index}_0" and tool_msg["content"]
    # the second request's history is the start of the third's
    assert second["messages"] == msgs[:4]


def test_a_server_refusing_tool_messages_gets_text_for_the_rest_of_the_run(capsys):
    with FakeOpenAI(reject_tool_messages=True) as server:
        args = ["--episodes", "2", "--num-envs", "1", "--history-turns", "-1"]
        assert main(_eval(server.url, *args, turns=3)) == 0
        roles = [[m["role"] for m in b["messages"]] for b in _bodies(server)]
    # episode 1: turn 1, turn 2 native (refused: 400), turn 2 as text, turn 3 as text;
    # episode 2 goes straight to text
    text_two = ["system", "user", "assistant", "user"]
    assert roles[:4] == [["system", "user"], ["system", "user", "assistant", "tool"], text_two,
                         [*text_two, "assistant", "user"]]  # fmt: skip
    assert roles[4:] == [["system", "user"], text_two, [*text_two, "assistant", "user"]]
    assert "greedy" in capsys.readouterr().out


def test_native_tool_messages_refused_without_fallback_is_an_error(capsys):
    with FakeOpenAI(reject_tool_messages=True) as server:
        args = ["--episodes", "1", "--num-envs", "1", "--tool-messages", "native"]
        assert main(_eval(server.url, *args)) == 2
    assert "HTTP 400" in capsys.readouterr().err


def test_one_http_500_is_retried_not_fatal(fake_openai, capsys):
    fake_openai.statuses = [500]
    assert main(_eval(fake_openai.url, "--episodes", "1", "--num-envs", "1")) == 0
    assert len(fake_openai.requests) == 1 + 2  # the 500, then the episode's two turns
    assert "greedy" in capsys.readouterr().out


def test_a_later_failure_keeps_the_finished_episodes(tmp_path, capsys):
    calls: list[int] = []

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        calls.append(1)
        if len(calls) == 4:  # after two whole episodes the server breaks for good
            server.statuses.extend([500] * 10)
        return move_up_or_echo(body)

    out = tmp_path / "eval.jsonl"
    with FakeOpenAI(reply) as server:
        args = ["--episodes", "5", "--num-envs", "1", "--retries", "1", "--out", str(out)]
        assert main(_eval(server.url, *args)) == 2
    captured = capsys.readouterr()
    assert "HTTP 500" in captured.err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["seed"] for r in rows] == [0, 1]
    greedy = next(line.split() for line in captured.out.splitlines() if line.startswith("greedy"))
    assert greedy[1] == "2"


def _oracle_solutions(seeds: list[int], max_turns: int) -> dict[str, list[str]]:
    """First observation text -> the oracle's moves, for each test-split seed."""
    env = gym.make(ENV, split="test", max_turns=max_turns)
    policy = OraclePolicy()
    plans = {}
    for seed in seeds:
        obs, info = env.reset(seed=seed)
        first, moves = obs["text"], []
        done = False
        while not done:
            text = policy.act([PolicyInput(messages=[], info=info, env=env.unwrapped)])[0].text
            moves.append(text)
            obs, _, term, trunc, step_info = env.step(text)
            info, done = {**info, **step_info}, term or trunc
        assert step_info["success"]
        plans[first] = moves
    env.close()
    return plans


def test_pass_at_k_and_pass_hat_k_on_known_success_counts(tmp_path, capsys):
    # task seed 0 is solved in 1 of its 4 samples, seed 1 in 3 of 4: the server plays the
    # oracle's moves for those samples and answers without a tool call for the others
    plans = _oracle_solutions([0, 1], max_turns=8)
    solve = {0: {0}, 1: {0, 1, 2}}  # task index -> the samples that play the solution
    order = list(plans)
    seen: dict[str, int] = {}

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        msgs = body["messages"]
        task = msgs[1]["content"]
        turn = sum(m["role"] == "assistant" for m in msgs)
        if turn == 0:
            seen[task] = seen.get(task, -1) + 1
        if seen[task] in solve[order.index(task)]:
            return {"role": "assistant", "content": plans[task][turn]}
        return {"role": "assistant", "content": "I am not sure."}

    out = tmp_path / "eval.jsonl"
    with FakeOpenAI(reply) as server:
        args = ["--episodes", "2", "--num-envs", "1", "--samples-per-task", "4"]
        assert main(_eval(server.url, *args, "--out", str(out), turns=8)) == 0
    stdout = capsys.readouterr().out
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["success"] for r in rows] == [True, False, False, False, True, True, True, False]
    lines = stdout.splitlines()
    head = lines.index("sampled: pass@k and pass^k over the 2 tasks with all 4 samples")
    assert lines[head + 1].split() == ["k", "pass@k", "pass^k"]
    got = {
        int(k): (float(at), float(hat)) for k, at, hat in map(str.split, lines[head + 2 : head + 5])
    }
    # per task (n=4): c=1 and c=3. pass@1 = (1/4 + 3/4)/2; pass@2 = (1/2 + 1)/2;
    # pass^2 = (0 + 1/2)/2; pass@4 = 1; pass^4 = 0
    assert got == {1: (0.5, 0.5), 2: (0.75, 0.25), 4: (1.0, 0.0)}, stdout


@pytest.mark.parametrize(
    ("runs", "k", "at", "hat"),
    [
        ({"a": [True, False, False, False], "b": [True, True, True, False]}, 2, 0.75, 0.25),
        ({"a": [True] * 3, "b": [False] * 3}, 3, 0.5, 0.5),
        ({"a": [False, True, False, False, False]}, 3, 1 - 4 / 10, 0.0),
    ],
)
def test_pass_k_summary_known_values(runs, k, at, hat):
    out = pass_k_summary(runs, [k])
    assert out[f"pass@{k}"] == (pytest.approx(at), len(runs))
    assert out[f"pass^{k}"] == (pytest.approx(hat), len(runs))


def test_pass_k_summary_leaves_out_tasks_with_too_few_trials():
    out = pass_k_summary({"a": [True, True], "b": [False]}, [1, 2])
    assert out["pass@1"] == (0.5, 2) and out["pass^2"] == (1.0, 1)


def test_native_tool_messages_pair_every_call_and_keep_images_and_bad_calls():
    from agentgym.agents.http import SEE_NEXT_RESULT, native_tool_messages

    two_calls = (
        '<tool_call>{"name": "zoom", "arguments": {"x": 1}}</tool_call> then '
        '<tool_call>{"name": "ocr", "arguments": {}}</tool_call>'
    )
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    msgs = [
        {"role": "user", "content": "task"},
        {"role": "assistant", "content": two_calls},
        {"role": "user", "content": [image, {"type": "text", "text": "zoomed; text: 42"}]},
        {"role": "assistant", "content": '<tool_call>{"name": "zoom", bad}</tool_call>'},
        {"role": "user", "content": "error: bad JSON"},
    ]
    out = native_tool_messages(msgs)
    assert out[1]["content"] == "then"
    assert [c["function"] for c in out[1]["tool_calls"]] == [
        {"name": "zoom", "arguments": '{"x": 1}'},
        {"name": "ocr", "arguments": "{}"},
    ]
    assert out[2:5] == [
        {"role": "tool", "tool_call_id": "call_1_0", "content": SEE_NEXT_RESULT},
        {"role": "tool", "tool_call_id": "call_1_1", "content": "zoomed; text: 42"},
        {"role": "user", "content": [image]},
    ]
    # a malformed call stays the text the model wrote, answered by a user message
    assert out[5:] == msgs[3:]


def test_a_dropped_connection_is_retried_once_the_server_was_reached():
    from agentgym.agents.http import HTTPPolicy

    calls: list[int] = []

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        calls.append(1)
        if len(calls) == 2:  # the second request's connection closes without an answer
            raise ConnectionAbortedError("dropped by the test")
        return move_up_or_echo(body)

    with FakeOpenAI(reply) as server:
        policy = HTTPPolicy(server.url, "m", backoff_s=0.0)
        try:
            first = policy.act([PolicyInput(messages=[{"role": "user", "content": "a"}])])
            second = policy.act([PolicyInput(messages=[{"role": "user", "content": "b"}])])
        finally:
            policy.close()
        assert [first[0].text, second[0].text] == ["echo a", "echo b"]
        assert [b["messages"][-1]["content"] for b in _bodies(server)] == ["a", "b", "b"]
