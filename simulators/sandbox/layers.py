"""Which isolation layers this host can give the sandbox, found by trying them.

Each layer is probed for real (a throwaway bubblewrap jail, a Landlock ABI query, a cgroup
directory created and removed) instead of guessed from versions. The result drives what a
worker applies and what ``agentgym doctor`` prints. :func:`check_isolation` refuses to go on
when a layer the sandbox depends on is missing, unless the caller explicitly allowed an
unisolated run.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import shutil
import subprocess
from dataclasses import dataclass

from agentgym.error import AgentGymError

CGROUP_ROOT = "/sys/fs/cgroup"

#: Layers, in the order doctor prints them, with what each one stops.
LAYER_DOCS: dict[str, str] = {
    "namespaces": "bubblewrap jail: new mount/pid/net/ipc/uts namespaces, pivot_root to a "
    "read-only root (no host files, no network, no other processes)",
    "uid": "a non-root uid per worker slot (kill -1, /proc and files of other slots fail)",
    "cgroup_memory": "cgroup v1 memory limit per worker (memory bombs)",
    "cgroup_pids": "cgroup v1 pids limit per worker (fork and thread bombs)",
    "cgroup_cpu": "cgroup v1 cpu weight per session (a spinning cell gets only its fair share)",
    "cgroup_freezer": "cgroup v2 freezer per session (no agent code runs between cells, whatever "
    "signals it sends) and cgroup.kill (nothing of a closed session survives)",
    "seccomp": "seccomp deny-list: no sockets but socketpair, no ptrace/mount/unshare/bpf/...",
    "landlock": "Landlock: writes only in the run's work dir, no signals outside the run",
    "rlimits": "rlimits: address space, CPU time, file size, open files, processes, no core",
}

#: Without these the sandbox is not a sandbox; it refuses to start unless told otherwise.
REQUIRED = ("namespaces", "seccomp", "rlimits")


class SandboxUnavailableError(AgentGymError, RuntimeError):
    """The host cannot isolate code well enough and the caller did not allow running without."""


@dataclass(frozen=True)
class Layer:
    """One isolation layer: whether it works here and why (not)."""

    name: str
    active: bool
    detail: str


def _bwrap_works(bwrap: str) -> tuple[bool, str]:
    cmd = [bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/"]
    if os.geteuid() != 0:
        cmd.append("--unshare-user")
    try:
        proc = subprocess.run(cmd + ["true"], capture_output=True, timeout=10)  # noqa: RUF005
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{bwrap} failed to start: {exc}"
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip()
        return False, f"{bwrap} cannot create namespaces here: {err}"
    return True, f"{bwrap} (new mount/pid/net/ipc/uts namespaces, pivot_root)"


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or -1 when Landlock is off."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    try:
        return int(libc.syscall(444, None, ctypes.c_size_t(0), 1))
    except Exception:
        return -1


def _freezer_works() -> tuple[bool, str]:
    """The cgroup v2 core (``cgroup.freeze``, ``cgroup.kill``), mounted at ``unified`` in a
    hybrid layout; it needs no controller, so it works next to the v1 hierarchies."""
    base = os.path.join(CGROUP_ROOT, "unified")
    if not os.path.isfile(os.path.join(base, "cgroup.procs")):
        return False, f"no cgroup v2 hierarchy at {base}"
    probe = os.path.join(base, f"agentgym-probe-{os.getpid()}")
    try:
        os.mkdir(probe)
        try:
            found = {"cgroup.freeze", "cgroup.kill"} <= set(os.listdir(probe))
        finally:
            os.rmdir(probe)
    except OSError as exc:
        return False, f"cannot create a cgroup under {base}: {exc.strerror}"
    if not found:
        return False, f"{base} has no cgroup.freeze or cgroup.kill (Linux 5.14 or newer)"
    return True, f"{base} (cgroup.freeze, cgroup.kill)"


def _cgroup_works(controller: str) -> tuple[bool, str]:
    base = os.path.join(CGROUP_ROOT, controller)
    if not os.path.isfile(os.path.join(base, "cgroup.procs")):
        return False, f"no cgroup v1 {controller} hierarchy at {base}"
    probe = os.path.join(base, f"agentgym-probe-{os.getpid()}")
    try:
        os.mkdir(probe)
        os.rmdir(probe)
    except OSError as exc:
        return False, f"cannot create a cgroup under {base}: {exc.strerror}"
    return True, f"{base}"


@functools.lru_cache(maxsize=1)
def detect_layers() -> dict[str, Layer]:
    """Probe every layer once per process (results are cached)."""
    layers: dict[str, Layer] = {}
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        layers["namespaces"] = Layer(
            "namespaces", False, "bubblewrap is not installed (apt-get install bubblewrap)"
        )
    else:
        ok, detail = _bwrap_works(bwrap)
        layers["namespaces"] = Layer("namespaces", ok, detail)
    root = os.geteuid() == 0
    layers["uid"] = Layer(
        "uid",
        root,
        "running as root: each worker slot gets its own uid"
        if root
        else "not root: cannot switch uids (user namespace + Landlock + seccomp instead)",
    )
    for ctl in ("memory", "pids", "cpu"):
        if root:
            ok, detail = _cgroup_works(ctl)
        else:
            ok, detail = False, "not root: cannot create cgroups"
        layers[f"cgroup_{ctl}"] = Layer(f"cgroup_{ctl}", ok, detail)
    ok, detail = _freezer_works() if root else (False, "not root: cannot create cgroups")
    layers["cgroup_freezer"] = Layer("cgroup_freezer", ok, detail)
    lib = ctypes.util.find_library("seccomp")
    try:
        import pyseccomp  # noqa: F401

        layers["seccomp"] = Layer("seccomp", lib is not None, f"pyseccomp over {lib}")
    except Exception as exc:
        layers["seccomp"] = Layer(
            "seccomp", False, f"pyseccomp unusable ({exc}); pip install pyseccomp"
        )
    abi = landlock_abi()
    layers["landlock"] = Layer(
        "landlock",
        abi >= 1,
        f"Landlock ABI {abi}" if abi >= 1 else "Landlock is disabled in this kernel",
    )
    layers["rlimits"] = Layer("rlimits", True, "setrlimit in every run")
    return layers


def active_layers() -> list[str]:
    """Names of the layers that work here."""
    return [name for name, layer in detect_layers().items() if layer.active]


def check_isolation(allow_unisolated: bool) -> dict[str, bool]:
    """The layer switches a worker should use; raise if a required one is missing.

    Raises:
        SandboxUnavailableError: when a required layer is missing and ``allow_unisolated``
            is false.
    """
    layers = detect_layers()
    missing = [name for name in REQUIRED if not layers[name].active]
    if missing and not allow_unisolated:
        reasons = "; ".join(f"{n}: {layers[n].detail}" for n in missing)
        raise SandboxUnavailableError(
            f"The sandbox cannot isolate code on this host (missing {', '.join(missing)}: "
            f"{reasons}). Install what is missing (see `agentgym doctor`), or pass "
            "allow_unisolated=True to run untrusted code with weaker isolation at your own risk."
        )
    return {name: layer.active for name, layer in layers.items()}
