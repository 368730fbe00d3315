"""Host side of one jailed worker: start it under bubblewrap + cgroups, talk to it, kill it.

A :class:`JailedWorker` owns one process tree: ``bwrap`` -> the jail's init -> the zygote
(``_jail.py``) -> the executions it forks. All of it sits in the worker's memory and pids
cgroups, so destroying the cgroups removes every process the worker ever made.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from typing import Any

from agentgym.simulators.sandbox.cgroups import WorkerCgroup
from agentgym.simulators.sandbox.layers import CGROUP_ROOT

from agentgym.error import AgentGymError
from agentgym.processes import pid_alive

_HDR = struct.Struct(">I")
_JAIL_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_jail.py")
_IN_JAIL_SCRIPT = "/opt/agentgym/jail.py"
_slot_counter = itertools.count()

#: uids handed to jailed code start here; each worker leases a block of ``UIDS_PER_WORKER``.
UID_FIRST = 1_000_000
UIDS_PER_WORKER = 1024
"""One uid for one-shot runs plus one per concurrent session (1023 sessions per worker)."""
_UID_BLOCKS = 4096
WORKER_NICE = -15
"""The worker process's priority (its runs and sessions run at 0)."""
GUARD_NICE = -5
"""The syscall guard's priority: every lock call of the worker's sessions waits for it, so
it should not queue behind busy cells, but a session flooding it with lock calls must not
get more than a few sessions' worth of CPU through it (weight of nice -5: about 3 nice-0
processes)."""
_LEASE_DIR = "/run/agentgym-sandbox-uids" if os.path.isdir("/run") else "/tmp/agentgym-sandbox-uids"


class WorkerCrashedError(AgentGymError, RuntimeError):
    """The worker process died or stopped answering; the pool restarts it."""


@dataclass(frozen=True)
class Limits:
    """Per-execution limits (each can be overridden per call)."""

    timeout: float = 10.0
    """Wall-clock seconds before the run is killed."""
    cpu_seconds: int = 10
    memory: int = 512 << 20
    """Extra address space a run may map on top of the warm interpreter (bytes)."""
    file_size: int = 16 << 20
    open_files: int = 256
    processes: int = 64
    """Processes + threads of the run's uid (RLIMIT_NPROC)."""
    output: int = 64 << 10
    """Bytes of stdout and of stderr kept; the rest is dropped and reported."""
    disk: int = 256 << 20
    """Bytes of files a session (all its forks together) or a run may keep in its work dir.
    Files live on a tmpfs, so they are charged with the memory to the session's own memory
    cgroup, whose limit is ``memory + disk``."""


@dataclass(frozen=True)
class SandboxConfig:
    """How workers are built."""

    limits: Limits = field(default_factory=Limits)
    worker_memory: int | None = None
    """cgroup memory limit of a whole worker (zygote + runs + sessions); None: 60% of the
    host's memory shared among the pool's workers (at least 1 GiB each). A worker starts no
    new run or session while it is near this limit: memory, not the number of workers,
    bounds how many run at once."""
    worker_pids: int = 8192
    """cgroup limit on the processes and threads of a whole worker (a session's own limit is
    ``Limits.processes``); a worker starts nothing new while it is near it."""
    preload: tuple[str, ...] = ("numpy", "sympy")
    allow_unisolated: bool = False
    """Run even when required layers are missing (weaker isolation; never the default)."""
    recycle_after: int = 5000
    """Restart a worker (without sessions) after this many runs."""
    recycle_rss: int = 1 << 30
    """... or when its resident memory grows past this many bytes."""
    zygote: bool = True
    """Fork sessions from a quiet copy of the warm worker, where the pages they share stay
    shared (an idle CodeMath session: about 3 MB, against about 4.8 MB when the busy worker
    forks them itself, which is what ``False`` does)."""


def _site_dirs(preload: tuple[str, ...]) -> list[str]:
    """Directories that must be on sys.path in the jail for the preloaded modules."""
    dirs: list[str] = []
    for mod in (*preload, "pyseccomp"):
        try:
            module = __import__(mod)
        except Exception:
            continue
        path = os.path.abspath(getattr(module, "__file__", "") or "")
        if not path:
            continue
        parent = os.path.dirname(path)
        if os.path.basename(path) == "__init__.py":
            parent = os.path.dirname(parent)
        if parent not in dirs:
            dirs.append(parent)
    return dirs


def _interpreter() -> str:
    ver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    cand = os.path.join(sys.base_prefix, "bin", ver)
    return cand if os.path.exists(cand) else os.path.realpath(sys.executable)


def _bwrap_command(site: list[str], root: bool) -> list[str]:
    # No --die-with-parent: its parent-death signal fires when the *thread* that started the
    # worker exits. The worker exits on its own when our end of its stdin pipe closes.
    cmd = [shutil.which("bwrap") or "bwrap", "--new-session", "--clearenv"]
    cmd += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
    cmd += ["--unshare-cgroup-try"]
    if root:
        # SYS_ADMIN (remount /proc with hidepid) and SYS_PTRACE (the syscall guard reads the
        # fds of the process it decides for) are dropped by the worker once it has set up
        cmd += ["--cap-drop", "ALL"]
        for cap in ("SETUID", "SETGID", "CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL", "SYS_ADMIN",
                    "SYS_PTRACE"):  # fmt: skip
            cmd += ["--cap-add", f"CAP_{cap}"]
    else:
        cmd += ["--unshare-user"]
    cmd += ["--setenv", "PATH", "/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8"]
    cmd += ["--ro-bind", "/usr", "/usr"]
    cmd += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]  # before binds under /tmp
    # /proc/locks lists every lock of the jail (inode, pid): hidden. /dev/pts: opening
    # /dev/ptmx (even read-only) adds an entry every session could list; no pty is usable
    # anyway (Landlock refuses the ioctls), so the whole devpts instance is hidden.
    cmd += ["--ro-bind", "/dev/null", "/proc/locks", "--tmpfs", "/dev/pts"]
    for link in ("lib", "lib64", "bin", "sbin"):
        if os.path.islink(f"/{link}"):
            cmd += ["--symlink", os.readlink(f"/{link}"), f"/{link}"]
        elif os.path.isdir(f"/{link}"):
            cmd += ["--ro-bind", f"/{link}", f"/{link}"]
    if os.path.exists("/etc/ld.so.cache"):
        cmd += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    mounted = ["/usr"]
    made: set[str] = set()
    for path in [sys.base_prefix, *site]:
        if any(path == m or path.startswith(m + "/") for m in mounted):
            continue
        # parents get mode 0755 inside the jail (on the host /root stays 0700)
        parts = path.strip("/").split("/")[:-1]
        for i in range(1, len(parts) + 1):
            parent = "/" + "/".join(parts[:i])
            if parent not in made:
                cmd += ["--perms", "0755", "--dir", parent]
                made.add(parent)
        cmd += ["--ro-bind", path, path]
        mounted.append(path)
    for path in site:  # an installed agentgym holds task data and hidden tests: hide it
        if os.path.isdir(os.path.join(path, "agentgym")):
            cmd += ["--tmpfs", os.path.join(path, "agentgym")]
    cmd += ["--ro-bind", _JAIL_SCRIPT, _IN_JAIL_SCRIPT]
    cmd += ["--chdir", "/tmp"]
    cmd += ["--remount-ro", "/"]
    return cmd


def lease_uid_block() -> tuple[int, str]:
    """Lease a uid block no other live worker on this host holds (any pool, any process).

    A lease is a file ``<lease dir>/<block>`` created with ``O_EXCL`` that names its owner's
    pid; a lease whose owner is dead is taken over. Returns (first uid, lease path).
    """
    import fcntl

    os.makedirs(_LEASE_DIR, mode=0o700, exist_ok=True)
    with open(os.path.join(_LEASE_DIR, ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for block in range(_UID_BLOCKS):
            path = os.path.join(_LEASE_DIR, str(block))
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                try:
                    with open(path) as fh:
                        owner = int(fh.read().strip() or 0)
                except (OSError, ValueError):
                    owner = 0
                if owner and pid_alive(owner):
                    continue
                fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
            with os.fdopen(fd, "w") as fh:
                fh.write(str(os.getpid()))
            return UID_FIRST + block * UIDS_PER_WORKER, path
    raise AgentGymError(
        f"all {_UID_BLOCKS} sandbox uid blocks of this host are leased by live workers "
        f"(see {_LEASE_DIR}); close some SandboxPools"
    )


def host_memory() -> int:
    """Bytes of physical memory on this host."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):  # pragma: no cover - every Linux has both
        return 8 << 30


class JailedWorker:
    """One jailed worker process and the pipe pair to it.

    Requests are tagged with an id and may be in flight together: the worker runs them
    concurrently and a reader thread hands each reply to the caller waiting for it. ``lock``
    guards only the worker's life cycle (start, restart, recycle), never a request.
    """

    def __init__(
        self, config: SandboxConfig, layers: dict[str, bool], *, memory: int | None = None
    ):
        self.config = config
        self.layers = dict(layers)
        self.memory = memory or config.worker_memory or (2 << 30)
        self.lock = threading.RLock()
        self.slot = next(_slot_counter)
        self.name = f"w{os.getpid()}-{self.slot}"
        self.uid_base, self._lease = lease_uid_block()
        self.n_uids = UIDS_PER_WORKER
        self.generation = 0
        self.runs = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.cgroup: WorkerCgroup | None = None
        self.pending_closes: list[str] = []
        self._host_tmp: str | None = None
        self._chan: _Channel | None = None
        self.ready: dict[str, Any] = {}

    # ---- life cycle ---------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def in_flight(self) -> int:
        """Requests sent and not yet answered."""
        chan = self._chan
        return len(chan.pending) if chan is not None else 0

    def start(self) -> None:
        """Start (or restart) the worker and wait until its zygote is warm."""
        self.stop()
        self.generation += 1
        self.runs = 0
        self.pending_closes.clear()
        root = os.geteuid() == 0
        use_uid = self.layers.get("uid", False) and root
        site = _site_dirs(self.config.preload)
        import ctypes.util

        cfg: dict[str, Any] = {
            "uid_base": self.uid_base,
            "n_uids": self.n_uids,
            "layers": {
                "uid": use_uid,
                "seccomp": self.layers.get("seccomp", False),
                "landlock": self.layers.get("landlock", False),
                "jailed": bool(self.layers.get("namespaces")),
                "freezer": bool(self.layers.get("cgroup_freezer")),
            },
            "limits": asdict(self.config.limits),
            "site": site,
            "preload": list(self.config.preload),
            "libseccomp": ctypes.util.find_library("seccomp"),
            "cpus": os.cpu_count() or 1,
            "zygote": self.config.zygote,
        }
        cfg["cgroups"] = {}
        mem = self.memory if self.layers.get("cgroup_memory") else None
        pids = self.config.worker_pids if self.layers.get("cgroup_pids") else None
        self.cgroup = WorkerCgroup(
            f"{self.name}-g{self.generation}",
            memory=mem,
            pids=pids,
            cpu=bool(self.layers.get("cgroup_cpu")),
            freezer=bool(self.layers.get("cgroup_freezer")),
        )
        if not self.layers.get("namespaces"):
            # no jail: give the work dirs a private host directory, removed on stop()
            self._host_tmp = tempfile.mkdtemp(prefix=f"agentgym-sbx-{os.getpid()}-")
            os.chmod(self._host_tmp, 0o711)
            cfg["work_root"] = self._host_tmp
        cg_paths = {p.split("/")[len(CGROUP_ROOT.split("/"))]: p for p in self.cgroup.paths}
        if self.layers.get("namespaces"):
            cmd = _bwrap_command(site, root)
            # the worker's own cgroups, writable inside the jail: it makes one per session
            for controller, path in cg_paths.items():
                inside = f"/sys/fs/cgroup/{controller}"
                cmd[-4:-4] = ["--bind", path, inside]  # before --chdir
                cg_paths[controller] = inside
            script = _IN_JAIL_SCRIPT
        else:
            cmd, script = [], _JAIL_SCRIPT
        cfg["cgroups"] = cg_paths
        cmd += [_interpreter(), "-I", "-S", script, json.dumps(cfg)]
        cgroup = self.cgroup
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            preexec_fn=cgroup.enter if cgroup.paths else None,
            close_fds=True,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        )
        try:
            ready = _read_frame(self.proc.stdout.fileno(), time.monotonic() + 60.0)  # type: ignore[union-attr]
        except WorkerCrashedError:
            self.stop()
            raise
        if ready.get("status") != "ready":
            self.stop()
            raise WorkerCrashedError(f"sandbox worker failed to start: {ready}")
        self.landlock_abi = int(ready.get("landlock_abi", -1))
        self.ready = ready
        """What the worker reported once warm (its layers: hidepid, syscall guard, ...)."""
        self._chan = _Channel(self.proc, f"sandbox-{self.name}-g{self.generation}")
        self._raise_priority()

    def _raise_priority(self) -> None:
        """Give the worker's own process (not its runs) nice -15.

        The worker serves every session of its slot from one event loop, and each session
        has its own cpu group of equal weight: at an ordinary priority, twenty spinning cells
        would leave the loop one twenty-first of the CPU and every other session's cell would
        wait on it. Its runs and sessions set themselves back to nice 0.
        """
        if os.geteuid() != 0 or self.cgroup is None or self.proc is None:
            return
        for pid in self.cgroup.pids():
            if pid == self.proc.pid:  # bubblewrap's own process only waits
                continue
            try:  # its helpers: the file remover keeps its low priority; the syscall guard
                with open(f"/proc/{pid}/comm") as fh:  # gets a few sessions' weight
                    name = fh.read().strip()
                if name != "sbx-remover":
                    nice = GUARD_NICE if name == "sbx-guard" else WORKER_NICE
                    os.setpriority(os.PRIO_PROCESS, pid, nice)
            except OSError:
                pass

    def release(self) -> None:
        """Give the uid block back (after ``stop``; the pool calls it when it closes)."""
        lease, self._lease = self._lease, ""
        if lease:
            try:  # noqa: SIM105
                os.unlink(lease)
            except OSError:
                pass

    def stop(self) -> None:
        """Stop the worker and remove every process and cgroup it had."""
        chan, self._chan = self._chan, None
        proc, self.proc = self.proc, None
        if chan is not None:
            chan.close_input()
        if proc is not None:
            try:
                proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.cgroup is not None:
            self.cgroup.destroy()
            self.cgroup = None
        if chan is not None:
            chan.finish()
        if proc is not None and proc.stdout is not None:
            try:  # noqa: SIM105
                proc.stdout.close()
            except OSError:
                pass
        if self._host_tmp is not None:
            shutil.rmtree(self._host_tmp, ignore_errors=True)
            self._host_tmp = None

    # ---- requests -----------------------------------------------------------------------

    def submit(self, msg: dict[str, Any]) -> Future[dict[str, Any]]:
        """Send one request; a future of its reply (WorkerCrashedError if the worker dies).

        Raises:
            WorkerCrashedError: the worker is not running (the caller restarts it).
        """
        fut = self._channel().send(msg, self.pending_closes, waited=False)
        assert isinstance(fut, Future)
        return fut

    def request(self, msg: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request and wait for its reply.

        Raises:
            WorkerCrashedError: the worker died, or stopped answering: nothing at all came
                from it for ``timeout + 10`` seconds while this request waited (it is then
                stopped; the next call restarts it). A worker that keeps answering others is
                busy, not stuck: the request goes on waiting.
        """
        chan = self._channel()
        slot = chan.send(msg, self.pending_closes, waited=True)
        try:
            return chan.wait(slot, timeout + 10.0)
        except _NoAnswer:
            with self.lock:
                if self._chan is chan:
                    self.stop()
            raise WorkerCrashedError("sandbox worker did not answer in time") from None

    def _channel(self) -> _Channel:
        chan = self._chan
        if chan is None or chan.dead is not None:
            raise WorkerCrashedError("sandbox worker is not running")
        return chan

    def ensure_started(self) -> None:
        with self.lock:
            if not self.alive:
                self.start()

    def call(self, msg: dict[str, Any], timeout: float) -> dict[str, Any]:
        """``request``, restarting a dead worker first."""
        self.ensure_started()
        return self.request(msg, timeout)


class _NoAnswer(Exception):
    """A reply did not come by its deadline."""


class _Slot:
    """Where a reply that its caller waits for lands (lighter than a Future), with the bell
    that wakes that caller alone."""

    __slots__ = ("bell", "error", "reply")

    def __init__(self) -> None:
        self.reply: dict[str, Any] | None = None
        self.error: WorkerCrashedError | None = None
        self.bell: threading.Lock | None = None

    def done(self) -> bool:
        return self.reply is not None or self.error is not None

    def result(self) -> dict[str, Any]:
        if self.error is not None:
            raise self.error
        assert self.reply is not None
        return self.reply


class _Channel:
    """The request/reply pipes of one worker process (one generation).

    Replies carry their request's id and come in the order runs finish. A caller waiting for
    a reply reads the pipe itself when no one else is reading (a lone caller gets its reply
    without a thread hand-off), and hands out what it reads: each reply wakes its own caller
    only, and a reader that got its reply passes the reading on to one sleeping caller. A
    background thread reads only for futures that nobody waits on (``submit``).
    """

    def __init__(self, proc: subprocess.Popen[bytes], name: str):
        assert proc.stdin is not None and proc.stdout is not None
        self.stdin = proc.stdin
        self.fd = proc.stdout.fileno()
        self.pending: dict[int, Future[dict[str, Any]] | _Slot] = {}
        self.ids = itertools.count(1)
        self.send_lock = threading.Lock()
        self.lock = threading.Lock()
        """Guards ``reading``, ``sleeping`` and ``unwaited``."""
        self.reading = False
        self.sleeping: dict[_Slot, None] = {}
        """Callers blocked until their bell rings, oldest first."""
        self.unwaited = 0
        self.wake_background = threading.Event()
        self.heard = time.monotonic()
        """When the worker last sent a reply (to anyone)."""
        self.dead: WorkerCrashedError | None = None
        self.thread = threading.Thread(target=self._background, daemon=True, name=name)
        self.thread.start()

    def send(
        self, msg: dict[str, Any], closes: list[str], *, waited: bool
    ) -> Future[dict[str, Any]] | _Slot:
        """Write ``msg`` (after closes of collected sessions); where its reply will land: a
        slot the caller passes to ``wait``, or a future read by the background thread."""
        fut: Future[dict[str, Any]] | _Slot = _Slot() if waited else Future()
        with self.send_lock:
            if self.dead is not None:
                raise WorkerCrashedError(str(self.dead))
            frames = []
            while closes:  # sessions whose handles were collected (never waited for)
                frames.append({"op": "session_close", "sid": closes.pop(), "id": next(self.ids)})
            rid = next(self.ids)
            self.pending[rid] = fut
            if isinstance(fut, Future):
                with self.lock:
                    self.unwaited += 1
                    if not self.reading:
                        self.wake_background.set()
                fut.add_done_callback(self._unwaited_done)
            frames.append({**msg, "id": rid})
            try:
                self.stdin.write(b"".join(_HDR.pack(len(d)) + d for d in map(_encode, frames)))
                self.stdin.flush()
            except (BrokenPipeError, OSError, ValueError) as exc:
                self.pending.pop(rid, None)
                self._settle(fut, error=WorkerCrashedError(f"sandbox worker is gone: {exc}"))
                raise WorkerCrashedError(f"sandbox worker is gone: {exc}") from exc
        return fut

    def _unwaited_done(self, _: Future[dict[str, Any]]) -> None:
        with self.lock:
            self.unwaited -= 1

    def _settle(
        self,
        fut: Future[dict[str, Any]] | _Slot,
        reply: dict[str, Any] | None = None,
        error: WorkerCrashedError | None = None,
    ) -> None:
        """Deliver a reply (or an error) and wake the one caller waiting for it."""
        if isinstance(fut, Future):
            if not fut.done():
                if error is not None:
                    fut.set_exception(error)
                else:
                    fut.set_result(reply or {})
            return
        if error is not None:
            fut.error = error
        else:
            fut.reply = reply
        self._ring(fut)

    def _ring(self, slot: _Slot) -> None:
        with self.lock:
            asleep = self.sleeping.pop(slot, False) is None
        if asleep:
            assert slot.bell is not None
            slot.bell.release()

    def wait(self, slot: _Slot, patience: float) -> dict[str, Any]:
        """The reply of ``slot``, reading the pipe when no other thread is reading it.

        Raises ``_NoAnswer`` once the worker has sent nothing at all for ``patience`` seconds
        (counted from this call at the earliest).
        """
        since = time.monotonic()
        while True:
            with self.lock:
                if slot.done():
                    return slot.result()
                read = not self.reading
                if read:
                    self.reading = True
                else:
                    if slot.bell is None:
                        slot.bell = threading.Lock()
                        slot.bell.acquire()
                    self.sleeping[slot] = None
            if read:
                try:
                    self._read_until(slot.done, patience, since)
                finally:
                    self._stop_reading()
                continue
            assert slot.bell is not None
            left = max(self.heard, since) + patience - time.monotonic()
            rung = left > 0 and slot.bell.acquire(timeout=left)
            if not rung:
                with self.lock:
                    self.sleeping.pop(slot, None)
                if not slot.done() and time.monotonic() >= max(self.heard, since) + patience:
                    raise _NoAnswer

    def _stop_reading(self) -> None:
        """Give up the pipe: to the oldest sleeping caller, else to the background thread."""
        with self.lock:
            self.reading = False
            nxt = next(iter(self.sleeping), None)
            if nxt is not None:
                del self.sleeping[nxt]
            elif self.unwaited > 0:
                self.wake_background.set()
        if nxt is not None:
            assert nxt.bell is not None
            nxt.bell.release()

    def _read_until(self, done: Any, patience: float | None, since: float = 0.0) -> None:
        """Read and hand out replies until ``done()``; on a dead pipe fail every future."""
        while not done():
            deadline = None
            if patience is not None:
                deadline = max(self.heard, since) + patience
            try:
                reply = _read_frame(self.fd, deadline)
            except WorkerCrashedError as exc:
                if "in time" in str(exc):
                    raise _NoAnswer from None
                self._fail(exc)
                return
            except (OSError, ValueError) as exc:
                self._fail(WorkerCrashedError(f"sandbox worker exited: {exc}"))
                return
            self.heard = time.monotonic()
            fut = self.pending.pop(reply.pop("id", None), None)
            if fut is not None:
                self._settle(fut, reply)

    def _fail(self, exc: WorkerCrashedError) -> None:
        with self.send_lock:
            self.dead = exc
            owed = list(self.pending.values())
            self.pending.clear()
        for fut in owed:
            self._settle(fut, error=exc)
        with self.lock:
            asleep = list(self.sleeping)
            self.sleeping.clear()
        for slot in asleep:  # callers still waiting for the pipe: they see the error
            assert slot.bell is not None
            slot.bell.release()
        self.wake_background.set()

    def _background(self) -> None:
        """Read for futures nobody waits on, whenever no waiting caller is reading."""
        while self.dead is None:
            self.wake_background.wait()
            self.wake_background.clear()
            with self.lock:
                if self.dead is not None or self.reading or self.unwaited <= 0:
                    continue
                self.reading = True
            try:
                self._read_until(lambda: self.unwaited <= 0 or self.dead is not None, None)
            finally:
                self._stop_reading()

    def close_input(self) -> None:
        """Close our end of the request pipe: the worker exits when it sees that."""
        with self.send_lock, contextlib.suppress(OSError):
            self.stdin.close()

    def finish(self) -> None:
        """After the process is gone: fail what it still owed and end the background thread."""
        if self.dead is None:
            self._fail(WorkerCrashedError("sandbox worker stopped"))
        if self.thread is not threading.current_thread():
            self.thread.join(timeout=10.0)


def _encode(frame: dict[str, Any]) -> bytes:
    return json.dumps(frame).encode()


def _read_frame(fd: int, deadline: float | None) -> dict[str, Any]:
    """One length-prefixed JSON frame from ``fd`` (blocking; ``deadline`` bounds the wait)."""

    def exact(n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    raise WorkerCrashedError("sandbox worker did not answer in time")
            chunk = os.read(fd, n - len(buf))
            if not chunk:
                raise WorkerCrashedError("sandbox worker exited")
            buf += chunk
        return bytes(buf)

    (n,) = _HDR.unpack(exact(4))
    result: dict[str, Any] = json.loads(exact(n))
    return result
