"""``--policy word`` through the trainer and the CLI: vocabulary, SFT, RL, checkpoints.

Tiny sizes (d-model 16, one layer, a few Household-v0 episodes): the point is the wiring -
the vocabulary comes from the train split, SFT's labels can be the observer's, rows of one
episode stay together in a minibatch, an RL run starts from the SFT checkpoint's word model,
and ``agentgym eval``'s loader rebuilds it.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import agentgym  # noqa: F401  (registers the ids)
from agentgym.agents.load import load_policy
from agentgym.agents.wordmodel import WordConfig, WordPolicy
from agentgym.algos.demos import HouseholdExplorerPolicy, demo_steps, record_demos, relabel
from agentgym.algos.trainer import TrainConfig, Trainer
from agentgym.error import InvalidConfigError

ENV = "agentgym/Household-v0"
TINY = WordConfig(d_model=16, n_layers=1, n_heads=2, max_tokens=512)


@pytest.fixture(scope="module")
def demos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demos") / "demos.agtr"
    record_demos(ENV, path, episodes=4, epsilon=0.5, seed=11, env_kwargs={"max_turns": 12},
                 demonstrator="observer")  # fmt: skip
    return path


def test_relabel_gives_every_step_the_observers_choice(demos: Path) -> None:
    steps = demo_steps(demos, history_turns=None)
    labelled = relabel(steps, ENV, demos)
    observer = HouseholdExplorerPolicy()
    want = [g.text for g in observer.act([s.input for s in steps])]
    assert [s.action for s in labelled] == want
    assert sum(a.action != b.action for a, b in zip(steps, labelled)) > 0  # noise replaced
    assert [s.input for s in labelled] == [s.input for s in steps]  # same states
    # with a short history (what the policy reads) the labels are still the full-history ones
    short = relabel(demo_steps(demos, history_turns=1), ENV, demos)
    assert [s.action for s in short] == want


def _sft(demos: Path, out: Path) -> Trainer:
    cfg = TrainConfig(env_id=ENV, algo="sft", demos=str(demos), demos_relabel=True,
                      policy="word", word=WordConfig(**TINY.__dict__), iterations=2,
                      minibatch_size=8, history_turns=None, out_dir=str(out), progress=False,
                      demo_nll_every=2)  # fmt: skip
    trainer = Trainer(cfg)
    trainer.run()
    return trainer


def test_sft_then_rl_then_eval_with_the_word_policy(demos: Path, tmp_path: Path) -> None:
    sft = _sft(demos, tmp_path / "sft")
    assert isinstance(sft.policy, WordPolicy)
    vocab = sft.policy.config.vocab
    assert "cabinet" in vocab and "go" in vocab  # built from the demonstrations
    nll = [row["demo_nll"] for row in sft.metrics]
    assert nll[0] == "" and isinstance(nll[1], float)  # every 2nd epoch and the last
    # episodes stay together: the minibatch order is whole episodes
    order = sft._row_order([g.meta["episode"] for g in sft._demo_gens])
    episodes = [sft._demo_gens[i].meta["episode"] for i in order]
    changes = sum(a != b for a, b in itertools.pairwise(episodes))
    assert changes == len(set(episodes)) - 1
    rl = Trainer(TrainConfig(env_id=ENV, algo="gigpo", init=str(tmp_path / "sft" / "checkpoint.pt"),
                             env_kwargs={"max_turns": 6}, tasks_per_iter=1, group_size=2,
                             num_envs=2, backend="sync", iterations=1, history_turns=None,
                             out_dir=str(tmp_path / "rl"), progress=False))  # fmt: skip
    assert rl.cfg.policy == "word" and rl.policy.config.vocab == vocab
    rl.run()
    assert rl.env_steps > 0
    loaded = load_policy("checkpoint", checkpoint=tmp_path / "rl", temperature=0.0)
    assert isinstance(loaded, WordPolicy) and loaded.config.temperature == 0.0
    for a, b in zip(loaded.model.parameters(), rl.policy.model.parameters()):
        assert bool((a == b).all())


def test_without_demos_the_vocabulary_comes_from_random_train_episodes(tmp_path: Path) -> None:
    cfg = TrainConfig(env_id=ENV, algo="grpo", policy="word", word=WordConfig(**TINY.__dict__),
                      vocab_episodes=4, env_kwargs={"max_turns": 5}, tasks_per_iter=1,
                      group_size=2, num_envs=2, backend="sync", iterations=1,
                      history_turns=None, progress=False)  # fmt: skip
    trainer = Trainer(cfg)
    try:
        assert "go" in trainer.policy.config.vocab and "to" in trainer.policy.config.vocab
    finally:
        assert trainer.pool is not None
        trainer.pool.close()


def test_a_word_config_is_checked() -> None:
    bad = TrainConfig(env_id=ENV, policy="word", word=WordConfig(d_model=30, n_heads=4))
    with pytest.raises(InvalidConfigError, match="heads"):
        bad.validate()
    with pytest.raises(InvalidConfigError, match="'byte', 'word' or 'hf'"):
        TrainConfig(env_id=ENV, policy="words").validate()


def test_row_order_is_a_plain_permutation_for_the_byte_model() -> None:
    trainer = Trainer.__new__(Trainer)
    trainer.rng = np.random.default_rng(0)
    trainer.policy = object()
    order = trainer._row_order([0, 0, 1, 1, 2, 2])
    assert sorted(order) == list(range(6))


def test_cli_help_lists_the_word_policy() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "agentgym", "train", "--help"],
        capture_output=True,
        text=True,
        timeout=300,
    ).stdout
    assert "word" in out and "--context-tokens" in out and "--demos-relabel" in out
