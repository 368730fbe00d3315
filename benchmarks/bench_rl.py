"""RL costs: GiGPO vs GRPO advantage computation, batched vs one-by-one policy inference."""

from __future__ import annotations

import statistics
import time

import numpy as np

from benchmarks.timing import interleaved


def _advantage_rows(quick: bool) -> list[str]:
    from agentgym.algos import advantages as adv

    rng = np.random.default_rng(0)
    n = 100_000
    steps = 15  # Sokoban/WebShop-like episodes
    trajs = np.repeat(np.arange(n // steps + 1), steps)[:n]
    groups = trajs // 8  # group size 8
    rewards = rng.normal(size=n).round(1)
    state_ints = groups * 20 + rng.integers(0, 20, n)
    states = [f"{s:x}" for s in state_ints]  # state_key() strings, as envs return them
    str_groups = [f"g{g}" for g in groups]  # uuid-style ids, as verl-agent passes them
    fns = {
        "GRPO, integer group ids (baseline)": lambda: adv.grpo_advantages(rewards, groups),
        "GiGPO, string state keys": lambda: adv.gigpo_advantages(rewards, groups, trajs, states),
        "GiGPO, state keys as int64 digests": lambda: adv.gigpo_advantages(
            rewards, groups, trajs, state_ints
        ),
        "GiGPO, trajectory statistics": lambda: adv.gigpo_advantages(
            rewards, groups, trajs, states, episode_stats="trajectories"
        ),
        "GRPO, string group ids": lambda: adv.grpo_advantages(rewards, str_groups),
        "GiGPO, string group ids and state keys": lambda: adv.gigpo_advantages(
            rewards, str_groups, trajs, states
        ),
    }
    times = interleaved(fns, 3 if quick else 9)
    base = min(times["GRPO, integer group ids (baseline)"])
    rows = [
        "| estimator (100,000 step rows, groups of 8, 15-step episodes) | min (ms) | median (ms) "
        "| min vs GRPO |",
        "|---|---|---|---|",
    ]
    for name, ts in times.items():
        rows.append(
            f"| {name} | {min(ts) * 1e3:.1f} | {statistics.median(ts) * 1e3:.1f} "
            f"| {min(ts) / base:.1f}x |"
        )
    # Profile of one GiGPO call: what is left, and its floor, for both kinds of state key.
    g = adv._codes(groups)
    t_codes = adv._pair_codes(g, adv._codes(trajs))
    s_codes = adv._codes(states)
    i_codes = adv._codes(state_ints)
    a_codes = adv._pair_codes(g, i_codes)
    g_t = adv._returns_by_code(rewards, t_codes, 0.95)
    span = int(state_ints.max()) + 1
    str_part = "code string state keys (one dict pass: the floor for str keys)"
    int_part = "code int64 state keys (np.unique)"
    floor_pair = "floor: code (group, state) pairs in one np.unique of one int64 column"
    parts = {
        "code group ids (np.unique)": lambda: adv._codes(groups),
        "code trajectory ids and pair with groups": lambda: adv._pair_codes(g, adv._codes(trajs)),
        str_part: lambda: adv._codes(states),
        int_part: lambda: adv._codes(state_ints),
        "pair state codes with groups": lambda: adv._pair_codes(g, s_codes),
        floor_pair: lambda: np.unique(g * span + state_ints, return_inverse=True),
        "discounted returns (one numpy step per step position)": lambda: adv._returns_by_code(
            rewards, t_codes, 0.95
        ),
        "group normalisation (bincount)": lambda: adv.group_normalize(
            g_t, a_codes, singleton="zero"
        ),
    }
    ptimes = interleaved(parts, 3 if quick else 9)
    pmin = {k: min(v) * 1e3 for k, v in ptimes.items()}
    grpo_ms = base * 1e3
    int_ms = min(times["GiGPO, state keys as int64 digests"]) * 1e3
    str_ms = min(times["GiGPO, string state keys"]) * 1e3
    returns_ms = pmin["discounted returns (one numpy step per step position)"]
    norm_ms = pmin["group normalisation (bincount)"]
    # The least any GiGPO call must do beyond GRPO's whole call (which is its episode part):
    # group the rows by (group, state) once, the discounted returns, one more normalisation.
    floor_int = grpo_ms + pmin[floor_pair] + returns_ms + norm_ms
    floor_str = floor_int + pmin[str_part]
    rows += [
        "",
        "Where a GiGPO call's time goes (min over interleaved repeats; the string-key and "
        "int-key codings are alternatives, a call does one of them):",
        "",
        "| part | min (ms) |",
        "|---|---|",
        *(f"| {k} | {v:.2f} |" for k, v in pmin.items()),
        "",
        f"**Floor.** Whatever the implementation, GiGPO does GRPO's work (the episode "
        f"advantage is a GRPO normalisation over the groups: {grpo_ms:.1f} ms here) and then "
        f"must group the rows by (group, anchor state), compute the discounted returns and "
        f"normalise them once more. With int64 state keys the cheapest grouping is one "
        f"`np.unique` of a combined int64 column ({pmin[floor_pair]:.1f} ms), so the floor is "
        f"{grpo_ms:.1f} + {pmin[floor_pair]:.1f} + {returns_ms:.1f} (today's returns pass) + "
        f"{norm_ms:.1f} = "
        f"{floor_int:.1f} ms, {floor_int / grpo_ms:.1f}x GRPO; today's call takes "
        f"{int_ms:.1f} ms ({int_ms / grpo_ms:.1f}x), the rest being the separate codings of "
        f"trajectory and state ids (each an `np.unique` sort). String keys add one Python "
        f"pass over the keys ({pmin[str_part]:.1f} ms): floor {floor_str:.1f} ms, "
        f"{floor_str / grpo_ms:.1f}x GRPO; today {str_ms:.1f} ms ({str_ms / grpo_ms:.1f}x). "
        f"The aim (at most 1.5x GRPO) is "
        f"{'within reach' if floor_int <= 1.5 * grpo_ms else 'out of reach'}: the int-key "
        f"floor alone is {floor_int / grpo_ms:.1f}x, because GRPO's baseline is a single sort "
        "and normalisation and GiGPO needs a second grouping, the returns and a second "
        "normalisation on top of it.",
    ]
    return rows


def _inference_rows(quick: bool) -> list[str]:
    import gymnasium as gym
    import torch

    import agentgym  # noqa: F401
    from agentgym.agents.base import PolicyInput
    from agentgym.agents.transformer import TransformerConfig, TransformerPolicy, count_tokens

    torch.set_num_threads(1)
    env = gym.make("agentgym/Sokoban-Small-v0")
    inputs = []
    for seed in range(64):
        obs, info = env.reset(seed=seed)
        inputs.append(PolicyInput(messages=[{"role": "user", "content": obs["text"]}], info=info))
    lines = [
        "| policy (d_model 64, 2 layers, 1 thread) | mode | batch | tokens/s batched | "
        "tokens/s one-by-one | speed-up |",
        "|---|---|---|---|---|---|",
    ]
    for mode in ("choice", "free"):
        cfg = TransformerConfig(max_new_tokens=32, constrained=mode == "choice")
        policy = TransformerPolicy(cfg, seed=0)
        batch = inputs[: 16 if quick else 64] if mode == "choice" else inputs[: 8 if quick else 32]
        policy.act(batch[:2])  # warm-up
        t0 = time.perf_counter()
        gens = policy.act(batch)
        t_batch = time.perf_counter() - t0
        toks_batch = count_tokens(gens)
        t0 = time.perf_counter()
        single = [policy.act([x])[0] for x in batch]
        t_single = time.perf_counter() - t0
        toks_single = count_tokens(single)
        lines.append(
            f"| byte transformer | {mode} | {len(batch)} | {toks_batch / t_batch:,.0f} | "
            f"{toks_single / t_single:,.0f} | {(toks_batch / t_batch) / (toks_single / t_single):.1f}x |"
        )
    return lines


def _per_candidate_scores(policy, prompts, cands):
    """Baseline: one plain causal sequence per candidate (prompt + its bytes + EOS), with the
    next-byte distribution renormalised where candidates part ways: the same categorical as
    the tree-masked pass, the way one would compute it without a tree mask."""
    import torch

    from agentgym.agents.transformer import EOS, PAD

    out, forward_s = [], 0.0
    for prompt, cs in zip(prompts, cands):
        enc = [list(c.encode()) for c in cs]
        p = 0
        while all(len(e) > p for e in enc) and len({e[p] for e in enc}) == 1:
            p += 1
        mids = [[*e[p:], EOS] for e in enc]
        nxt: dict[tuple, set] = {}
        for m in mids:
            for j in range(len(m)):
                nxt.setdefault(tuple(m[:j]), set()).add(m[j])
        seqs = [prompt + m for m in mids]
        width = max(len(x) for x in seqs)
        ids = torch.full((len(seqs), width), PAD, dtype=torch.long)
        for i, x in enumerate(seqs):
            ids[i, : len(x)] = torch.tensor(x)
        t0 = time.perf_counter()
        logits = policy.model(ids, ids == PAD)
        forward_s += time.perf_counter() - t0
        scores = []
        for i, m in enumerate(mids):
            total = 0.0
            for j in range(len(m)):
                allowed = sorted(nxt[tuple(m[:j])])
                if len(allowed) > 1:
                    row = torch.log_softmax(logits[i, len(prompt) - 1 + j, allowed], -1)
                    total += float(row[allowed.index(m[j])])
            scores.append(total)
        out.append(scores)
    return out, forward_s


def _choice_rows(quick: bool) -> list[str]:
    import gymnasium as gym
    import torch

    import agentgym  # noqa: F401
    from agentgym.agents.base import PolicyInput
    from agentgym.agents.transformer import TransformerConfig, TransformerPolicy

    torch.set_num_threads(1)
    lines = [
        "| choice (d_model 64, 2 layers, 1 thread) | candidates | envs | choices/s tree-masked "
        "pass | choices/s one sequence per candidate (baseline) | speed-up | max abs logprob diff |",
        "|---|---|---|---|---|---|---|",
    ]
    cases = [
        ("agentgym/UserTwentyQuestions-v0", {}, "dialogue"),
        ("agentgym/WebTodoText-v0", {}, "latest"),
    ]
    n = 8 if quick else 32
    for env_id, kwargs, context in cases:
        env = gym.make(env_id, **kwargs)
        inputs = []
        for seed in range(n):
            obs, info = env.reset(seed=seed)
            inputs.append(
                PolicyInput(messages=[{"role": "user", "content": obs["text"]}], info=info)
            )
        env.close()
        policy = TransformerPolicy(TransformerConfig(max_prompt_bytes=256, context=context))
        prompts = [policy._prompt_ids(x) for x in inputs]
        cands = [list(x.info["admissible_actions"]) for x in inputs]
        with torch.no_grad():
            policy._candidate_logits(prompts[:2], cands[:2])  # warm-up
            t0 = time.perf_counter()
            fast = policy._candidate_logits(prompts, cands)
            t_fast = time.perf_counter() - t0
            # the baseline is timed on its forward passes only (its Python gathering is not
            # counted), so the speed-up is a lower bound
            slow, t_slow = _per_candidate_scores(policy, prompts, cands)
        diff = max(float(np.abs(f.numpy() - np.array(s)).max()) for f, s in zip(fast, slow))
        k = np.mean([len(c) for c in cands])
        lines.append(
            f"| `{env_id.split('/')[1]}` admissible actions | {k:.0f} | {n} | {n / t_fast:,.0f} "
            f"| {n / t_slow:,.0f} | {t_slow / t_fast:.1f}x | {diff:.1e} |"
        )
    return lines


def run(quick: bool = False) -> str:
    out = [
        "## RL: advantage cost and batched policy inference",
        "",
        "Machine: the project's 2-core CPU, shared with whatever else was running (the load "
        "average at the start and end of the run is in the footer; every ratio compares rows "
        "timed interleaved in the same run); no GPU, so every figure is CPU and the GPU rows "
        "the issue asks for are missing. "
        "Baselines: GRPO's group normalisation for the advantage cost; calling the policy "
        "once per env (batch 1) for inference. Tokens are bytes of the generated action "
        "(free mode) or of the chosen candidate (choice mode, Sokoban's four admissible "
        "moves read off one forward pass). On one CPU thread a 64-wide model gains little "
        "from batching; the batched call is what lets `device='cuda'` fill a GPU.",
        "",
        *_advantage_rows(quick),
        "",
        *_inference_rows(quick),
        "",
        "Scoring a choice among many admissible actions (the policy's constrained mode): the "
        "candidates' byte trie read in one tree-masked pass after the prompt, against one "
        "sequence per candidate (timed on its forward passes alone, so the speed-up is a lower "
        "bound); both compute the same categorical (last column). Prompts: 256 bytes.",
        "",
        *_choice_rows(quick),
        "",
    ]
    return "\n".join(out)
