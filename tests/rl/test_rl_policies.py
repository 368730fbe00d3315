"""The byte transformer policy: batched acting, constrained choices, exact logprobs."""

import numpy as np
import pytest
import torch

from agentgym.agents.base import PolicyInput
from agentgym.agents.transformer import (
    BOS,
    EOS,
    PAD,
    TransformerConfig,
    TransformerPolicy,
    prompt_text,
)
from agentgym.error import InvalidConfigError

MOVES = [
    f'<tool_call>{{"name": "move", "arguments": {{"direction": "{d}"}}}}</tool_call>'
    for d in ("up", "down", "left", "right")
]


def _inp(text, actions=None):
    info = {"admissible_actions": actions} if actions else {}
    return PolicyInput(messages=[{"role": "user", "content": text}], info=info)


@pytest.fixture
def policy():
    return TransformerPolicy(TransformerConfig(d_model=32, n_layers=1, max_new_tokens=12), seed=0)


def test_constrained_act_picks_admissible_actions_with_logprobs_matching_evaluate(policy):
    inputs = [_inp(f"grid {i}", MOVES) for i in range(6)]
    gens = policy.act(inputs)
    assert [g.text in MOVES for g in gens] == [True] * 6
    lp, ent, mask = policy.evaluate(gens)
    np.testing.assert_allclose(lp[:, 0].detach().numpy(), [g.logprobs[0] for g in gens], atol=1e-5)
    assert mask.sum() == 6
    # entropy of a categorical over four moves is in (0, log 4]
    assert ((ent[:, 0] > 0) & (ent[:, 0] <= np.log(4) + 1e-6)).all()


def test_initial_choice_distribution_is_not_degenerate(policy):
    gens = policy.act([_inp("same prompt", MOVES)] * 64)
    counts = np.bincount([g.meta["choice"] for g in gens], minlength=4)
    assert (counts > 0).sum() >= 3  # a fresh model explores


def test_general_scoring_path_for_candidates_sharing_a_first_byte(policy):
    acts = ["look", "left", "go"]
    gens = policy.act([_inp("room", acts)] * 4)
    lp, _, _ = policy.evaluate(gens)
    np.testing.assert_allclose(lp[:, 0].detach().numpy(), [g.logprobs[0] for g in gens], atol=1e-5)


def _brute_force_choice_logprobs(policy, prompt_text, cands):
    """log pi(k) by running the model once per candidate (plain causal forward) and
    renormalising the next-byte distribution at every byte where candidates part ways."""
    enc = [list(c.encode()) for c in cands]
    p = 0
    while all(len(e) > p for e in enc) and len({e[p] for e in enc}) == 1:
        p += 1
    mids = [[*e[p:], EOS] for e in enc]
    nxt = {}
    for m in mids:
        for j in range(len(m)):
            nxt.setdefault(tuple(m[:j]), set()).add(m[j])
    prompt = [BOS, *prompt_text.encode()]
    out = []
    for m in mids:
        ids = torch.tensor([prompt + m])
        with torch.no_grad():
            logits = policy.model(ids, ids == PAD)[0]
        total = 0.0
        for j in range(len(m)):
            allowed = sorted(nxt[tuple(m[:j])])
            if len(allowed) > 1:
                row = torch.log_softmax(logits[len(prompt) - 1 + j, allowed], -1)
                total += float(row[allowed.index(m[j])])
        out.append(total)
    return np.array(out)


@pytest.mark.parametrize(
    "cands",
    [
        [
            f'<tool_call>{{"name": "click", "arguments": {{"bid": "{i}"}}}}</tool_call>'
            for i in range(14)
        ],
        ["Is it a bird?", "Is it an animal?", "Is it a mammal?", "Does it fly?", "answer: dog"],
        MOVES,
    ],
    ids=["bids-sharing-first-digits", "questions", "moves"],
)
def test_tree_masked_choice_scores_equal_one_forward_per_candidate(policy, cands):
    gens = policy.act([_inp("page text", cands)])
    scores = policy._candidate_logits([gens[0].meta["prompt_ids"]], [cands])[0].detach().numpy()
    np.testing.assert_allclose(
        scores, _brute_force_choice_logprobs(policy, "page text", cands), atol=1e-4
    )
    # distinct candidates form an exact categorical: the probabilities already sum to one
    assert abs(np.exp(scores).sum() - 1.0) < 1e-4


def test_duplicate_and_single_candidates_give_a_proper_distribution(policy):
    gens = policy.act([_inp("x", ["a", "a", "b"]), _inp("y", ["only"])])
    assert gens[1].text == "only" and abs(gens[1].logprobs[0]) < 1e-6
    lp, ent, _ = policy.evaluate(gens)
    assert torch.isfinite(lp).all() and torch.isfinite(ent).all()


def test_free_generation_batched_equals_one_by_one_when_greedy(policy):
    policy.config.temperature = 0.0
    inputs = [_inp("a"), _inp("a much longer prompt than the first"), _inp("mid size")]
    batched = policy.act(inputs)
    single = [policy.act([x])[0] for x in inputs]
    assert [g.text for g in batched] == [g.text for g in single]
    for b, s in zip(batched, single):
        np.testing.assert_allclose(b.logprobs, s.logprobs, atol=1e-4)


def test_free_generation_logprobs_match_teacher_forced_evaluate(policy):
    gens = policy.act([_inp("hello"), _inp("bye")])
    lp, _, mask = policy.evaluate(gens)
    for i, g in enumerate(gens):
        n = len(g.token_ids)
        assert mask[i].sum() == n
        np.testing.assert_allclose(lp[i, :n].detach().numpy(), g.logprobs, atol=1e-4)


def test_training_signal_moves_the_choice(policy):
    opt = torch.optim.Adam(policy.model.parameters(), lr=1e-2)
    inputs = [_inp("push the box", MOVES)] * 8
    for _ in range(30):
        gens = policy.act(inputs)
        lp, _, _ = policy.evaluate(gens)
        reward = torch.tensor([1.0 if g.meta["choice"] == 2 else 0.0 for g in gens])
        loss = -(lp[:, 0] * (reward - reward.mean())).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    policy.config.temperature = 0.0
    assert policy.act(inputs[:1])[0].text == MOVES[2]


def test_state_dict_round_trip(policy):
    other = TransformerPolicy.from_state_dict(policy.state_dict())
    gens = policy.act([_inp("x", MOVES)])
    a = policy.evaluate(gens)[0]
    b = other.evaluate(gens)[0]
    assert torch.allclose(a, b)


def test_prompt_keeps_head_and_tail_bytes_when_asked():
    cfg = TransformerConfig(d_model=16, n_layers=1, max_prompt_bytes=12, prompt_head_bytes=4)
    pol = TransformerPolicy(cfg)
    ids = pol._prompt_ids(_inp("Task" + "x" * 50 + "STATE123"))
    assert bytes(ids[1:]) == b"Task" + b"STATE123"
    assert TransformerConfig(max_prompt_bytes=512).max_len >= 512 + 96  # room for the action
    with pytest.raises(InvalidConfigError):
        TransformerPolicy(TransformerConfig(max_prompt_bytes=8, prompt_head_bytes=8))


def test_dialogue_context_reads_the_conversation_with_compact_tool_calls():
    messages = [
        {"role": "system", "content": "rules nobody needs to re-read"},
        {"role": "user", "content": "User: think of a thing"},
        {
            "role": "assistant",
            "content": '<tool_call>{"name": "talk", "arguments": {"message": "Is it red?"}}</tool_call>',
        },
        {"role": "user", "content": "User: No."},
    ]
    text = prompt_text(PolicyInput(messages=messages), "dialogue")
    assert text == "User: think of a thing\n> talk: Is it red?\nUser: No."
    assert prompt_text(PolicyInput(messages=messages), "latest") == "User: No."
    with pytest.raises(InvalidConfigError):
        TransformerPolicy(TransformerConfig(context="everything"))


PAGE = (
    'Task: Delete the item "buy milk 2".\nPage:\n[0] button "Done: pay rent 1"\n'
    '[1] button "Delete: pay rent 1"\n[2] textbox "New item"\n[3] button "Delete: buy milk 2"\n'
    '[4] button "Delete: buy milk 2"'
)


def _click(bid):
    return f'<tool_call>{{"name": "click", "arguments": {{"bid": "{bid}"}}}}</tool_call>'


def test_element_view_writes_clicks_as_the_elements_they_click():
    from agentgym.agents.transformer import candidate_views

    acts = [_click(0), _click(1), _click(3), _click(4), _click(9), "not a tool call"]
    views = candidate_views(_inp(PAGE), acts, "element")
    assert views == [
        'button "Done: pay rent 1"',
        'button "Delete: pay rent 1"',
        'button "Delete: buy milk 2"',
        'button "Delete: buy milk 2" #3',  # same label twice: still two distinct choices
        "> click: 9",  # no such element on the page: the compact action
        "> not a tool call",
    ]
    assert candidate_views(_inp(PAGE), acts, "action") == acts


def test_element_view_acts_with_the_action_and_scores_the_view_consistently():
    policy = TransformerPolicy(TransformerConfig(d_model=32, n_layers=1, candidates="element"))
    acts = [_click(0), _click(1), _click(3)]
    gens = policy.act([_inp(PAGE, acts)] * 8)
    for g in gens:
        assert g.text == acts[g.meta["choice"]]  # the env gets the real action
        assert g.meta["candidates"][g.meta["choice"]].startswith("button ")
    lp, _, _ = policy.evaluate(gens)
    np.testing.assert_allclose(lp[:, 0].detach().numpy(), [g.logprobs[0] for g in gens], atol=1e-5)


def test_unknown_candidate_view_is_a_clear_error():
    with pytest.raises(InvalidConfigError, match="candidates must be"):
        TransformerPolicy(TransformerConfig(candidates="labels"))
