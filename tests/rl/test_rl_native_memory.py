"""Training hands the heap memory each iteration freed back to the OS (a long run's
resident memory otherwise grows by what glibc keeps in fragmented arenas)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from agentgym.agents.transformer import TransformerConfig
from agentgym.algos import native_memory
from agentgym.algos.trainer import TrainConfig, Trainer

_FRAGMENTED_HEAP = r"""
import json, psutil
from agentgym.algos.native_memory import release_freed_memory
rss = lambda: psutil.Process().memory_info().rss
big = bytearray(8 << 20)  # freeing a mapped 8 MiB block raises glibc's mmap threshold,
del big  # so the 1 MiB blocks below come from the heap, as a training step's tensors do
blocks, pins = [], []
for _ in range(300):
    blocks.append(bytearray(1 << 20))
    pins.append(bytearray(4096))  # malloc'd between them: the heap's top cannot shrink
del blocks
freed = rss()
released = release_freed_memory()
print(json.dumps({"released": released, "returned_mb": (freed - rss()) / 2**20}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_freed_heap_memory_goes_back_to_the_os() -> None:
    """300 MiB freed between live blocks stays resident until it is released."""
    out = subprocess.run(
        [sys.executable, "-c", _FRAGMENTED_HEAP], capture_output=True, text=True, check=True
    )
    result = json.loads(out.stdout)
    assert result["released"] is True
    assert result["returned_mb"] > 200, result


def test_a_c_library_without_malloc_trim_is_a_quiet_no(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native_memory, "_malloc_trim", lambda: None)
    assert native_memory.release_freed_memory() is False


def test_every_training_iteration_releases_what_it_freed(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    cfg = TrainConfig(
        env_id="agentgym/Sokoban-Tiny-v0",
        num_envs=2,
        backend="sync",
        tasks_per_iter=1,
        group_size=2,
        minibatch_size=8,
        ppo_epochs=1,
        progress=False,
    )
    cfg.model = TransformerConfig(d_model=16, n_layers=1)
    trainer = Trainer(cfg)
    monkeypatch.setattr(
        "agentgym.algos.trainer.release_freed_memory", lambda: calls.append(trainer.iteration)
    )
    try:
        trainer.step()
        trainer.step()
    finally:
        trainer.pool.close()
    assert calls == [1, 2]  # once per iteration, after its update
