"""Per-worker cgroup directories and their clean removal.

Memory, pids and cpu are cgroup v1 controllers; ``unified`` is the cgroup v2 hierarchy of a
hybrid layout, used for its core files only (``cgroup.freeze``, ``cgroup.kill``): it needs no
controller, so it works next to the v1 ones.
"""

from __future__ import annotations

import os
import signal
import time

from agentgym.simulators.sandbox.layers import CGROUP_ROOT

#: All sandbox cgroups live below this directory of each controller.
PARENT = "agentgym-sandbox"
#: The hierarchies the sandbox uses (``unified``: cgroup v2, for freezing and killing).
CONTROLLERS = ("memory", "pids", "cpu", "unified")
#: The weight of one runnable process (nice 0) in the cpu controller.
CPU_SHARE = 1024


def worker_dir(controller: str, name: str) -> str:
    """Where worker ``name``'s cgroup of ``controller`` lives.

    Memory and pids groups sit below one ``agentgym-sandbox`` parent. The cpu group sits at
    the top of its hierarchy instead (``agentgym-sandbox.<name>``): there it competes with
    every host process as one entity of weight ``cpu.shares``, and the worker sets that to
    one process's weight per running cell, so the sandbox as a whole gets what its running
    cells would as plain processes (a shared parent would cap all workers at one process's
    worth), while inside it each session gets an equal share.
    """
    if controller == "cpu":
        return os.path.join(CGROUP_ROOT, controller, f"{PARENT}.{name}")
    return os.path.join(CGROUP_ROOT, controller, PARENT, name)


class WorkerCgroup:
    """A memory, pids, cpu and v2 (freezer) cgroup for one worker and everything it forks.

    The worker makes a sub-cgroup of each per session lineage and per one-shot run (memory
    and disk quota, process limit, an equal CPU weight; for a lineage, a freezer).
    """

    def __init__(
        self,
        name: str,
        *,
        memory: int | None,
        pids: int | None,
        cpu: bool = False,
        freezer: bool = False,
    ):
        self.paths: list[str] = []
        for controller, limit_file, limit in (
            ("memory", "memory.limit_in_bytes", memory),
            ("pids", "pids.max", pids),
            ("cpu", "cpu.shares", CPU_SHARE if cpu else None),
            ("unified", "", 0 if freezer else None),
        ):
            if limit is None:
                continue
            path = worker_dir(controller, name)
            os.makedirs(path, exist_ok=True)
            if limit_file:
                with open(os.path.join(path, limit_file), "w") as fh:
                    fh.write(str(int(limit)))
            if controller == "memory":
                swap = os.path.join(path, "memory.memsw.limit_in_bytes")
                if os.path.exists(swap):
                    try:
                        with open(swap, "w") as fh:
                            fh.write(str(int(limit)))
                    except OSError:
                        pass
            self.paths.append(path)

    def enter(self) -> None:
        """Move the calling process into the cgroups (called in the child before exec)."""
        for path in self.paths:
            with open(os.path.join(path, "cgroup.procs"), "w") as fh:
                fh.write("0")

    def pids(self) -> list[int]:
        """Every process in the worker's cgroups, its per-session sub-cgroups included."""
        out: set[int] = set()
        for path in self.paths:
            for d in [path, *self.children(path)]:
                try:
                    with open(os.path.join(d, "cgroup.procs")) as fh:
                        out.update(int(x) for x in fh.read().split())
                except OSError:
                    pass
        return sorted(out)

    @staticmethod
    def children(path: str) -> list[str]:
        """The per-session sub-cgroups the worker made under ``path``."""
        try:
            return [
                os.path.join(path, d)
                for d in os.listdir(path)
                if os.path.isdir(os.path.join(path, d))
            ]
        except OSError:
            return []

    def session_cgroups(self) -> list[str]:
        """Per-session sub-cgroups that exist now (for leak checks)."""
        return sorted(c for path in self.paths for c in self.children(path))

    def destroy(self, timeout: float = 5.0) -> None:
        """SIGKILL whatever is left inside (frozen processes too) and remove the directories."""
        deadline = time.monotonic() + timeout
        for path in self.paths:
            for d in [*self.children(path), path]:
                kill = os.path.join(d, "cgroup.kill")  # v2: kills frozen processes as well
                if os.path.exists(kill):
                    try:
                        with open(kill, "w") as fh:
                            fh.write("1")
                    except OSError:
                        pass
        while self.pids() and time.monotonic() < deadline:
            for pid in self.pids():
                try:  # noqa: SIM105
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.005)
        for path in [c for p in self.paths for c in self.children(p)] + self.paths:
            while True:
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.005)
        self.paths = [p for p in self.paths if os.path.isdir(p)]


def sweep_stale() -> None:
    """Remove empty cgroups left by sandbox owners that died without cleaning up."""
    for path in live_cgroups():
        name = os.path.basename(path).removeprefix(f"{PARENT}.")
        try:
            owner = int(name[1:].split("-", 1)[0])
        except ValueError:
            continue
        if os.path.exists(f"/proc/{owner}"):
            continue
        for child in WorkerCgroup.children(path):
            try:  # noqa: SIM105
                os.rmdir(child)
            except OSError:
                pass
        try:  # noqa: SIM105
            os.rmdir(path)  # fails (EBUSY) if anything still runs inside: left alone
        except OSError:
            pass


def live_cgroups(owner_pid: int | None = None) -> list[str]:
    """Sandbox cgroup directories that exist now (for leak checks), optionally only those of
    the workers started by process ``owner_pid``."""
    out = []
    prefix = f"w{owner_pid}-" if owner_pid is not None else ""
    for controller in CONTROLLERS:
        parent = os.path.dirname(worker_dir(controller, "x"))
        start = f"{PARENT}.{prefix}" if controller == "cpu" else prefix
        if os.path.isdir(parent):
            out += [
                os.path.join(parent, d)
                for d in os.listdir(parent)
                if d.startswith(start) and os.path.isdir(os.path.join(parent, d))
            ]
    return sorted(out)
