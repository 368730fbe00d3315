"""GEM (gem-llm 0.1.0): agentgym ids through GEM's own registry, ``make`` and ``make_vec``.

On 11f859c ``gem.make_vec`` (sync and async) failed: GEM passes ``seed=`` to every env's
constructor. Visual ids also lost their task question (image+text user message dropped).
"""

from __future__ import annotations

import pytest

import agentgym
from agentgym.integrations.gem import PREFIX, AgentGymGemEnv, register_all
from agentgym.parsing import render_tool_call

gem = pytest.importorskip("gem")

TEXT_ID = "agentgym/Sokoban-Tiny-v0"
VISUAL_ID = "agentgym/VisualClock-v0"
UP = render_tool_call("move", {"direction": "up"})


@pytest.fixture(scope="module")
def gem_ids() -> list[str]:
    return register_all()


def test_every_single_agent_id_is_in_gems_registry(gem_ids):
    from gem.envs.registration import ENV_REGISTRY

    assert set(gem_ids) == {PREFIX + r.id for r in agentgym.list_envs(multi_agent=False)}
    assert set(gem_ids) <= set(ENV_REGISTRY)
    assert register_all() == gem_ids  # registering twice is harmless
    env = gem.make(PREFIX + TEXT_ID, seed=5)
    obs, info = env.reset()
    assert isinstance(obs, str) and info["task_id"]
    assert obs == AgentGymGemEnv(TEXT_ID).reset(seed=5)[0]


@pytest.mark.parametrize("async_mode", [False, True])
def test_make_vec_seeds_each_env_and_steps(gem_ids, async_mode):
    ids = [PREFIX + TEXT_ID, PREFIX + TEXT_ID, PREFIX + VISUAL_ID]
    vec = gem.make_vec(ids, async_mode=async_mode, seed=40)
    obs, infos = vec.reset()
    # GEM gives env i the seed 40 + i: the same tasks a directly seeded env gets
    for i, env_id in enumerate([TEXT_ID, TEXT_ID, VISUAL_ID]):
        assert obs[i] == AgentGymGemEnv(env_id).reset(seed=40 + i)[0]
    assert obs[0] != obs[1]

    obs, rewards, terminated, _truncated, infos = vec.step([UP, "no call", "<answer>1</answer>"])
    assert list(terminated) == [False, False, True]
    assert infos[0]["action_valid"] and not infos[1]["action_valid"]
    assert rewards[1] < 0 and rewards.shape == (3,)
    # SAME_STEP autoreset: the visual env shows its next task, the one a direct env that
    # continues its random stream gets (not the first task again)
    direct = AgentGymGemEnv(VISUAL_ID)
    first = direct.reset(seed=42)[1]["task_id"]
    direct.step("<answer>1</answer>")
    assert infos[2]["task_id"] == direct.reset()[1]["task_id"] != first


def test_visual_ids_keep_the_question_and_never_send_base64(gem_ids):
    env = gem.make(PREFIX + VISUAL_ID, seed=1)
    obs, _ = env.reset()
    question = agentgym.make(VISUAL_ID).reset(seed=1)[0]["text"]
    assert question.strip().splitlines()[0] in obs
    assert "image(s) left out" in obs
    assert "base64" not in obs and len(obs) < 5000
    obs, *_ = env.step(render_tool_call("zoom", {"box": [0, 0, 100, 100]}))
    assert "base64" not in obs and len(obs) < 5000


def test_gem_shape_determinism_and_spawn():
    a, b = AgentGymGemEnv(TEXT_ID), AgentGymGemEnv(TEXT_ID)
    assert a.reset(seed=8)[0] == b.reset(seed=8)[0]
    obs, reward, _terminated, _truncated, info = a.step(UP)
    assert isinstance(obs, str) and isinstance(reward, float) and info["action_valid"]
    assert a.sample_random_action() in info["admissible_actions"]
    child = a.spawn(same_state=True)
    assert child.session.env.unwrapped.state_key() == a.session.env.unwrapped.state_key()


CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_oat_trainer_env_path_with_gems_concat_chat_wrapper(gem_ids):
    """What GEM's oat trainer (examples/train_oat.py) builds in each actor: ``make_vec``
    with per-env ``vec_kwargs`` seeds and GEM's ``concat_chat`` wrapper over a tokenizer."""
    from gem.wrappers.wrapper_factory import get_wrapper_fns

    from examples.integrations.offline import char_tokenizer

    tok = char_tokenizer()
    tok.chat_template = CHATML
    vec = gem.make_vec(
        [PREFIX + TEXT_ID] * 2,
        vec_kwargs=[{"seed": 7 + j} for j in range(2)],
        wrappers=get_wrapper_fns("concat_chat", tokenizer=tok),
        async_mode=True,
    )
    obs, _ = vec.reset()
    for j in range(2):  # each env's own seed, its task in a chat the model continues
        assert AgentGymGemEnv(TEXT_ID).reset(seed=7 + j)[0] in obs[j]
        assert obs[j].endswith("<|im_start|>assistant\n")
    obs, rewards, _, _, infos = vec.step([UP, "no call"])
    assert infos[0]["action_valid"] and not infos[1]["action_valid"] and rewards[1] < 0
    assert UP in obs[0] and "You moved up" in obs[0]


@pytest.mark.parametrize("async_mode", [False, True])
def test_make_vec_envs_are_released_without_a_vector_close(gem_ids, async_mode):
    """GEM 0.1's vector envs have no close(): dropping the vector env releases every env it
    built (a finalizer per env), and close_vec closes them at once."""
    import gc

    from agentgym.integrations.gem import close_vec

    ids = [PREFIX + TEXT_ID] * 3
    vec = gem.make_vec(ids, async_mode=async_mode, seed=3)
    assert not hasattr(vec, "close")  # the premise (GEM 0.1); use it if GEM adds one
    vec.reset()
    sessions = [env.session for env in vec.envs]
    assert not any(s.closed for s in sessions)
    del vec
    gc.collect()
    assert all(s.closed for s in sessions)

    vec = gem.make_vec(ids, async_mode=async_mode, seed=3)
    vec.reset()
    assert close_vec(vec) == 3 and all(env.session.closed for env in vec.envs)
    assert close_vec(vec) == 3  # closing again is harmless
