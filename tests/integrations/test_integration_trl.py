"""TRL: the env reward reaches a real GRPOTrainer loss, for a tool env and an answer env.

TRL (1.16) forwards only tool calls to an ``environment_factory`` class, so the answer env
(CodeMath) earns its outcome through the ``answer`` tool. The policy is a tiny randomly
initialised Qwen3 built from a config (no download) whose logits carry a fixed bias towards
a few whole-tool-call tokens and the end-of-turn token, so that one step samples real tool
calls with different rewards; the bias has no parameters, so the gradient is the model's.
"""

from __future__ import annotations

import gc
import inspect
import os
import pathlib
import tempfile

import pytest

from agentgym.integrations.trl import (
    TOOL_ONLY_ANSWER_NOTE,
    environment_class,
    seed_dataset,
    tool_only_text,
)
from tests.integrations.oracle_answers import oracle_answer

torch = pytest.importorskip("torch")
trl = pytest.importorskip("trl")
transformers = pytest.importorskip("transformers")

SOKOBAN = "agentgym/Sokoban-Tiny-v0"
CODEMATH = "agentgym/CodeMath-L1-v0"
VISUAL = "agentgym/VisualChart-v0"


def _call_token(name: str, arguments: dict) -> str:
    """One tool call exactly as TRL's Qwen3 template writes (and parses) it."""
    import json

    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def _tokenizer(call_tokens: list[str]):
    from examples.integrations.offline import char_tokenizer

    tok = char_tokenizer()
    tok.add_special_tokens(
        {
            "additional_special_tokens": [
                "<|im_start|>",
                "<think>",
                "</think>",
                "<tool_call>",
                "</tool_call>",
            ]
        }
    )
    tok.add_tokens(call_tokens)
    template = pathlib.Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja"
    tok.chat_template = template.read_text()
    return tok


def _biased_model(tok, call_tokens: list[str]):
    """A tiny random Qwen3 whose logits favour whole tool calls and the end of turn."""

    class ToolBiasedQwen3(transformers.Qwen3ForCausalLM):
        def __init__(self, config):
            super().__init__(config)
            self.register_buffer("call_bias", torch.zeros(config.vocab_size), persistent=False)

        def forward(self, *args, **kwargs):
            out = super().forward(*args, **kwargs)
            out.logits = out.logits + self.call_bias.to(out.logits.dtype)
            return out

    config = transformers.Qwen3Config(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        max_position_embeddings=8192,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(0)
    model = ToolBiasedQwen3(config)
    for token in [*call_tokens, tok.eos_token]:
        model.call_bias[tok.convert_tokens_to_ids(token)] = 12.0
    return model


SESSIONS: list = []  # every env session the trainer's environment objects opened


def _train_one_step(env_id: str, call_tokens: list[str], seeds: list[int], reward_funcs=None):
    """One GRPOTrainer step; returns (env rewards TRL collected, its log, params changed,
    the prompts TRL built and sent to the model)."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    tok = _tokenizer(call_tokens)
    model = _biased_model(tok, call_tokens)
    rewards: list[float] = []
    base = environment_class(env_id)

    class Recorded(base):  # type: ignore[misc, valid-type]
        def __init__(self):
            super().__init__()
            SESSIONS.append(self._session)

        def get_reward(self):
            value = super().get_reward()
            rewards.append(value)
            return value

    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    scratch = tempfile.TemporaryDirectory(prefix="agentgym-trl-")  # removed after the step
    out = scratch.name
    args = trl.GRPOConfig(
        output_dir=out,
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=16,
        max_steps=1,
        learning_rate=1e-3,
        use_cpu=True,
        report_to=[],
        logging_steps=1,
        bf16=False,
        save_strategy="no",
        seed=0,
    )
    trainer = trl.GRPOTrainer(
        model=model,
        processing_class=tok,
        args=args,
        train_dataset=seed_dataset(env_id, seeds),
        environment_factory=Recorded,
        reward_funcs=reward_funcs,
    )
    with scratch:
        trainer.train()
    log = next(entry for entry in trainer.state.log_history if "loss" in entry)
    changed = any(not torch.equal(before[n], p) for n, p in model.named_parameters())
    return rewards, log, changed, list(trainer._logs["prompt"])


@pytest.mark.slow
def test_shipped_example_trains_a_grpo_step_on_a_tool_env_with_real_tool_calls():
    """examples/integrations/trl_grpo_tiny.py (Sokoban): the env reward is the logged reward."""
    import runpy

    example = pathlib.Path(__file__).parents[2] / "examples" / "integrations" / "trl_grpo_tiny.py"
    ns = runpy.run_path(str(example), run_name="example")
    rewards, log = ns["env_rewards"], ns["log"]
    assert len(rewards) == 4 and len(set(rewards)) > 1  # real moves, different outcomes
    assert log["reward"] == pytest.approx(sum(rewards) / len(rewards), abs=1e-4)
    assert log["rewards/RecordedSokoban/mean"] == pytest.approx(log["reward"], abs=1e-4)
    assert log["tools/call_frequency"] > 0 and log["tools/failure_frequency"] == 0
    assert log["grad_norm"] > 0


@pytest.mark.slow
def test_grpo_trainer_step_on_an_answer_env_earns_the_outcome_through_the_answer_tool():
    import gymnasium as gym

    probe = gym.make(CODEMATH)
    probe.reset(seed=5)
    correct = str(probe.unwrapped._problem.answer)
    probe.close()
    calls = [
        _call_token("answer", {"answer": correct}),
        _call_token("answer", {"answer": correct + "1"}),
    ]
    SESSIONS.clear()
    rewards, log, changed, prompts = _train_one_step(CODEMATH, calls, [5])
    # TRL never closes its environment objects: once the trainer is gone, they release their
    # envs (here CodeMath's sandbox sessions) through their finalizers
    gc.collect()
    assert len(SESSIONS) >= 4 and all(s.closed for s in SESSIONS)
    # the prompt TRL sent asks for the answer tool, never for <answer> text it cannot forward
    assert len(prompts) == 4
    for prompt in prompts:
        text = prompt[-1]["content"]
        assert TOOL_ONLY_ANSWER_NOTE in text and "<answer>" not in text
        assert 'then reply with answer(answer="...")' in text
    assert len(rewards) == 4
    assert max(rewards) >= 1.0  # the outcome reward arrived through TRL's tool channel
    assert min(rewards) < 1.0
    assert log["reward"] == pytest.approx(sum(rewards) / len(rewards), abs=1e-4)
    assert log["grad_norm"] > 0 and changed


@pytest.mark.slow
def test_a_text_answer_trl_never_forwards_is_warned_about_or_forwarded_and_counted():
    """A model that writes <answer> as text (TRL forwards only tool calls): without help the
    outcome is lost but never silently (a one-time warning and the class's counters); with
    forward_text_answers in reward_funcs the env gets the answer and the share is logged."""
    import warnings

    from agentgym.integrations.trl import TEXT_ANSWER_METRIC, forward_text_answers

    correct = oracle_answer(CODEMATH, 5)
    texts = [f"<answer>{correct}</answer>", f"<answer>{correct}1</answer>"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lost, _, _, _ = _train_one_step(CODEMATH, texts, [5])
    assert lost == [0.0] * 4  # no answer reached the env...
    unfinished = [w for w in caught if "had not ended" in str(w.message)]
    assert len(unfinished) == 1 and "forward_text_answers" in str(unfinished[0].message)

    rewards, log, _, _ = _train_one_step(CODEMATH, texts, [5], [forward_text_answers])
    assert len(rewards) == 4 and max(rewards) >= 1.0  # ...until it is forwarded
    assert log[TEXT_ANSWER_METRIC] > 0 and log["rewards/forward_text_answers/mean"] == 0.0


def test_answer_env_class_offers_the_answer_tool_as_a_typed_method():
    Env = environment_class(CODEMATH)
    schema = transformers.utils.get_json_schema(Env.answer)  # what TRL shows the model
    assert schema["function"]["parameters"]["required"] == ["answer"]
    env = Env()
    env.reset(seed=5)
    out = env.answer(answer=str(env._session.env.unwrapped._problem.answer))
    assert "correct" in out and env.get_reward() == pytest.approx(1.0)


@pytest.mark.parametrize("env_id", [CODEMATH, VISUAL])
def test_answer_env_text_asks_for_the_answer_tool_at_reset_and_in_errors(env_id):
    env = environment_class(env_id)()
    opening = env.reset(seed=0)
    assert "<answer>" not in opening and opening.count(TOOL_ONLY_ANSWER_NOTE) == 1
    assert 'answer(answer="' in opening
    # an error TRL shows as the tool result says the same (Visual: a call with a bad box)
    tool, args = ("python", {"code": "x="}) if env_id == CODEMATH else ("zoom", {"box": [1, 2]})
    try:
        result = getattr(env, tool)(**args)
    except ValueError as exc:
        result = str(exc)
    assert "<answer>" not in result


def test_tool_only_text_rewords_every_answer_tag_and_the_note():
    from agentgym.parsing import ANSWER_TOOL_NOTE

    text = f"Reply with <answer>...</answer>.\n{ANSWER_TOOL_NOTE}\ne.g. <answer>1\n2</answer>"
    assert tool_only_text(text) == (
        f'Reply with answer(answer="...").\n{TOOL_ONLY_ANSWER_NOTE}\ne.g. answer(answer="1\n2")'
    )
    assert tool_only_text("no tags here") == "no tags here"


def test_visual_reset_keeps_the_question_and_tool_results_carry_no_base64():
    Env = environment_class(VISUAL)
    env = Env()
    opening = env.reset(seed=0)
    instruction = env._session.info["instruction"]
    assert isinstance(opening, str) and tool_only_text(instruction.splitlines()[0]) in opening
    assert "image(s) left out" in opening and "base64" not in opening
    result = env.zoom(box=[0, 0, 200, 200])
    assert isinstance(result, str) and "Zoomed" in result
    assert "base64" not in result and len(result) < 2000
    env.answer(answer="1")  # Visual ids end through the answer tool too
    assert env._session.done


def test_visual_with_images_gives_trl_content_parts_with_pil_images():
    from PIL import Image

    env = environment_class(VISUAL, images=True)()
    opening = env.reset(seed=0)
    kinds = [p["type"] for p in opening]
    assert "image" in kinds and "text" in kinds
    assert all(isinstance(p["image"], Image.Image) for p in opening if p["type"] == "image")
    result = env.zoom(box=[0, 0, 200, 200])
    assert any(p["type"] == "image" for p in result)


def test_environment_objects_release_their_env_when_collected_or_left():
    Env = environment_class(SOKOBAN)
    env = Env()
    env.reset(seed=0)
    session = env._session
    assert not session.closed
    del env
    gc.collect()
    assert session.closed
    with Env() as env:
        env.reset(seed=0)
        env.move(direction="up")
        assert not env._session.closed
    assert env._session.closed
    # close is not a public method, so TRL does not offer it to the model as a tool
    assert not any(n == "close" for n, _ in inspect.getmembers(Env, inspect.isfunction))


def test_tool_methods_are_the_ones_trl_exposes():
    Env = environment_class(SOKOBAN)
    exposed = [
        name
        for name, _ in inspect.getmembers(Env, predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]
    assert exposed == ["move"]  # Sokoban ends by its own moves: no answer tool
    schema = transformers.utils.get_json_schema(Env.move)
    assert schema["function"]["parameters"]["properties"]["direction"]["enum"] == [
        "up",
        "down",
        "left",
        "right",
    ]


def _example_arguments(parameters: dict) -> dict:
    """Values for a tool's required arguments, read from the schema TRL renders."""
    out: dict = {}
    for name in parameters.get("required", []):
        prop = parameters["properties"][name]
        kind = prop.get("type", "string")
        if prop.get("enum"):
            out[name] = prop["enum"][0]
        elif kind == "array":
            out[name] = [0, 0, 50, 50][: prop.get("minItems", 0)]
        else:
            out[name] = {"integer": 1, "number": 1.0, "boolean": False, "object": {}}.get(kind, "1")
    return out


def test_every_id_resets_with_its_task_and_takes_a_tool_call_as_trl_does(single_agent_id):
    """TRL's own steps on the class: its method listing, ``get_json_schema``, ``reset(**row)``
    with a ``seed_dataset`` row, one tool call with the result (or error) TRL shows."""
    import agentgym

    env_id = single_agent_id
    Env = environment_class(env_id)
    env = Env()
    # the listing and schemas exactly as GRPOTrainer builds them from the class
    methods = [
        getattr(env, name)
        for name, _ in inspect.getmembers(Env, predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]
    schemas = {m.__name__: transformers.utils.get_json_schema(m)["function"] for m in methods}
    direct = agentgym.make(env_id)
    obs, info = direct.reset(seed=1)
    direct.close()
    assert set(schemas) >= {t["function"]["name"] for t in info["tools"]}

    opening = env.reset(**seed_dataset(env_id, [1])[0])
    assert isinstance(opening, str)
    first_line = obs["text"].strip().splitlines()[0]
    if Env.answer_tool:  # TRL forwards only tool calls: the prompt asks for the answer tool
        assert "<answer>" not in opening and TOOL_ONLY_ANSWER_NOTE in opening
        first_line = tool_only_text(first_line)
    assert first_line in opening  # the task text reached the prompt
    assert "base64" not in opening and "data:image" not in opening
    if obs["images"]:
        assert "image(s) left out" in opening

    first = info["tools"][0]["function"]["name"]
    tool = {m.__name__: m for m in methods}[first]
    try:  # as GRPOTrainer calls a tool: a raised error's message is the result
        result = tool(**_example_arguments(schemas[first]["parameters"]))
    except Exception as e:
        result = str(e)
    assert env._session.turns == 1  # the call reached the env
    assert isinstance(result, str) and result.strip()
    assert "base64" not in result and "data:image" not in result and len(result) < 20_000
    env._session.close()


@pytest.mark.parametrize(
    ("template", "parsed"),
    [("qwen3.jinja", True), ("qwen3_vl.jinja", True), ("qwen2_5_vl.jinja", False)],
)
def test_the_models_the_page_names_have_templates_trl_parses_tool_calls_from(template, parsed):
    """docs/integrations/trl.md names Qwen3-0.6B and Qwen3-VL-2B-Instruct (whose templates
    TRL parses tool calls from) and warns about Qwen2.5-VL (whose template TRL refuses)."""
    from trl.chat_template_utils import add_response_schema

    page = (pathlib.Path(__file__).parents[2] / "docs" / "integrations" / "trl.md").read_text()
    assert '"Qwen/Qwen3-0.6B"' in page and "`Qwen/Qwen3-VL-2B-Instruct`" in page
    assert "Qwen/Qwen2.5-VL" not in page
    tok = _tokenizer([])
    tok.chat_template = (
        pathlib.Path(trl.__file__).parent / "chat_templates" / template
    ).read_text()
    if parsed:
        add_response_schema(tok)
        assert tok.response_template is not None
    else:
        with pytest.raises(ValueError, match="Unrecognized chat template"):
            add_response_schema(tok)


def _clock_env(cls=None):
    """An environment object of a cheap answer env (VisualClock), reset at seed 4."""
    env = (cls or environment_class("agentgym/VisualClock-v0"))()
    env.reset(seed=4)
    return env


def test_a_rollout_scored_before_its_episode_ended_is_counted_and_warned_about_once():
    import warnings

    cls = environment_class("agentgym/VisualClock-v0")
    first, second, done = _clock_env(cls), _clock_env(cls), _clock_env(cls)
    done.answer(answer=oracle_answer("agentgym/VisualClock-v0", 4))
    stats = type(first).rollout_stats
    assert stats.scored == 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        done.get_reward()  # ended: counted as scored only
        first.get_reward()
        second.get_reward()
    assert (stats.scored, stats.unfinished, stats.text_answers) == (3, 2, 0)
    (warning,) = caught
    assert warning.category is RuntimeWarning and "had not ended" in str(warning.message)
    assert "forward_text_answers" in str(warning.message)


@pytest.mark.parametrize("as_messages", [True, False])
def test_forward_text_answers_gives_the_last_text_answer_to_running_episodes(as_messages):
    from agentgym.integrations.trl import TEXT_ANSWER_METRIC, forward_text_answers

    right = oracle_answer("agentgym/VisualClock-v0", 4)
    texts = [
        f"<answer>0:00</answer> no, <answer>{right}</answer>",  # the last one counts
        "I give up",  # no answer: left alone
        f"<answer>{right}</answer>",  # an episode that already ended: left alone
        f"<answer>{right}</answer>",  # no environment object (another env's rollout)
    ]
    envs = [_clock_env(), _clock_env(), _clock_env(), None]
    envs[2].answer(answer="1:11")
    completions = [[{"role": "assistant", "content": t}] if as_messages else t for t in texts]
    logged: list[tuple[str, float]] = []
    rewards = forward_text_answers(
        completions, envs, log_metric=lambda name, value: logged.append((name, value))
    )
    assert rewards == [0.0, 0.0, 0.0, 0.0]
    assert logged == [(TEXT_ANSWER_METRIC, 0.25)]
    assert envs[0]._session.done and envs[0]._session.success
    assert not envs[1]._session.done
    assert envs[2]._session.done and not envs[2]._session.success  # its own answer stands
    assert type(envs[0]).rollout_stats.text_answers == 1


def test_forward_text_answers_reads_the_last_assistant_message_only():
    from agentgym.integrations.trl import forward_text_answers

    env = _clock_env()
    right = oracle_answer("agentgym/VisualClock-v0", 4)
    completion = [
        {"role": "assistant", "content": f"maybe <answer>{right}</answer>"},
        {"role": "tool", "content": "Zoomed."},
        {"role": "assistant", "content": "still thinking"},
    ]
    assert forward_text_answers([completion], [env]) == [0.0]
    assert not env._session.done  # the earlier turn's answer was not the final one
