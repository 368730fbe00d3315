"""The learning protocol's statistics: SE of the mean, paired differences, distinct tasks."""

from __future__ import annotations

import math

import pytest

from agentgym.algos.heldout import (
    distinct_task_seeds,
    heldout_eval,
    mean_se,
    paired_difference,
    seed_task_mapper,
)
from agentgym.error import InvalidConfigError


def test_mean_se_is_the_sample_std_over_root_n():
    # values 1..4: mean 2.5, sample variance 5/3, SE sqrt(5/3)/2
    mean, se = mean_se([1.0, 2.0, 3.0, 4.0])
    assert mean == 2.5
    assert se == pytest.approx(math.sqrt(5 / 3) / 2, rel=1e-12)
    # a population std (ddof=0) would give sqrt(1.25)/2 = 0.559; the SE is 0.645
    assert se == pytest.approx(0.6455, abs=1e-4)
    assert mean_se([0.0, 0.0, 0.0]) == (0.0, 0.0)


def test_mean_se_of_one_value_has_no_se_and_of_none_is_an_error():
    mean, se = mean_se([0.7])
    assert mean == 0.7 and math.isnan(se)
    with pytest.raises(ValueError):
        mean_se([])


def test_paired_difference_pairs_values_and_removes_shared_variation():
    before = [0.0, 1.0, 0.0, 1.0, 1.0]
    after = [1.0, 1.0, 0.0, 1.0, 1.0]
    # differences [1, 0, 0, 0, 0]: mean 0.2, sample std sqrt(0.2), SE sqrt(0.2)/sqrt(5) = 0.2
    diff, se = paired_difference(before, after)
    assert diff == pytest.approx(0.2)
    assert se == pytest.approx(0.2)
    # the unpaired SEs are larger: each set's own spread enters
    assert math.hypot(mean_se(before)[1], mean_se(after)[1]) > 0.3
    # order matters: after - before
    assert paired_difference(after, before)[0] == pytest.approx(-0.2)
    with pytest.raises(ValueError, match="unpaired"):
        paired_difference([1.0], [1.0, 0.0])


def test_distinct_task_seeds_skips_repeats_and_excluded_tasks():
    tasks = {0: "a", 1: "b", 2: "a", 3: "c", 4: "b", 5: "d", 6: "e"}
    assert distinct_task_seeds(tasks.__getitem__, 3) == [0, 1, 3]
    assert distinct_task_seeds(tasks.__getitem__, 3, exclude=["a", "c"]) == [1, 5, 6]
    assert distinct_task_seeds(tasks.__getitem__, 2, start=2) == [2, 3]
    with pytest.raises(InvalidConfigError, match="only 5 distinct"):
        distinct_task_seeds(tasks.__getitem__, 6, max_tries=7)


def test_distinct_seeds_play_distinct_tasks_in_heldout_eval():
    """Consecutive seeds repeat tasks on a small split; the chosen seeds never do."""
    from agentgym.agents.scripted import RandomPolicy

    env_id = "agentgym/UserTwentyQuestions-v0"
    task_of, close = seed_task_mapper(env_id, "test")
    try:
        consecutive = [task_of(s) for s in range(40)]
        seeds = distinct_task_seeds(task_of, 12)
    finally:
        close()
    assert len(set(consecutive)) < 40  # draws with replacement repeat
    res = heldout_eval(env_id, RandomPolicy(seed=0), seeds=seeds, backend="sync", num_envs=4)
    played = [o.task_id for o in res.outcomes]
    assert len(played) == 12 and len(set(played)) == 12
    assert sorted(o.seed for o in res.outcomes) == seeds
