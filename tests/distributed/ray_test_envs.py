"""Env factories for the Ray pool tests (pickled by value to the Ray workers), and a node killer."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import gymnasium as gym


class Misbehaving(gym.Wrapper):
    """Sokoban that hangs on the action ``HANG`` and kills its process on ``DIE``."""

    def step(self, action):
        if action == "HANG":
            time.sleep(60)
        if action == "DIE":
            os._exit(1)
        return self.env.step(action)


def make_misbehaving():
    import agentgym  # noqa: F401

    return Misbehaving(gym.make("agentgym/Sokoban-Tiny-v0"))


def _children(pid: int) -> list[int]:
    """Process ids whose parent is ``pid`` (Linux /proc)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            # "pid (comm) state ppid ...": comm may hold spaces, so split after its ")"
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                out.append(int(stat.parent.name))
    return out


def kill_node(cluster, node) -> None:
    """Kill a worker node of a ``ray.cluster_utils.Cluster`` the hard way, as a crash would.

    ``Cluster.remove_node`` ends the node's raylet but not the workers it started (actors
    go on answering calls for a while); a real node failure takes them all down at once.
    """
    for pid in _children(node.all_processes["raylet"][0].process.pid):  # actors, agents
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    cluster.remove_node(node, allow_graceful=False)


def kill_actor_for_good(ray, actor, timeout_s: float = 60.0) -> None:
    """``ray.kill`` and wait until the actor is gone.

    ``ray.kill`` only asks the cluster to kill; a call sent right after it can still be
    answered by the living actor, so a test would race the kill.
    """
    ray.kill(actor, no_restart=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            ray.get(actor.pid.remote(), timeout=timeout_s)
        except ray.exceptions.RayActorError:
            return
        time.sleep(0.05)
    raise AssertionError(f"actor still answers {timeout_s} s after ray.kill")
