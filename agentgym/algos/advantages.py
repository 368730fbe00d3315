"""Advantage estimators for GRPO, GiGPO and Tree-GRPO on flat per-row arrays.

Every estimator takes 1-D arrays of equal length, one entry per training row (a row is one
agent step; the rows of one trajectory appear in step order, trajectories may interleave),
and returns one advantage per row. Inputs may be numpy arrays, torch tensors or lists; the
result has the type (and, for torch, the device) of the first numeric input. The maths runs
in float64 numpy, fully vectorised (no per-group Python loops), so any framework (verl, TRL,
OpenRLHF or :mod:`agentgym.algos.trainer`) can call these on its own batch.

Conventions shared by all three (they follow the GiGPO / Tree-GRPO reference code):

* ``mean_std_norm``: ``A = (x - mean_g) / (std_g + eps)`` with the *unbiased* (N-1) std.
* ``mean_norm``:     ``A = x - mean_g``.
* A group of ONE element has no baseline: episode-level groups then use mean 0, std 1 (the
  raw score passes through, as in the reference code); GiGPO's step-level anchor groups give
  0 (no comparison possible). All-equal groups give exactly 0 (never NaN).
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Any

import numpy as np

from agentgym.error import InvalidConfigError

MODES = ("mean_std_norm", "mean_norm")

# --------------------------------------------------------------------------------------------
# plumbing: array conversion and group statistics
# --------------------------------------------------------------------------------------------


def _as_float(x: Any, name: str) -> np.ndarray:
    if hasattr(x, "detach"):  # torch tensor
        x = x.detach().cpu().numpy()
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 1:
        raise InvalidConfigError(f"{name} must be 1-D (one entry per row), got shape {arr.shape}.")
    return arr


def _as_keys(x: Any) -> np.ndarray | list[Any]:
    """Key column as a numpy array when it already is one (or a tensor), else a list."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    if isinstance(x, np.ndarray):
        return x if x.ndim == 1 else x.tolist()
    return list(x)


def _codes(column: np.ndarray | list[Any]) -> np.ndarray:
    """Dense integer codes (0..k-1) for the distinct values of one key column.

    Numeric and fixed-width string arrays are coded in C by ``np.unique``; other columns
    (lists of str, tuples, any hashable) take one dict pass. Code order is arbitrary:
    callers only compare codes for equality.
    """
    if isinstance(column, np.ndarray) and column.dtype.kind in "biuUS":
        return np.unique(column, return_inverse=True)[1].reshape(-1).astype(np.int64, copy=False)
    index = dict.fromkeys(column)
    for i, key in enumerate(index):
        index[key] = i
    return np.fromiter(map(index.__getitem__, column), dtype=np.int64, count=len(column))


def _pair_codes(outer: np.ndarray, inner: np.ndarray) -> np.ndarray:
    """Dense codes for the distinct (outer, inner) pairs of two integer code columns."""
    if outer.size == 0:
        return outer.copy()
    joint = outer * (int(inner.max()) + 1) + inner  # < n^2: no int64 overflow below 3e9 rows
    return np.unique(joint, return_inverse=True)[1].reshape(-1)


def _like(result: np.ndarray, template: Any) -> Any:
    """Return ``result`` as the same kind of array as ``template`` (torch in, torch out)."""
    if hasattr(template, "detach"):
        import torch

        dtype = template.dtype if template.is_floating_point() else torch.float32
        return torch.as_tensor(result, dtype=dtype, device=template.device)
    if isinstance(template, np.ndarray) and np.issubdtype(template.dtype, np.floating):
        return result.astype(template.dtype)
    return result


def _check_lengths(**arrays: Any) -> int:
    lengths = {k: len(v) for k, v in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise InvalidConfigError(f"all inputs need one entry per row; got lengths {lengths}.")
    return next(iter(lengths.values()))


def group_normalize(
    x: np.ndarray,
    codes: np.ndarray,
    *,
    mode: str = "mean_std_norm",
    eps: float = 1e-6,
    singleton: str = "raw",
) -> np.ndarray:
    """Normalise ``x`` within the groups given by integer ``codes`` (vectorised).

    ``singleton="raw"`` treats a one-element group as mean 0, std 1 (score passes through);
    ``singleton="zero"`` gives it advantage 0.
    """
    if mode not in MODES:
        raise InvalidConfigError(f"mode must be one of {MODES}, got {mode!r}.")
    if x.size == 0:
        return x.copy()
    n_groups = int(codes.max()) + 1
    count = np.bincount(codes, minlength=n_groups).astype(np.float64)
    total = np.bincount(codes, weights=x, minlength=n_groups)
    mean = total / count
    # unbiased variance: sum (x - mean)^2 / (n - 1); two-pass for numerical stability
    dev = x - mean[codes]
    ss = np.bincount(codes, weights=dev * dev, minlength=n_groups)
    std = np.sqrt(ss / np.maximum(count - 1.0, 1.0))
    single = count[codes] <= 1
    out = dev / (std[codes] + eps) if mode == "mean_std_norm" else dev
    if singleton == "raw":
        out = np.where(single, x, out)  # mean 0, std 1
    elif singleton == "zero":
        out = np.where(single, 0.0, out)
    else:
        raise InvalidConfigError(f"singleton must be 'raw' or 'zero', got {singleton!r}.")
    return out


def discounted_returns(rewards: Any, traj_ids: Any, gamma: float = 0.95) -> np.ndarray:
    """Per-row discounted return ``R_t = sum_k gamma^k r_{t+k}`` within each trajectory.

    Rows of one trajectory must be in step order; trajectories may interleave.

    Examples:
        >>> discounted_returns([1.0, 1.0, 2.0], ["a", "a", "b"], gamma=0.5).tolist()
        [1.5, 1.0, 2.0]
    """
    r = _as_float(rewards, "rewards")
    traj = _codes(_as_keys(traj_ids))
    _check_lengths(rewards=r, traj_ids=traj)
    return _returns_by_code(r, traj, gamma)


def _returns_by_code(r: np.ndarray, traj: np.ndarray, gamma: float) -> np.ndarray:
    """``discounted_returns`` for integer trajectory codes: O(rows) work in all.

    One numpy step per step position, walking from the last position back; each step
    touches only the rows at that position (rows pre-sorted by position once).
    """
    if r.size == 0:
        return r.copy()
    order = np.argsort(traj, kind="stable")  # rows grouped by trajectory, step order kept
    sorted_traj = traj[order]
    starts = np.r_[True, sorted_traj[1:] != sorted_traj[:-1]]
    start_idx = np.maximum.accumulate(np.where(starts, np.arange(r.size), 0))
    pos = np.arange(r.size) - start_idx  # step index within its trajectory
    has_next = np.r_[sorted_traj[1:] == sorted_traj[:-1], False]
    by_pos = np.argsort(pos, kind="stable")
    bounds = np.searchsorted(pos[by_pos], np.arange(int(pos.max()) + 2))
    rs = r[order]
    g = np.zeros_like(rs)
    # G_t = r_t + gamma * G_{t+1}; G_{t+1} is the next sorted row when it is the same trajectory
    for p in range(int(pos.max()), -1, -1):
        rows = by_pos[bounds[p] : bounds[p + 1]]
        nxt = rows + 1
        follow = has_next[rows]
        g[rows] = rs[rows]
        g[rows[follow]] += gamma * g[nxt[follow]]
    out = np.empty_like(g)
    out[order] = g
    return out


# --------------------------------------------------------------------------------------------
# GRPO
# --------------------------------------------------------------------------------------------


def grpo_advantages(
    scores: Any, group_ids: Any, *, mode: str = "mean_std_norm", eps: float = 1e-6
) -> Any:
    """GRPO: ``A_i = (s_i - mean_g) / (std_g + eps)`` over the rows of each group.

    ``scores`` is usually the episode return broadcast to each of its rows (or one row per
    episode). Singleton groups keep their raw score; all-equal groups get 0.

    Examples:
        >>> grpo_advantages([1.0, 0.0, 0.0, 5.0], ["a", "a", "a", "b"]).round(4).tolist()
        [1.1547, -0.5773, -0.5773, 5.0]
    """
    s = _as_float(scores, "scores")
    g = _as_keys(group_ids)
    _check_lengths(scores=s, group_ids=g)
    return _like(group_normalize(s, _codes(g), mode=mode, eps=eps), scores)


# --------------------------------------------------------------------------------------------
# GiGPO
# --------------------------------------------------------------------------------------------


def _similarity_codes(groups: list[Any], texts: list[str], threshold: float) -> np.ndarray:
    """Anchor codes merging states whose texts have SequenceMatcher ratio >= threshold."""
    reps: dict[Any, list[tuple[str, int]]] = {}
    out = np.empty(len(texts), dtype=np.int64)
    n = 0
    for i, (grp, text) in enumerate(zip(groups, texts)):
        bucket = reps.setdefault(grp, [])
        for rep_text, code in bucket:
            if rep_text == text or SequenceMatcher(None, rep_text, text).ratio() >= threshold:
                out[i] = code
                break
        else:
            bucket.append((text, n))
            out[i] = n
            n += 1
    return out


def gigpo_advantages(
    rewards: Any,
    group_ids: Any,
    traj_ids: Any,
    state_keys: Any,
    *,
    gamma: float = 0.95,
    omega: float = 1.0,
    mode: str = "mean_norm",
    episode_stats: str = "rows",
    eps: float = 1e-6,
    invalid: Any = None,
    invalid_penalty: float = 0.0,
    penalty_timing: str = "after",
    similarity_threshold: float | None = None,
) -> Any:
    """GiGPO: episode advantage plus anchor-state step advantage, ``A = A_E + omega * A_S``.

    Equations (arXiv 2505.10978), for step ``t`` of trajectory ``i`` in episode group ``g``:

    * episode score ``R_i = sum_t r_{i,t}``; ``A_E = norm_g(R_i)`` over the group. With
      ``episode_stats="rows"`` (official code) the statistics are taken over step rows, so
      long trajectories weigh more; ``"trajectories"`` (paper Eq. 3) uses one value per
      trajectory.
    * step return ``G_{i,t} = sum_k gamma^k r_{i,t+k}``; ``A_S = norm_anchor(G_{i,t})`` over
      all rows of the group whose anchor state (``state_keys``: the env's ``state_key``
      BEFORE the action) is identical, across trajectories and time steps. Singleton anchor
      groups give ``A_S = 0``.

    Args:
        rewards: env reward of each row.
        group_ids: episode group (same task + seed) of each row.
        traj_ids: trajectory of each row (unique across groups).
        state_keys: anchor state of each row (any hashable; strings from ``state_key()``).
        invalid: optional bool per row; with ``invalid_penalty > 0`` those rows are penalised
            ``after`` discounting (code: subtracted from the row's step score only) or
            ``before`` (subtracted from the reward, so it propagates back through ``gamma``).
        similarity_threshold: if set, ``state_keys`` are texts and anchors merge when their
            difflib ratio is at least this (the code's option for search-style tasks).
    """
    r = _as_float(rewards, "rewards")
    groups = _as_keys(group_ids)
    trajs = _as_keys(traj_ids)
    states = _as_keys(state_keys)
    _check_lengths(rewards=r, group_ids=groups, traj_ids=trajs, state_keys=states)
    if episode_stats not in ("rows", "trajectories"):
        raise InvalidConfigError(
            f"episode_stats must be 'rows' or 'trajectories', got {episode_stats!r}."
        )
    if penalty_timing not in ("before", "after"):
        raise InvalidConfigError(
            f"penalty_timing must be 'before' or 'after', got {penalty_timing!r}."
        )
    if r.size == 0:
        return _like(r.copy(), rewards)
    bad = np.zeros_like(r) if invalid is None else _as_float(invalid, "invalid")
    penalty = invalid_penalty * (bad > 0)

    # each key column is coded once; (group, x) pairs are combined from the integer codes
    g_codes = _codes(groups)
    t_codes = _pair_codes(g_codes, _codes(trajs))
    # --- episode advantage A_E -------------------------------------------------------------
    ep_rewards = r - penalty if penalty_timing == "before" else r
    ep_score = np.bincount(t_codes, weights=ep_rewards)  # R_i per trajectory
    if episode_stats == "rows":
        a_e = group_normalize(ep_score[t_codes], g_codes, mode=mode, eps=eps)
    else:
        traj_group = np.zeros(ep_score.size, dtype=np.int64)
        traj_group[t_codes] = g_codes
        a_e = group_normalize(ep_score, traj_group, mode=mode, eps=eps)[t_codes]
    # --- step advantage A_S ----------------------------------------------------------------
    step_rewards = r - penalty if penalty_timing == "before" else r
    g_t = _returns_by_code(step_rewards, t_codes, gamma)
    if penalty_timing == "after":
        g_t = g_t - penalty
    if similarity_threshold is None:
        a_codes = _pair_codes(g_codes, _codes(states))
    else:
        a_codes = _similarity_codes(list(groups), [str(s) for s in states], similarity_threshold)
    a_s = group_normalize(g_t, a_codes, mode=mode, eps=eps, singleton="zero")
    return _like(a_e + omega * a_s, rewards)


# --------------------------------------------------------------------------------------------
# Tree-GRPO
# --------------------------------------------------------------------------------------------


def tree_grpo_advantages(
    leaf_scores: Any, task_ids: Any, tree_ids: Any, *, eps: float = 1e-6
) -> Any:
    """Tree-GRPO: inter-tree plus intra-tree group-normalised leaf advantage.

    For leaf ``l`` of tree ``k`` of task ``q`` (arXiv 2509.21240):
    ``A_l = (s_l - mean_q) / (std_q + eps) + (s_l - mean_k) / (std_k + eps)``, means and
    unbiased stds over all leaves of the task (inter) and of the tree (intra). Singletons:
    mean 0, std 1. Each leaf's advantage is then given to every step on its root path.

    Examples:
        >>> tree_grpo_advantages([1, 0, 0, 1, 1, 0], ["q"] * 6, [0, 0, 0, 1, 1, 1]).round(4).tolist()
        [2.0676, -1.4902, -1.4902, 1.4902, 1.4902, -2.0676]
    """
    s = _as_float(leaf_scores, "leaf_scores")
    tasks = _as_keys(task_ids)
    trees = _as_keys(tree_ids)
    _check_lengths(leaf_scores=s, task_ids=tasks, tree_ids=trees)
    task_codes = _codes(tasks)
    inter = group_normalize(s, task_codes, mode="mean_std_norm", eps=eps)
    intra = group_normalize(
        s, _pair_codes(task_codes, _codes(trees)), mode="mean_std_norm", eps=eps
    )
    return _like(inter + intra, leaf_scores)
