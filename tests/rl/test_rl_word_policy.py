"""The word transformer: its vocabulary, slots, match features, packing and scoring.

The pins that matter for training: the log-probability a sampled choice carries is what
``evaluate`` recomputes for it (PPO's ratio starts at exactly 1), whether the rows of an
episode are scored packed into one sequence or one by one; and SFT's generations are the
ones ``act`` would have produced.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from agentgym.wrappers.chat import observation_message

import agentgym  # noqa: F401  (registers the ids)
from agentgym.agents.base import PolicyInput
from agentgym.agents.wordmodel import (
    END,
    NL,
    SPECIALS,
    Tokenizer,
    WordConfig,
    WordPolicy,
    _Matches,
    _packs,
    _trie,
    build_vocabulary,
    is_word_state,
    words,
)
from agentgym.error import InvalidConfigError
from agentgym.rollout.steps import Chat, merge_step_info

VOCAB = sorted(["go", "to", "open", "take", "from", "the", "cabinet", "mug", "apple", "you", "see"])


def _policy(**kw: object) -> WordPolicy:
    cfg = WordConfig(vocab=VOCAB, d_model=32, n_layers=2, n_heads=2, **kw)  # type: ignore[arg-type]
    return WordPolicy(cfg, seed=0)


def _household_inputs(turns: int = 6, seed: int = 3) -> list[PolicyInput]:
    """The inputs of one Household-v0 episode played with the first admissible command."""
    env = gym.make("agentgym/Household-v0")
    obs, info = env.reset(seed=seed)
    chat, out = Chat.after_reset(obs, info), []
    for t in range(turns):
        inp = PolicyInput(chat.messages(None), dict(info))
        out.append(inp)
        action = info["admissible_actions"][t % len(info["admissible_actions"])]
        obs, _, _, _, step_info = env.step(action)
        chat.turns.append(
            ({"role": "assistant", "content": action}, observation_message(obs, "user"))
        )
        info = merge_step_info(info, step_info)
    return out


def test_vocabulary_keeps_frequent_lower_case_words_and_leaves_names_out() -> None:
    episodes = [
        ["Question: Where was Brado Tel born?", "He was born in Lorn.", "he directed"],
        ["Who directed Brado Tel?", "he directed it in 1990, born in Lorn"],
    ]
    vocab = build_vocabulary(episodes, min_episodes=2)
    assert "born" in vocab and "he" in vocab and "directed" in vocab
    assert "brado" not in vocab and "tel" not in vocab  # capitalised only: a name
    assert "question" not in vocab  # one episode only
    assert vocab == sorted(vocab)


def test_vocabulary_defaults_to_words_of_two_episodes_and_never_holds_the_newline() -> None:
    episodes = [["open the\ncabinet", "take mug\n"], ["open the\ndrawer"], ["the mug\n"]]
    # by default a word needs two episodes: "open" and "mug" have them, "cabinet" does not
    assert build_vocabulary(episodes) == ["mug", "open", "the"]
    # a newline is the NL special token, never a word, however often it occurs
    assert "\n" not in build_vocabulary(episodes, min_episodes=1)
    assert build_vocabulary(episodes, min_episodes=1) == [
        "cabinet",
        "drawer",
        "mug",
        "open",
        "take",
        "the",
    ]


def test_unknown_words_get_slots_in_order_of_first_appearance() -> None:
    tok = Tokenizer(["the"], slots=3)
    table: dict[str, int] = {}
    ids = tok.encode("the Zorn met Quil\nthe zorn", table)
    first = tok.first_slot
    assert ids == [SPECIALS, first, first + 1, first + 2, NL, SPECIALS, first]
    # past the last slot, unknown words share it
    assert tok.encode("Xa Xb", table) == [first + 2, first + 2]
    assert words("go to cabinet 12.") == ["go", "to", "cabinet", "12", "."]


def test_match_features_mark_task_words_and_pairs_seen_before() -> None:
    # BOS, first line "take mug", NL, then "cabinet 1 ... cabinet 1"
    t, m, c, one = 10, 11, 12, 13
    prompt = [1, t, m, NL, c, one, c, one]
    feats = _Matches(prompt).prompt_feats()
    assert list(feats[:, 0]) == [0, 2, 2, 0, 0, 0, 0, 0]
    assert list(feats[:, 1]) == [0, 0, 0, 0, 0, 0, 0, 1]  # (c, one) was seen once before
    trie = _trie(((m, 5), (c, one)))
    tf = dict(zip(zip(trie.parents, trie.tokens), _Matches(prompt).trie_feats(trie, 8).tolist()))
    assert tf[(-1, m)][0] == 1  # "mug" is in the task line
    assert tf[(c, one)][1] == 2  # "cabinet 1" was seen twice
    assert tf[(-1, c)][0] == 0
    # read after only the first 6 tokens, "cabinet 1" was seen once
    tf6 = dict(zip(zip(trie.parents, trie.tokens), _Matches(prompt).trie_feats(trie, 6).tolist()))
    assert tf6[(c, one)][1] == 1


def test_pair_features_count_after_every_parent_token_id_and_not_after_a_root() -> None:
    # the trie marks a root with parent -1; every token id is a real parent, the smallest
    # (0) included, so the pair feature is a function of the ids alone with no id set apart
    lo, x = 0, 7
    prompt = [1, lo, x, NL, lo, x, x]
    trie = _trie(((lo, x), (x,)))
    feats = _Matches(prompt).trie_feats(trie, len(prompt)).tolist()
    by_node = dict(zip(zip(trie.parents, trie.tokens), feats))
    assert by_node[(lo, x)][1] == 2  # (0, 7) occurs twice in the prompt
    assert by_node[(-1, x)][1] == 0 and by_node[(-1, lo)][1] == 0  # roots: no pair
    assert _Matches(prompt).prompt_feats()[:, 1].tolist() == [0, 0, 0, 0, 0, 1, 0]


def test_the_latest_observation_is_the_text_after_the_last_action_line() -> None:
    act, q1, q2, a1, o1, o2, a2, o3 = 9, 20, 21, 30, 40, 41, 31, 42
    prompt = [1, q1, q2, NL, act, a1, NL, o1, o2, NL, act, a2, NL, o3]
    matches = _Matches(prompt, act)
    assert matches.latest(len(prompt)) == {o3}
    assert matches.latest(9) == {o1, o2}  # read after the first observation
    assert matches.latest(3) == {q1, q2}  # no action yet: everything
    trie = _trie(((o3,), (o1,)))
    feats = dict(zip(trie.tokens, matches.trie_feats(trie, len(prompt))[:, 2].tolist()))
    assert feats == {o3: 1, o1: 0}
    assert not _Matches(prompt, None).latest(len(prompt)) - set(prompt)  # no ">": all


def test_trie_leaves_are_each_candidates_own_node() -> None:
    cands = ((5, 6), (5, 7), (5,), (8,))
    trie = _trie(cands)
    # (5,) starts (5, 6): it ends in END; the others end in their last token
    ends = [[*c, END] if c == (5,) else list(c) for c in cands]
    for end, leaf in zip(ends, trie.leaves):
        path = [trie.tokens[i] for i in np.flatnonzero(trie.ancestors[leaf])]
        assert path == end
    assert len(set(trie.leaves)) == len(cands)
    assert sorted(trie.tokens) == sorted([5, 6, 7, END, 8])  # one END only


def test_packs_group_prefixes_and_respect_the_budget() -> None:
    prompts = [[1, 2], [1, 2, 3, 4], [1, 2, 3], [1, 9]]
    packs = _packs(prompts, [1, 1, 1, 1], budget=10)
    assert sorted(sorted(p.rows) for p in packs) == [[0, 1, 2], [3]]
    assert _packs(prompts, [1, 1, 1, 1], budget=2)[0].rows == [1, 2]


@pytest.mark.parametrize("latest", [False, True])
def test_a_choice_logprob_is_what_evaluate_recomputes_packed_or_not(latest: bool) -> None:
    inputs = _household_inputs()
    policy = _policy(latest_feature=latest)
    assert (policy.model.in_latest is not None) == latest
    gens = policy.act(inputs)
    carried = torch.tensor([float(g.logprobs[0]) for g in gens])
    lp, ent, mask = policy.evaluate(gens)
    assert lp.shape == (len(gens), 1) and bool(mask.all())
    torch.testing.assert_close(lp[:, 0], carried, atol=2e-5, rtol=0)
    assert (ent > 0).all()
    policy.pack_budget = 0  # every row its own sequence
    lp_single, _, _ = policy.evaluate(gens)
    torch.testing.assert_close(lp_single, lp, atol=2e-5, rtol=0)
    for g in gens:
        assert g.text == inputs[gens.index(g)].info["admissible_actions"][g.meta["choice"]]


def test_greedy_takes_the_highest_score_and_sampling_follows_the_seed() -> None:
    inputs = _household_inputs(turns=3)
    policy = _policy(temperature=0.0)
    gens = policy.act(inputs)
    scores = policy.scores(
        [g.meta["prompt_ids"] for g in gens], [g.meta["candidate_ids"] for g in gens]
    )
    assert [g.meta["choice"] for g in gens] == [int(s.argmax()) for s in scores]
    a = [g.text for g in _policy().act(inputs * 4)]
    b = [g.text for g in _policy().act(inputs * 4)]
    assert a == b


def test_teacher_forced_matches_act_and_skips_inadmissible_actions() -> None:
    inputs = _household_inputs(turns=4)
    policy = _policy(temperature=0.0)
    acted = policy.act(inputs)
    forced = policy.teacher_forced(inputs, [g.text for g in acted[:-1]] + ["fly away"])
    assert forced[-1] is None
    for a, f in zip(acted[:-1], forced[:-1]):
        assert f is not None
        assert f.meta["prompt_ids"] == a.meta["prompt_ids"]
        assert f.meta["candidate_ids"] == a.meta["candidate_ids"]
        assert f.meta["choice"] == a.meta["choice"]


def test_the_window_keeps_the_head_and_the_latest_tail() -> None:
    policy = _policy(max_tokens=16, head_tokens=4)
    text = " ".join(["the"] * 5 + ["mug"] * 30 + ["apple"] * 3)
    inp = PolicyInput([{"role": "user", "content": text}], {"admissible_actions": ["go"]})
    prompt, _ = policy.encode(inp, ["go"])
    the, mug, apple = (policy.tokenizer.index[w] for w in ("the", "mug", "apple"))
    assert prompt == [1, the, the, the, the] + [mug] * 8 + [apple] * 3


def test_state_round_trip_and_typed_errors() -> None:
    policy = _policy()
    state = policy.state_dict()
    assert is_word_state(state)
    other = WordPolicy.from_state_dict(state)
    inputs = _household_inputs(turns=2)
    gens = policy.act(inputs)
    torch.testing.assert_close(other.evaluate(gens)[0], policy.evaluate(gens)[0])
    with pytest.raises(InvalidConfigError, match="admissible"):
        policy.act([PolicyInput([{"role": "user", "content": "hi"}], {})])
    with pytest.raises(InvalidConfigError, match="heads"):
        WordPolicy(WordConfig(vocab=VOCAB, d_model=30, n_heads=4))
    with pytest.raises(InvalidConfigError, match="head_tokens"):
        WordPolicy(WordConfig(vocab=VOCAB, max_tokens=8, head_tokens=8))


def test_any_text_encodes_without_error() -> None:
    policy = _policy()
    odd = "\ud800 lone surrogate \x00 \u202e rtl 🙂 " * 50
    inp = PolicyInput(
        [{"role": "user", "content": odd}], {"admissible_actions": [odd[:40], "go to"]}
    )
    gen = policy.act([inp])[0]
    assert gen.text in (odd[:40], "go to")


@pytest.mark.parametrize("latest", [False, True])
def test_acting_turn_by_turn_from_the_cache_scores_as_a_cold_start(latest: bool) -> None:
    inputs = _household_inputs(turns=5)
    policy = _policy(latest_feature=latest)
    for k, inp in enumerate(inputs):  # one env, turn by turn
        prompt, cands = policy.encode(inp, inp.info["admissible_actions"])
        hit = policy._cached(prompt)[0]
        assert (hit > 0) == (k > 0)  # every turn after the first reads the previous one's
        warm = policy._act_scores([prompt], [cands])[0]
        cold = policy.scores([prompt], [cands])[0]
        torch.testing.assert_close(warm, cold, atol=2e-5, rtol=0)
    # a weight update: the cached keys and values are stale and must not be read
    with torch.no_grad():
        policy.model.blocks[0].qkv.weight.add_(0.05)
    prompt, cands = policy.encode(inputs[-1], inputs[-1].info["admissible_actions"])
    torch.testing.assert_close(
        policy._act_scores([prompt], [cands])[0], policy.scores([prompt], [cands])[0],
        atol=2e-5, rtol=0,
    )  # fmt: skip
