"""The worker that runs *inside* the jail (stdlib only; never imports agentgym).

The host starts this file once per worker slot, under bubblewrap (new mount, pid, net, ipc
and uts namespaces; a read-only root holding only /usr, the Python prefix and this file; a
private tmpfs /tmp) and inside a memory + pids cgroup. It then:

1. imports and warms the preloaded modules (numpy, sympy), freezes the GC and installs the
   seccomp deny-list (inherited by every child), so each execution is a cheap ``fork()`` of
   this warm "zygote";
2. remounts /proc with ``hidepid=2`` (a sandbox uid sees its own processes only), starts
   two helper processes, the syscall guard (:func:`guard_main`: lock calls and reads of
   other processes' attributes) and the file remover (:class:`Remover`), and drops the
   capabilities it needed for that;
3. serves requests from the host over length-prefixed JSON frames on the pipes it was
   started with, many at once (an event loop).

Every execution runs in a forked child that moves into cgroups of its own (memory + files,
processes, CPU, and a cgroup v2 group to kill it by at once; a session's also freezes it),
drops to its own uid, gets rlimits, a private work directory, an empty environment, Landlock
(writes only in its work dir, no signals or abstract sockets outside its domain) and then
runs the untrusted code. The worker learns what happened only from things the code cannot
forge: the exit status (``waitpid``), the clock, and the bytes on the output pipes. Grading
results travel on a dedicated pipe and are compared with the expected values by the host,
never inside the jail.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import errno
import fcntl
import gc
import hashlib  # here, not in _digest: imported once, shared by every session
import heapq
import io
import json
import os
import resource
import select
import selectors
import shutil
import signal
import socket
import struct
import sys
import time
import traceback
from _signal import SIG_DFL as _SIG_DFL
from _signal import signal as _set_signal
from typing import Any

# --------------------------------------------------------------------------------------------
# framing (host <-> worker, worker <-> session): 4-byte big-endian length + UTF-8 JSON

_HDR = struct.Struct(">I")
MAX_FRAME = 64 << 20
_MAX_REPLY = 1 << 20
"""Largest control reply a session may send (its replies are a few bytes)."""
_PENDING = object()
_MARK = b"\x00AGR"
"""Replies on a session's control socket are ``_MARK + nonce + frame``: the worker finds the
reply to its request behind any junk the session's code wrote on the socket (no stall)."""


def read_exact(fd: int, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


def read_frame(fd: int) -> dict:
    (n,) = _HDR.unpack(read_exact(fd, 4))
    if n > MAX_FRAME:
        raise ValueError("frame too large")
    return json.loads(read_exact(fd, n))


def frame(obj: Any) -> bytes:
    """``obj`` as one frame: its JSON's length, then the JSON."""
    data = json.dumps(obj).encode()
    return _HDR.pack(len(data)) + data


# --------------------------------------------------------------------------------------------
# Landlock (raw syscalls; x86_64 and aarch64 share the numbers)

_SYS_LL_CREATE, _SYS_LL_ADD, _SYS_LL_RESTRICT = 444, 445, 446
_PR_SET_NO_NEW_PRIVS = 38
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_raw_fork = ctypes.PyDLL(None).fork
"""libc's fork(), called with the GIL held and without Python's at-fork hooks (see
:func:`_zygote_fork`)."""


#: What a confined child sets back to the default action (the worker handles or ignores
#: them), as plain ints for ``_signal.signal``: ``signal.signal`` wraps each call's old
#: handler in an enum lookup that fails on a function (an exception per call), and a
#: zygote's session pays for every page that touches.
_DEFAULT_SIGNALS = tuple(
    int(s) for s in (signal.SIGPIPE, signal.SIGTERM, signal.SIGINT, signal.SIGCHLD)
)


def landlock_abi() -> int:
    try:
        return int(_libc.syscall(_SYS_LL_CREATE, None, 0, 1))
    except Exception:
        return -1


def landlock_restrict(write_dirs: list[str], abi: int) -> None:
    """Allow reading/executing everywhere, writing only under ``write_dirs``."""
    read = (1 << 0) | (1 << 2) | (1 << 3)  # EXECUTE, READ_FILE, READ_DIR
    handled = (1 << 13) - 1
    if abi >= 2:
        handled |= 1 << 13  # REFER
    if abi >= 3:
        handled |= 1 << 14  # TRUNCATE
    if abi >= 5:
        handled |= 1 << 15  # IOCTL_DEV
    net = 0b11 if abi >= 4 else 0  # BIND_TCP, CONNECT_TCP: none allowed
    scoped = 0b11 if abi >= 6 else 0  # abstract unix sockets, signals
    if abi >= 6:
        attr = struct.pack("=QQQ", handled, net, scoped)
    elif abi >= 4:
        attr = struct.pack("=QQ", handled, net)
    else:
        attr = struct.pack("=Q", handled)
    buf = ctypes.create_string_buffer(attr, len(attr))
    rfd = _libc.syscall(_SYS_LL_CREATE, buf, ctypes.c_size_t(len(attr)), 0)
    if rfd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        rules = [("/", read)] + [(d, handled) for d in write_dirs]
        rules.append(("/dev/null", (1 << 1) | (1 << 2) | (1 << 14 if abi >= 3 else 0)))
        for path, access in rules:
            pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                if os.path.isfile(path) or path.startswith("/dev/"):
                    access &= (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)
                rule = ctypes.create_string_buffer(struct.pack("=Qi", access & handled, pfd), 12)
                if _libc.syscall(_SYS_LL_ADD, rfd, 1, rule, 0) < 0:
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
            finally:
                os.close(pfd)
        if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "no_new_privs")
        if _libc.syscall(_SYS_LL_RESTRICT, rfd, 0) < 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(rfd)


# --------------------------------------------------------------------------------------------
# seccomp deny-list (installed once in the worker, inherited by every execution)

DENIED_SYSCALLS = (
    "socket", "ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2",
    "pivot_root", "chroot", "unshare", "setns", "bpf", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "keyctl", "add_key", "request_key", "perf_event_open", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon",
    "swapoff", "userfaultfd", "fsopen", "fsmount", "fsconfig", "move_mount", "open_tree",
    "fanotify_init", "name_to_handle_at", "open_by_handle_at", "acct", "quotactl",
    "syslog", "personality", "mknod", "mknodat", "settimeofday", "clock_settime",
    "sethostname", "setdomainname", "iopl", "ioperm", "lookup_dcookie", "vhangup",
    # System V and POSIX message-queue IPC: every run and session of a worker would share
    # the worker's IPC namespace, so an object one creates could be read by the next
    "shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl",
    "semget", "semop", "semtimedop", "semctl", "ipc", "mq_open", "mq_unlink",
    "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
    # inotify: a watch on a file of the shared read-only tree sees every other session
    # open and read it
    "inotify_init", "inotify_init1",
)  # fmt: skip
_CLONE_NS_FLAGS = 0x7E020000  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
_CLONE_NS_BITS = tuple(1 << bit for bit in range(32) if _CLONE_NS_FLAGS >> bit & 1)
_CLONE_FILES, _CLONE_THREAD = 0x400, 0x10000
#: fcntl commands that take or drop a lock (F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW)
LOCK_COMMANDS = (6, 7, 37, 38)
_LOCK_SH, _LOCK_EX = 1, 2
#: syscalls that read an attribute of the process (or group, or uid) named by an argument,
#: with the index of that argument: the kernel checks no uid for these reads, so one
#: session could read what another set (its nice value, scheduler, affinity, group).
#: (pidfd_open is not among them: the worker needs it, and what a pidfd of a stranger tells
#: - that the process exists, and when it exits - kill(pid, 0) tells as well.)
PID_SYSCALLS = {
    "getpriority": 1, "ioprio_get": 1, "sched_getparam": 0, "sched_getscheduler": 0,
    "sched_getattr": 0, "sched_getaffinity": 0, "sched_rr_get_interval": 0, "getpgid": 0,
    "getsid": 0,
}  # fmt: skip


def _seccomp_module(libseccomp: str | None):
    import ctypes.util

    real = ctypes.util.find_library
    known = {"c": "libc.so.6", "seccomp": libseccomp or "libseccomp.so.2"}
    ctypes.util.find_library = lambda name: known.get(name) or real(name)
    try:
        import pyseccomp as sc
    finally:
        ctypes.util.find_library = real
    return sc


def install_seccomp(libseccomp: str | None, *, guard: bool) -> int | None:
    """Load the deny-list; return the listener fd of the syscall guard when ``guard``.

    With the guard, lock calls (flock, fcntl locks) and reads of another process's
    attributes wait for :func:`guard_main` to decide (see there). Without it (the guard's
    own filter, or a libseccomp without notifications) lock calls succeed and lock nothing,
    and those reads are refused unless they name the caller itself (argument 0): either way no
    lock and no attribute carries anything from one session to another.
    """
    sc = _seccomp_module(libseccomp)
    guard = guard and _notifications(sc)
    f = sc.SyscallFilter(sc.ALLOW)
    for name in DENIED_SYSCALLS:
        try:  # noqa: SIM105
            f.add_rule(sc.ERRNO(errno.EPERM), name)
        except Exception:
            pass  # syscall unknown on this arch
    # clone3 hides its flags in a struct: make glibc fall back to clone, which we can inspect.
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    for flag in _CLONE_NS_BITS:
        f.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    # a shared fd table outside a thread group would let another process swap the fd the
    # guard has just checked
    both = _CLONE_FILES | _CLONE_THREAD
    f.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, both, _CLONE_FILES))
    lock = sc.NOTIFY if guard else sc.ERRNO(0)
    for bit in (_LOCK_SH, _LOCK_EX):
        f.add_rule(lock, "flock", sc.Arg(1, sc.MASKED_EQ, bit, bit))
    for cmd in LOCK_COMMANDS:
        f.add_rule(lock, "fcntl", sc.Arg(1, sc.EQ, cmd))
    other = sc.NOTIFY if guard else sc.ERRNO(errno.EPERM)
    for name, arg in PID_SYSCALLS.items():
        try:  # noqa: SIM105
            f.add_rule(other, name, sc.Arg(arg, sc.NE, 0))
        except Exception:
            pass
    f.load()  # also sets no_new_privs
    return int(sc._libseccomp.seccomp_notify_fd(f._filter)) if guard else None


def _notifications(sc) -> bool:
    """Whether this libseccomp can hand syscalls to a supervisor (API level 5 or newer)."""
    return hasattr(sc, "NOTIFY") and sc.get_api() >= 5


def syscall_numbers(libseccomp: str | None = None) -> dict[int, str]:
    """Numbers of the syscalls the guard decides on, on this machine's architecture."""
    sc = _seccomp_module(libseccomp)
    out = {}
    for name in ("flock", "fcntl", *PID_SYSCALLS):
        try:  # noqa: SIM105
            out[int(sc.resolve_syscall(sc.system_arch(), name))] = name
        except Exception:
            pass
    return out


# --------------------------------------------------------------------------------------------
# privileges the worker needs only while it sets up: /proc with hidepid, dropped capabilities

_CAP_SYS_PTRACE, _CAP_SYS_ADMIN = 19, 21
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REMOUNT = 2, 4, 8, 32


def hide_other_processes() -> bool:
    """Remount the jail's /proc with ``hidepid=2,gid=0``: a process of a sandbox uid sees
    only the processes of its own uid (its session and the session's forks), root (group 0:
    the worker) sees all. Returns whether it worked."""
    flags = _MS_REMOUNT | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    return _libc.mount(b"proc", b"/proc", b"proc", flags, b"hidepid=2,gid=0") == 0


def drop_capabilities(*caps: int) -> None:
    """Remove ``caps`` from this process's effective, permitted and inheritable sets."""
    header = ctypes.create_string_buffer(struct.pack("=Ii", 0x20080522, 0), 8)
    data = ctypes.create_string_buffer(24)
    if _libc.capget(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    words = list(struct.unpack("=6I", data.raw))  # (effective, permitted, inheritable) x 2
    for cap in caps:
        for k in range(3):
            words[3 * (cap // 32) + k] &= ~(1 << (cap % 32))
    data = ctypes.create_string_buffer(struct.pack("=6I", *words), 24)
    if _libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


# --------------------------------------------------------------------------------------------
# the syscall guard: decides lock calls and reads of other processes' attributes

_NOTIF = struct.Struct("=QIIiIQ6Q")  # struct seccomp_notif: id, pid, flags, seccomp_data
_RESP = struct.Struct("=QqiI")  # struct seccomp_notif_resp: id, val, error, flags
_NOTIF_RECV, _NOTIF_SEND = 0xC0502100, 0xC0182101
_CONTINUE = (0, 0, 1)
"""(val, error, flags) of a response that lets the syscall run as asked."""
_NOTHING = (0, 0, 0)
"""... that makes it succeed without doing anything (a lock that locks nothing)."""
_ABSENT = (0, -errno.ESRCH, 0)
"""... that makes it fail with "no such process"."""
_PRIO_USER, _IOPRIO_WHO_USER = 2, 3


def _proc_status(pid: int) -> dict[str, str]:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return dict(line.rstrip("\n").split(":\t", 1) for line in fh if ":\t" in line)
    except (OSError, ValueError):
        return {}


def _uid_of(pid: int) -> int | None:
    try:
        return int(_proc_status(pid)["Uid"].split()[1]) if pid > 0 else None
    except (KeyError, IndexError, ValueError):
        return None


_WORK_FS: dict[str, tuple[int, frozenset[int]]] = {}


def _work_fs(work_root: str) -> tuple[int, frozenset[int]]:
    """The device of the work dirs' file system, and the inodes on it that are not one
    session's: the work root, its parent and the trash (every other inode there lies in a
    session's own work dir, mode 0700: no other session can open it). Cached."""
    if work_root not in _WORK_FS:
        paths = (work_root, os.path.dirname(work_root), os.path.join(work_root, ".trash"))
        stats = [os.stat(p) for p in paths if os.path.exists(p)]
        _WORK_FS[work_root] = stats[0].st_dev, frozenset(st.st_ino for st in stats)
    return _WORK_FS[work_root]


def _single_threaded(tid: int) -> bool:
    """Whether the thread group of ``tid`` has one thread (its task directory links 2 + the
    number of threads); False once it is gone."""
    try:
        return os.stat(f"/proc/{tid}/task").st_nlink == 3
    except OSError:
        return False


def _signed(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def guard_decision(name: str, args: list[int], tid: int, work_root: str) -> tuple[int, int, int]:
    """What the syscall ``name(args)`` of thread ``tid`` gets: (value, -errno, flags).

    * A lock call really locks only a file in the caller's own work directory, and only when
      the caller is single-threaded (so no other thread can swap the fd between this check
      and the call). Any other lock call succeeds and locks nothing: a lock on a file of the
      shared tree, a device or /proc cannot carry anything from one session to another.
    * A read of another process's attributes is allowed for processes of the caller's own
      uid (its session and forks); any other process "does not exist" (ESRCH), as in /proc.
    """
    if name in ("flock", "fcntl"):  # the hot path (sqlite makes ~6 per transaction)
        single = _single_threaded(tid)
        try:
            st = os.stat(f"/proc/{tid}/fd/{_signed(args[0])}")
        except OSError:  # no such fd: the call fails on its own (EBADF)
            return _CONTINUE if single else _NOTHING
        dev, shared = _work_fs(work_root)
        own = st.st_dev == dev and st.st_ino not in shared
        return _CONTINUE if own and single else _NOTHING
    caller = _uid_of(tid)
    which, who = _signed(args[0]), _signed(args[PID_SYSCALLS[name]])
    if name in ("getpriority", "ioprio_get") and which == (
        _PRIO_USER if name == "getpriority" else _IOPRIO_WHO_USER
    ):
        ok = who == caller
    else:  # a process, or a process group by its leader
        ok = _uid_of(who) == caller
    return _CONTINUE if ok and caller is not None else _ABSENT


def guard_main(listener: int, work_root: str, numbers: dict[int, str]) -> None:
    """Answer the seccomp notifications of every process of the worker, one at a time.

    Runs in its own process (a fork of the worker, CAP_SYS_PTRACE kept to read the fds of
    the callers): a session that floods it with lock calls slows only lock calls.
    """
    import fcntl

    buf = bytearray(_NOTIF.size)
    while True:
        buf[:] = bytes(len(buf))
        try:
            fcntl.ioctl(listener, _NOTIF_RECV, buf, True)
        except InterruptedError:
            continue
        except OSError as exc:
            if exc.errno == errno.ENOENT:  # the caller died before we read it
                continue
            return
        nid, tid, _, nr, _, _, *args = _NOTIF.unpack(buf)
        try:
            val, err, flags = guard_decision(numbers.get(nr, ""), args, tid, work_root)
        except Exception:
            val, err, flags = 0, -errno.EPERM, 0
        # (no ID_VALID check: had the caller died and its pid been reused while we read
        # /proc, the answer would go to its notification id, which is gone: ENOENT)
        try:
            fcntl.ioctl(listener, _NOTIF_SEND, bytearray(_RESP.pack(nid, val, err, flags)), True)
        except OSError:
            continue


# --------------------------------------------------------------------------------------------
# the worker

PATH_ENV = "/usr/local/bin:/usr/bin:/bin"

_REAP_FIRST_S = 0.002
"""How soon a uid whose processes are still dying is looked at again; the interval doubles."""
_REAP_MAX_S = 0.1
"""The longest interval between two looks at a uid still being released."""


class _Timer:
    """A one-shot callback at a monotonic time; ``cancel`` makes it a no-op."""

    __slots__ = ("fn", "when")

    def __init__(self, when: float, fn):
        self.when = when
        self.fn = fn

    def cancel(self) -> None:
        self.fn = None

    def __lt__(self, other: _Timer) -> bool:
        return self.when < other.when


class Watch:
    """One running child, watched by the worker's event loop until it ends.

    It ends when the child exits, answers on its control socket (``read_ctl``), floods its
    output far past the cap, or reaches ``deadline``. Output pipes are drained as they fill
    (a chatty child never blocks on a full pipe); ``cap`` bytes of each are kept and the rest
    is counted. ``on_done(result)`` is called exactly once. ``outbox`` is a request still to be
    written on the control socket, sent as the socket takes it (never blocking the loop).
    """

    def __init__(
        self,
        worker: Worker,
        *,
        fds: dict[str, int],
        cap: int,
        deadline: float,
        on_done,
        pid_fd: int | None = None,
        result_fd: int | None = None,
        ctl: socket.socket | None = None,
        read_ctl=None,
        outbox: bytes = b"",
    ):
        self.worker = worker
        self.fds = fds
        self.cap = cap
        self.bufs = {name: bytearray() for name in fds}
        self.dropped = dict.fromkeys(fds, 0)
        self.result_fd = result_fd
        self.res = bytearray()
        self.ctl = ctl
        self.read_ctl = read_ctl
        self.outbox = memoryview(outbox)
        self.reply: Any = None
        self.on_done = on_done
        self.done = False
        self.open = set(fds)
        self.registered: list[int] = []
        self.writing = False
        self.timer = worker.at(deadline, lambda: self.finish("timeout"))
        for name, fd in fds.items():
            self._register(fd, name)
        if result_fd is not None:
            self._register(result_fd, "result")
        if pid_fd is not None:
            self._register(pid_fd, "exit")
        if ctl is not None:
            self._send()  # most requests fit in the socket at once: no write interest needed
            if not self.done:
                events = selectors.EVENT_READ | (selectors.EVENT_WRITE if self.outbox else 0)
                self.writing = bool(self.outbox)
                self._register(ctl.fileno(), "ctl", events)

    def _register(self, fd: int, name: str, events: int = selectors.EVENT_READ) -> None:
        self.worker.sel.register(fd, events, (self, name))
        self.registered.append(fd)

    def _send(self) -> None:
        assert self.ctl is not None
        try:
            while self.outbox:
                self.outbox = self.outbox[self.ctl.send(self.outbox) :]
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.finish(None)  # the session closed its end: it is gone
            return
        if self.writing and not self.done:
            self.writing = False
            self.worker.sel.modify(self.ctl.fileno(), selectors.EVENT_READ, (self, "ctl"))

    def on_event(self, name: str, mask: int) -> None:
        if self.done:
            return
        if name == "exit":
            self.finish(None)
        elif name == "ctl":
            if mask & selectors.EVENT_WRITE:
                self._send()
            if mask & selectors.EVENT_READ and not self.done:
                got = self.read_ctl()
                if got is not _PENDING:
                    self.reply = got  # None: a broken channel, the session is lost
                    self.finish(None)
        else:
            fd = self.result_fd if name == "result" else self.fds[name]
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                self.worker.sel.unregister(fd)
                self.registered.remove(fd)
                self.open.discard(name)
            elif name == "result":
                if len(self.res) < (16 << 20):
                    self.res += chunk
            else:
                self._keep(name, chunk)
                if self.dropped[name] > 16 * self.cap:
                    self.finish("output_limit")

    def _keep(self, name: str, chunk: bytes) -> None:
        room = self.cap - len(self.bufs[name])
        if room > 0:
            self.bufs[name] += chunk[:room]
        self.dropped[name] += max(0, len(chunk) - max(room, 0))

    def finish(self, status: str | None) -> None:
        """Stop watching; drain what the pipes already hold; report."""
        if self.done:
            return
        self.done = True
        self.timer.cancel()
        for fd in self.registered:
            self.worker.sel.unregister(fd)
        self.registered = []
        for name in self.open:  # the child flushed before it answered or exited
            try:
                while len(self.bufs[name]) < self.cap:
                    chunk = os.read(self.fds[name], 1 << 16)
                    if not chunk:
                        break
                    self._keep(name, chunk)
            except OSError:
                pass
        if self.result_fd is not None:
            try:
                while len(self.res) < (16 << 20):
                    chunk = os.read(self.result_fd, 1 << 16)
                    if not chunk:
                        break
                    self.res += chunk
            except OSError:
                pass
        out: dict[str, Any] = {"status": status, "reply": self.reply,
                               "result_bytes": bytes(self.res)}  # fmt: skip
        for name in self.fds:
            out[name] = bytes(self.bufs[name]).decode("utf-8", errors="replace")
            out[name + "_dropped"] = self.dropped[name]
        self.on_done(out)


class _OnExit:
    """Calls ``fn()`` from the worker's event loop once the process of ``pidfd`` has exited
    (a pidfd turns readable then), so that waiting for a process to die blocks nothing."""

    __slots__ = ("fn", "pidfd", "worker")

    def __init__(self, worker: Worker, pidfd: int, fn):
        self.worker = worker
        self.pidfd = pidfd
        self.fn = fn
        worker.sel.register(pidfd, selectors.EVENT_READ, (self, "exit"))

    def on_event(self, name: str, mask: int) -> None:
        self.worker.sel.unregister(self.pidfd)
        self.fn()


class Outbox:
    """The worker's answers to the host, written without ever blocking the event loop.

    When the host is slow to read (a burst of a thousand cells ends together), its pipe fills;
    a blocking write would stop the loop, and with it every session's cell and every request
    still waiting to be read, until the host caught up. What the pipe cannot take now waits
    here, in order, and goes out as the pipe drains.
    """

    __slots__ = ("fd", "pending", "worker")

    def __init__(self, worker: Worker, fd: int):
        self.worker = worker
        self.fd = fd
        self.pending: collections.deque[memoryview] = collections.deque()
        os.set_blocking(fd, False)

    def send(self, answer: dict) -> None:
        waiting = bool(self.pending)
        self.pending.append(memoryview(frame(answer)))
        if waiting:
            return  # behind what waits already: answers keep their order
        self._flush()
        if self.pending:
            self.worker.sel.register(self.fd, selectors.EVENT_WRITE, (self, "writable"))

    def on_event(self, name: str, mask: int) -> None:
        self._flush()
        if not self.pending:
            self.worker.sel.unregister(self.fd)

    def _flush(self) -> None:
        """Write what waits until the pipe is full, or the host is gone (nobody to tell)."""
        while self.pending:
            try:
                n = os.write(self.fd, self.pending[0])
            except BlockingIOError:
                return
            except OSError:  # the host is gone (its end is closed): the read side sees
                self.pending.clear()  # EOF next and shuts the worker down
                self.worker.stopping = True
                return
            if n < len(self.pending[0]):
                self.pending[0] = self.pending[0][n:]
            else:
                self.pending.popleft()

    def drain(self, patience: float) -> None:
        """At shutdown: give the host what is still owed, while it keeps reading (given up
        once its pipe has taken nothing for ``patience`` seconds)."""
        poll = select.poll()
        poll.register(self.fd, select.POLLOUT)
        while self.pending and poll.poll(patience * 1000):
            self._flush()


class Remover:
    """A helper process that removes directories off the worker's event loop.

    Removing a work dir of 250,000 files takes seconds; done on the loop, every other
    session's cell would wait for it. The worker renames a dir into its trash (instantly) and
    hands the path to this process, which deletes it and answers with the path; the worker
    frees what depended on it (a uid) only then. If the process dies, it is started again and
    given what was still pending.
    """

    def __init__(self, worker: Worker):
        self.worker = worker
        self.pending: dict[str, int] = {}
        """Paths sent and not yet reported removed (how many times), in order."""
        self.pid = -1
        self.to_fd = self.from_fd = -1
        self.outbox = bytearray()
        self.inbox = bytearray()
        self.writing = False
        self.start()

    def start(self) -> None:
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                for fd in _open_fds():
                    if fd not in (to_r, from_w, 2):
                        with contextlib.suppress(OSError):
                            os.close(fd)
                _die_with_parent()
                _libc.prctl(15, b"sbx-remover", 0, 0, 0)  # PR_SET_NAME
                with contextlib.suppress(OSError):
                    drop_capabilities(_CAP_SYS_ADMIN, _CAP_SYS_PTRACE)
                os.nice(10)  # its work is never urgent: cells first
                code = _remover_main(to_r, from_w)
            finally:
                os._exit(code)
        os.close(to_r)
        os.close(from_w)
        self.pid, self.to_fd, self.from_fd = pid, to_w, from_r
        self.worker.children.add(pid)
        os.set_blocking(to_w, False)
        os.set_blocking(from_r, False)
        self.worker.sel.register(from_r, selectors.EVENT_READ, (self, "done"))
        self.writing = False
        self.outbox = bytearray(b"".join((p.encode() + b"\n") * n for p, n in self.pending.items()))
        self._flush()

    def remove(self, path: str) -> None:
        """Queue ``path`` (a directory in the trash) for removal."""
        self.pending[path] = self.pending.get(path, 0) + 1
        self.outbox += path.encode() + b"\n"
        self._flush()

    def _flush(self) -> None:
        try:
            while self.outbox:
                del self.outbox[: os.write(self.to_fd, self.outbox)]
        except BlockingIOError:
            pass
        except OSError:
            return  # it died: its end of the reply pipe reports that
        if self.outbox and not self.writing:
            self.worker.sel.register(self.to_fd, selectors.EVENT_WRITE, (self, "send"))
            self.writing = True
        elif not self.outbox and self.writing:
            self.worker.sel.unregister(self.to_fd)
            self.writing = False

    def on_event(self, name: str, mask: int) -> None:
        if name == "send":
            self._flush()
            return
        self.poll()

    def poll(self) -> None:
        """Read what the process reports as removed (never blocks)."""
        try:
            chunk = os.read(self.from_fd, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:  # the process died: start another one with what is left
            self.stop()
            self.start()
            return
        self.inbox += chunk
        *lines, rest = self.inbox.split(b"\n")
        self.inbox = bytearray(rest)
        for line in lines:
            path = line.decode("utf-8", "replace")
            if self.pending.get(path, 0) > 1:
                self.pending[path] -= 1
            else:
                self.pending.pop(path, None)
        self.worker._reap_ready()

    def stop(self) -> None:
        for fd in (self.to_fd, self.from_fd):
            with contextlib.suppress(KeyError, ValueError):
                self.worker.sel.unregister(fd)
            with contextlib.suppress(OSError):
                os.close(fd)
        self.writing = False
        _kill(self.pid)
        self.worker._wait_children()

    def busy(self, paths: list[str]) -> bool:
        return any(p in self.pending for p in paths)


class Zygote:
    """A quiet copy of the warm worker whose only job is to fork new sessions.

    A session forked from the worker shares the worker's pages copy-on-write, but the worker
    goes on serving (frames, buffers, the books of every session), and each page it writes
    after a fork leaves the old copy to the child alone: every session came to hold its own
    copy of the worker's working set (about 2 MB each). The zygote is forked once the worker
    is warm and then only forks, so its pages stay as they were and the sessions share them.

    The worker sends it a session's uid, dirs, limits and cgroups with the session's control
    socket and output pipes; it forks a child that confines itself exactly as one forked by
    the worker would, and answers with the pid and a pidfd of it (taken before the zygote
    can reap it). The session is the zygote's child (the zygote reaps it); the worker holds
    it by that pidfd, as every session. If the zygote dies, the next session starts another
    one; after a few failures the worker forks sessions itself.
    """

    FAILURES = 3
    """Zygotes lost or unanswering after which the worker stops starting new ones."""
    IN_FLIGHT = 2
    """Requests sent and not yet answered, at most: the zygote forks one session while the
    worker makes the next one's cgroups. More buys nothing: opens are bound by the kernel's
    cgroup lock, which every new session takes to make its groups and enter them (500 opens
    at once on one worker: p99 2.0-3.3 s with 2-8 in flight against 2.0-3.0 s one at a time;
    with every open's cgroups made up front, 16 in flight, 2.7-2.8 s)."""
    ANSWER_WITHIN = 10.0
    """Seconds the oldest request may wait for its answer before the zygote counts as broken."""

    def __init__(self, worker: Worker):
        self.worker = worker
        self.pid = -1
        self.sock: socket.socket | None = None
        self.failures = 0
        self.queued: collections.deque = collections.deque()
        """(prepare, on_made) not yet sent."""
        self.pending: collections.deque = collections.deque()
        """(our control socket end, stdout, stderr, on_made, deadline) sent, in order."""
        self.timer: _Timer | None = None

    def start(self) -> None:
        """Fork the zygote from the worker as it is now (warm, its layers in place)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            try:
                keep = theirs.fileno()
                ours.detach()
                for fd in _open_fds():
                    if fd not in (keep, 2):
                        with contextlib.suppress(OSError):
                            os.close(fd)
                _die_with_parent()
                _libc.prctl(15, b"sbx-zygote", 0, 0, 0)  # PR_SET_NAME
                _huge_pages()
                _zygote_main(self.worker, theirs.detach())
            finally:
                os._exit(0)
        theirs.close()
        ours.setblocking(False)
        self.pid, self.sock = pid, ours
        self.worker.children.add(pid)
        self.worker.sel.register(ours.fileno(), selectors.EVENT_READ, (self, "answer"))

    def stop(self) -> None:
        if self.sock is not None:
            self.worker.sel.unregister(self.sock.fileno())
            self.sock.close()
            self.sock = None
        if self.pid > 0:
            _kill(self.pid)
            self.worker._wait_children()
        self.pid = -1

    def spawn(self, prepare, on_made) -> bool:
        """Ask for a session process (``prepare()``: its request, called when it is sent);
        ``on_made(made)`` gets it later, from the event loop:
        (pid, pidfd, stdout, stderr, control socket), the worker's ends, or None when the
        zygote could not make it (the caller forks it itself). False (and no call) when
        there is no working zygote. Several requests are in flight at once, answered in
        order: the worker never waits for a fork."""
        if self.sock is None:
            if self.failures >= self.FAILURES:
                return False
            self.start()
        self.queued.append((prepare, on_made))
        self._send()
        return True

    def _send(self) -> None:
        while self.queued and self.sock is not None and len(self.pending) < self.IN_FLIGHT:
            prepare, on_made = self.queued.popleft()
            try:
                request = prepare()
            except Exception:  # its dirs or cgroups could not be made: the caller answers
                on_made(None)
                continue
            ours, theirs = socket.socketpair()
            out_r, out_w = os.pipe()
            err_r, err_w = os.pipe()
            try:
                socket.send_fds(
                    self.sock, [json.dumps(request).encode()], [theirs.fileno(), out_w, err_w]
                )
                sent = True
            except OSError:  # (never full with IN_FLIGHT requests: the zygote is gone)
                sent = False
            finally:
                theirs.close()
                os.close(out_w)
                os.close(err_w)
            if not sent:
                ours.close()
                os.close(out_r)
                os.close(err_r)
                self.queued.appendleft((prepare, on_made))  # (prepared once: not again)
                self.fail()
                return
            deadline = time.monotonic() + self.ANSWER_WITHIN
            self.pending.append((ours, out_r, err_r, on_made, deadline))
            if self.timer is None:
                self.timer = self.worker.at(deadline, self._check)

    def _check(self) -> None:
        """The oldest request's time is up: unanswered, the zygote is broken."""
        self.timer = None
        if not self.pending:
            return
        if self.pending[0][4] <= time.monotonic():
            self.fail()
        else:
            self.timer = self.worker.at(self.pending[0][4], self._check)

    def on_event(self, name: str, mask: int) -> None:
        """The zygote answered the oldest request (or closed its end: it is gone)."""
        if self.sock is None:  # (given up earlier in the same turn of the loop)
            return
        try:
            msg, got, _, _ = socket.recv_fds(self.sock, 4096, 1)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            msg, got = b"", []
        try:
            pid = int(json.loads(msg)["pid"]) if msg and self.pending else 0
        except (ValueError, KeyError, TypeError):
            pid = 0
        if pid == 0:  # no answer: the zygote is gone or broken
            for fd in got:
                os.close(fd)
            self.fail()
            return
        ours, out_r, err_r, on_made, _ = self.pending.popleft()
        if pid < 0 or len(got) != 1:  # (-1: its fork failed, the worker's process limit, say)
            for fd in (*got, out_r, err_r):
                os.close(fd)
            ours.close()
            made = None
        else:
            for fd in (out_r, err_r):
                os.set_blocking(fd, False)
            made = (pid, got[0], out_r, err_r, ours)
        self._send()
        on_made(made)

    def fail(self) -> None:
        """The zygote is gone or broken: stop it; every request not answered gets None
        (their sessions are forked by the worker itself); the next request starts another."""
        self.failures += 1
        waiting = [p[3] for p in self.pending] + [q[1] for q in self.queued]
        for ours, out_r, err_r, _, _ in self.pending:
            ours.close()
            os.close(out_r)
            os.close(err_r)
        self.pending.clear()
        self.queued.clear()
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.stop()
        for on_made in waiting:
            on_made(None)


_MADV_COLLAPSE = 25
_HUGE = 2 << 20


def _huge_pages() -> None:
    """Back the zygote's private writable memory with 2 MB pages where the kernel can
    (``MADV_COLLAPSE``, Linux 6.1+; best effort).

    A fork copies one page-table entry per 4 kB page the parent holds, and the zygote forks
    every session: with its heap (the preloaded modules) in huge pages, a fork copies one
    entry per 2 MB instead. A session that writes to such a page gets its own 4 kB copy, as
    before (the kernel splits the huge mapping in the child). Only memory that exists now is
    collapsed (no ``MADV_HUGEPAGE``: later page faults stay 4 kB), and where the call is
    unknown (before Linux 6.1) nothing changes."""
    madvise = _libc.madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    try:
        with open("/proc/self/maps") as fh:
            maps = fh.read().splitlines()
    except OSError:
        return
    for line in maps:
        fields = line.split()
        if len(fields) < 5 or "w" not in fields[1] or "p" not in fields[1]:
            continue
        if len(fields) > 5 and fields[5] != "[heap]":
            continue  # a file or the stack: only anonymous memory
        start, end = (int(x, 16) for x in fields[0].split("-"))
        first, last = -(-start // _HUGE) * _HUGE, end // _HUGE * _HUGE
        for chunk in range(first, last, _HUGE):  # one at a time: a range stops at its first
            madvise(chunk, _HUGE, _MADV_COLLAPSE)  # failure


def _stdio() -> tuple[io.TextIOWrapper, io.TextIOWrapper, io.TextIOWrapper]:
    """A child's ``sys.stdin``, ``sys.stdout`` and ``sys.stderr``: text on fds 0, 1, 2
    (which must be open; the wrappers never close them). Output is line-buffered, as on a
    terminal: every line written before a cell hangs and is killed at its timeout reaches
    the caller (a block buffer died with the process, and the agent saw nothing)."""
    return (
        io.TextIOWrapper(io.FileIO(0, "r", closefd=False), "utf-8"),
        io.TextIOWrapper(io.FileIO(1, "w", closefd=False), "utf-8",
                         errors="backslashreplace", line_buffering=True),
        io.TextIOWrapper(io.FileIO(2, "w", closefd=False), "utf-8",
                         errors="backslashreplace", line_buffering=True),
    )  # fmt: skip


def _usable_stdio() -> None:
    """Give a session working ``sys.stdin``/``stdout``/``stderr`` again where a cell closed
    one or put something else than a stream there (``None``, a broken object): its fds 0-2
    stay open (the wrappers never close them), and the next cell's output and the
    session's own error messages need them. (Before this, a cell that closed ``sys.stderr``
    ended its session at the next error.) A stream a cell redirected to a file stays."""
    fresh: tuple[io.TextIOWrapper, ...] | None = None
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        try:
            usable = not getattr(sys, name).closed
        except BaseException:
            usable = False
        if not usable:
            fresh = fresh or _stdio()
            setattr(sys, name, fresh[fd])


_ZYGOTE_STDIO: tuple[io.TextIOWrapper, io.TextIOWrapper, io.TextIOWrapper] | None = None
"""The sessions' stdio wrappers, made once in the zygote before its first fork: a session
takes them as they are (its fds 0-2 are in place by then) instead of building its own,
which would write to pages shared with the zygote (each a page fault and a copy)."""


def _premake_stdio() -> None:
    """In the zygote: make :data:`_ZYGOTE_STDIO` on stand-ins for fds 0 and 1 (closed in
    the zygote) of the kinds a session has there: /dev/null and a pipe."""
    global _ZYGOTE_STDIO
    null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    r, w = os.pipe()
    os.dup2(null, 0)  # (a no-op where they already are: the lowest free fds)
    os.dup2(w, 1)
    try:
        _ZYGOTE_STDIO = _stdio()
    finally:
        for f in {null, r, w, 0, 1}:
            os.close(f)


def _zygote_main(worker: Worker, fd: int) -> None:
    """The zygote's loop: fork a session per request; reap the sessions that ended."""
    _premake_stdio()
    _set_environ(_session_environ(""))  # a session then sets only its work dir's two
    sock = socket.socket(fileno=fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    poll = select.poll()
    poll.register(fd, select.POLLIN)
    poll.register(wake_r, select.POLLIN)
    while True:
        for ready, _ in poll.poll():
            if ready == wake_r:
                with contextlib.suppress(OSError):
                    os.read(wake_r, 4096)
                continue
            msg, fds, _, _ = socket.recv_fds(sock, 1 << 16, 3)
            if not msg:
                return
            pid = _zygote_fork(worker, json.loads(msg), fds) if len(fds) == 3 else -1
            pidfd = _pidfd(pid) if pid > 0 else None  # before any reaping: it is this child
            for f in fds:
                os.close(f)
            socket.send_fds(
                sock, [json.dumps({"pid": pid}).encode()], [] if pidfd is None else [pidfd]
            )
            if pidfd is not None:
                os.close(pidfd)
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break


def _zygote_fork(worker: Worker, req: dict, fds: list[int]) -> int:
    """Fork one session process in the zygote (``fds``: its control socket, stdout, stderr);
    its pid, or -1 when the fork failed (the worker's process limit, say).

    libc's fork is called directly, so Python's at-fork hooks do not run: they would write
    to pages all over the interpreter (about 0.25 MB more per idle session) and are not
    needed here: the zygote has a single thread and holds no lock when it forks. What they
    would have done that matters is done by hand: a fresh ``random`` state per session."""
    ctl, out_w, err_w = fds
    pid = _raw_fork()
    if pid == 0:
        try:
            signal.set_wakeup_fd(-1)
            if "random" in sys.modules:  # as os.fork's hook: each session its own state
                sys.modules["random"].seed()
            if "threading" in sys.modules:  # (its other hook: there is no other thread)
                sys.modules["threading"].main_thread()._set_native_id()
            worker._child({1: out_w, 2: err_w, 3: ctl}, int(req["uid"]), str(req["workdir"]),
                          dict(req["limits"]), lambda: _session_main(3), list(req["cg"]),
                          str(req["root"]))  # fmt: skip
        finally:
            os._exit(70)  # (_child never returns; this is for a failure before it)
    return pid


def _remover_main(rfd: int, wfd: int) -> int:
    """The remover process: remove each path read from ``rfd``, report it on ``wfd``."""
    buf = b""
    while True:
        chunk = os.read(rfd, 1 << 16)
        if not chunk:
            return 0
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for line in lines:
            shutil.rmtree(line.decode("utf-8", "replace"), ignore_errors=True)
            view = memoryview(line + b"\n")
            while view:
                view = view[os.write(wfd, view) :]


class Worker:
    """The jailed worker: an event loop serving many runs and session cells at once.

    Nothing here blocks on untrusted code: each run or cell is a forked child watched by a
    :class:`Watch`, so cells of different sessions run at the same time and the kernel shares
    the CPU between them (a cpu cgroup per session). Requests and replies carry an ``id``;
    replies come back in the order runs finish. Operations on one session lineage (a session
    and its forks: one uid, one set of cgroups) run one at a time, in order. A session is
    stopped (SIGSTOP) whenever it has no cell running, so no agent code runs between cells.
    """

    def __init__(self, cfg: dict, host_fd: int):
        self.cfg = cfg
        self.uid_base: int = cfg["uid_base"]
        self.n_uids: int = cfg["n_uids"]
        self.set_uid: bool = cfg["layers"].get("uid", False)
        self.landlock: int = landlock_abi() if cfg["layers"].get("landlock") else -1
        self.work_root = cfg.get("work_root", "/tmp/sbx")
        os.makedirs(self.work_root, mode=0o711, exist_ok=True)
        self.counter = 0
        self.sessions: dict[str, dict] = {}
        #: one lineage per session uid: a session and its forks share uid, dir and cgroups;
        #: its "members" map each of its sessions' pids to the session
        self.lineages: dict[int, dict] = {}
        #: every session by its process id (the sweep and fork checks look pids up here)
        self.session_pids: dict[int, dict] = {}
        #: uids in use: by a lineage, a one-shot run, or leftovers still being killed
        self.busy_uids: set[int] = set()
        self.cgroup_roots: dict[str, str] = {
            c: p for c, p in (cfg.get("cgroups") or {}).items() if os.path.isdir(p)
        }
        self.sel = selectors.DefaultSelector()
        #: the worker cgroups' usage and limit files, kept open (read with pread)
        self.stat_fds: dict[str, int] = {}
        for controller, names in (("pids", ("pids.current", "pids.max")),
                                  ("memory", ("memory.usage_in_bytes", "memory.limit_in_bytes"))):  # fmt: skip
            root = self.cgroup_roots.get(controller)
            for name in names if root else ():
                with contextlib.suppress(OSError):
                    self.stat_fds[name] = os.open(
                        os.path.join(root, name), os.O_RDONLY | os.O_CLOEXEC
                    )
        self.timers: list[_Timer] = []
        #: runs and new sessions waiting for memory, pids or a uid
        self.waiting: collections.deque = collections.deque()
        #: uids whose processes or cgroups are still going away
        self.reaping: list[dict] = []
        self.reap_timer: _Timer | None = None
        self.children: set[int] = set()
        """Our own child processes still to be waited for (sessions, kill helpers)."""
        self.ping_waiters: list = []
        self.outbox = Outbox(self, host_fd)
        """The answers' way to the host."""
        self.running = 0
        """Runs and session calls in flight: the worker's CPU weight follows it."""
        self.cpus = max(1, int(cfg.get("cpus") or 1))
        self.cpu_shares = 1024
        self.freezer = bool(cfg["layers"].get("freezer")) and "unified" in self.cgroup_roots
        self.trash = os.path.join(self.work_root, ".trash")
        """Dirs on their way out (root-only): renamed here at once, removed by the remover."""
        os.makedirs(self.trash, mode=0o700, exist_ok=True)
        self.guard_pid = -1
        self.hidepid = False
        self.remover = Remover(self)
        self.zygote: Zygote | None = None
        """Forks the sessions (see :class:`Zygote`); None: the worker forks them itself."""
        self.spares: list[dict] = []
        """Run processes forked ahead of time, each in its own cgroups with its own uid."""
        self.runs: dict[int, dict] = {}
        """One-shot runs under way, by pid (ended with the host: :meth:`_shutdown`)."""
        self.stopping = False

    # ---- the event loop -----------------------------------------------------------------

    def at(self, when: float, fn) -> _Timer:
        timer = _Timer(when, fn)
        heapq.heappush(self.timers, timer)
        return timer

    def serve(self, rfd: int) -> None:
        self.sel.register(rfd, selectors.EVENT_READ, (None, "host"))
        while True:
            timeout = None
            while self.timers and self.timers[0].fn is None:
                heapq.heappop(self.timers)
            if self.timers:
                timeout = max(0.0, self.timers[0].when - time.monotonic())
            for key, mask in self.sel.select(timeout):
                owner, name = key.data
                if owner is not None:
                    owner.on_event(name, mask)
                    continue
                try:
                    req = read_frame(rfd)
                except (EOFError, ValueError):
                    self._shutdown()
                    self.outbox.drain(2.0)
                    return
                self._dispatch(req)
            now = time.monotonic()
            while self.timers and self.timers[0].when <= now:
                fn = heapq.heappop(self.timers).fn
                if fn is not None:
                    fn()

    def _shutdown(self) -> None:
        """The host is gone: end every session and wait (a few seconds at most) until the
        session cgroups are removed, so an orphaned worker leaves nothing behind."""
        self.stopping = True  # no new spare from here on
        if self.zygote is not None:  # sessions still being forked are released, not opened
            self.zygote.fail()
        self.waiting.clear()  # nobody is left to answer: nothing more starts
        for pid, run in list(self.runs.items()):  # a run's children would outlive the
            del self.runs[pid]  # worker, and the jail's init waits for every process
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            self._release_uid(run["uid"], run["cg"], [run["workdir"]])
        for s in list(self.sessions.values()):
            self._drop_session(s)
        while self.spares:
            self._discard_spare(self.spares.pop())
        until = time.monotonic() + 5.0
        while self.reaping and time.monotonic() < until:
            self.remover.poll()
            self._wait_children()
            now = time.monotonic()
            self.reaping = [e for e in self.reaping if not self._reap_entry(e, now)]
            time.sleep(0.005)

    def _dispatch(self, req: dict) -> None:
        sent = []

        def reply(obj: dict) -> None:
            if not sent:
                sent.append(True)
                self.outbox.send({**obj, "id": req.get("id")})

        op = getattr(self, "op_" + str(req.get("op")), None)
        try:
            if op is None:
                reply({"status": "bad_request"})
            else:
                op(req, reply)
        except Exception:
            reply({"status": "internal_error", "stderr": traceback.format_exc()})

    # ---- capacity: uids, memory, pids, CPU weight ---------------------------------------

    def _busy(self, delta: int) -> None:
        """Count a run or cell starting (+1) or ending (-1), and weigh the worker's cpu group
        as that many processes, up to one per CPU: against the host's other processes the
        sandbox gets what a program with that many busy threads would, whatever its sessions
        do inside (a shared group would get one process's worth on a busy host; one weight
        per cell would let twenty spinning cells starve the process that drives the envs)."""
        self.running += delta
        shares = 1024 * min(self.cpus, max(1, self.running))
        cpu = self.cgroup_roots.get("cpu")
        if cpu is not None and shares != self.cpu_shares:
            try:
                _write(os.path.join(cpu, "cpu.shares"), str(shares))
                self.cpu_shares = shares
            except OSError:
                pass

    def _free_uid(self, sessions_only: bool) -> int | None:
        """A uid no live run or session of this worker has (None when all are taken)."""
        for k in range(1 if sessions_only else 0, self.n_uids):
            if self.uid_base + k not in self.busy_uids:
                return self.uid_base + k
        return None

    def _room(self) -> bool:
        """Whether the worker's cgroups have room for one more process tree."""
        stat = self.stat_fds
        try:
            if "pids.max" in stat:
                limit = os.pread(stat["pids.max"], 32, 0).strip()
                current = int(os.pread(stat["pids.current"], 32, 0))
                if limit != b"max" and current + 8 > int(limit):
                    return False
            if "memory.limit_in_bytes" in stat:
                usage = int(os.pread(stat["memory.usage_in_bytes"], 32, 0))
                limit_b = int(os.pread(stat["memory.limit_in_bytes"], 32, 0))
                if usage + min(256 << 20, limit_b // 8) > limit_b:
                    return False
        except (OSError, ValueError):
            pass
        return True

    def _admit(self, req: dict, reply, start, sessions_only: bool, wait: float) -> None:
        """Start ``start(req, reply, uid)`` now, or queue it until a uid and room are free."""
        uid = self._free_uid(sessions_only)
        if uid is not None and not self.waiting and self._room():
            self.busy_uids.add(uid)
            start(req, reply, uid)
            return
        if uid is None and sessions_only and len(self.lineages) >= self.n_uids - 1:
            reply({"status": "full", "error": f"this worker already runs {self.n_uids - 1} "
                   "sessions (one uid each); close some or add workers"})  # fmt: skip
            return
        if uid is None:
            self._reclaim_spare()
        self.waiting.append((req, reply, start, sessions_only, time.monotonic() + wait))
        if len(self.waiting) == 1:
            self.at(time.monotonic() + 0.02, self._pump)

    def _pump(self) -> None:
        """Start waiting work while there is room; expire what waited past its time."""
        now = time.monotonic()
        while self.waiting:
            req, reply, start, sessions_only, until = self.waiting[0]
            uid = self._free_uid(sessions_only)
            if uid is None and sessions_only and len(self.lineages) >= self.n_uids - 1:
                self.waiting.popleft()  # every uid is a live session's, not one being freed
                reply(
                    {
                        "status": "full",
                        "error": f"this worker already runs "
                        f"{self.n_uids - 1} sessions (one uid each); close some or add workers",
                    }
                )
                continue
            if uid is not None and self._room():
                self.waiting.popleft()
                self.busy_uids.add(uid)
                start(req, reply, uid)
                continue
            if uid is None:
                self._reclaim_spare()
            if until > now:
                break
            self.waiting.popleft()
            note = ("[the sandbox worker had no free memory, process slots or uids for this "
                    "within its time limit; it did not run]")  # fmt: skip
            if req.get("op") == "session_new":
                reply({"status": "full", "error": note})
            else:
                reply({"status": "timeout", "stdout": "", "stderr": note + "\n",
                       "stdout_dropped": 0, "stderr_dropped": 0, "duration": 0.0})  # fmt: skip
        if self.waiting:
            self.at(now + 0.02, self._pump)

    # ---- confinement of a forked child --------------------------------------------------

    def _new_workdir(self, uid: int, parent: str | None = None) -> str:
        """A fresh directory, mode 0700, owned by ``uid``: nobody else can traverse it."""
        self.counter += 1
        path = f"{parent or self.work_root}/{uid}-{os.getpid()}-{self.counter}"
        os.mkdir(path, 0o700)
        if self.set_uid:
            os.chown(path, uid, uid)
        return path

    def _make_cgroup(self, name: str, limits: dict) -> list[str]:
        """Sub-cgroups of the worker's own for one lineage or run: memory + files, processes,
        CPU, and a cgroup v2 group (where there is one) to kill it by at once
        (``cgroup.kill`` catches forks made meanwhile) and, for a lineage, to freeze it."""
        made = []
        for root in self.cgroup_roots.values():
            path = os.path.join(root, name)
            try:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(path)
            except OSError:
                continue
            made.append(path)
        self._limit_cgroup(made, limits)
        return made

    def _limit_cgroup(self, cg: list[str], limits: dict) -> None:
        """Put ``limits`` on a lineage's or run's cgroups: memory + files (+ slack) and
        processes. (A new cpu cgroup weighs one process, 1024: every session and run alike.)"""
        memory, pids = self._cg_path(cg, "memory"), self._cg_path(cg, "pids")
        if memory is not None:  # memory + swap may not go below memory: this order works
            mem = str(int(limits["memory"]) + int(limits["disk"]) + _SLACK)
            knobs = ("memory.memsw.limit_in_bytes", "memory.limit_in_bytes")
            for knob in (*knobs, knobs[0]):  # whether the limit goes up or down
                with contextlib.suppress(OSError):
                    _write(os.path.join(memory, knob), mem)
        if pids is not None:
            with contextlib.suppress(OSError):
                _write(os.path.join(pids, "pids.max"), str(int(limits["processes"])))

    def _cgroup_procs(self, cg: list[str], what: str = "cgroup.procs") -> set[int]:
        for path in cg:
            try:
                with open(os.path.join(path, what)) as fh:
                    return {int(x) for x in fh.read().split()}
            except OSError:
                continue
        return set()

    def _kill_cgroup(self, cg: list[str], keep: set[int] = frozenset()) -> int:  # type: ignore[assignment]
        """SIGKILL every process in ``cg`` except ``keep`` (without waiting for them to go)."""
        killed: set[int] = set()
        for _ in range(8):  # a few rounds catch children forked while the kill went out
            extra = self._cgroup_procs(cg) - set(keep) - killed
            if not extra:
                break
            for pid in extra:
                _kill(pid)
            killed |= extra
        return len(killed)

    def _confine(
        self, uid: int, workdir: str, limits: dict, cg: list[str], write_root: str
    ) -> None:
        """Runs in the forked child, before any untrusted code."""
        self._enter(cg)
        self._restrict(uid, workdir, limits, write_root)

    @staticmethod
    def _enter(cg: list[str]) -> None:
        """The first half of confining a child: its own session, cgroups and priority."""
        os.setsid()
        for path in cg:  # accounted to its own cgroups from its first instruction
            _write(os.path.join(path, "cgroup.procs"), "0")
        for sig in _DEFAULT_SIGNALS:
            _set_signal(sig, _SIG_DFL)
        try:  # noqa: SIM105 - the host raises the worker's priority; runs get an ordinary one
            os.setpriority(os.PRIO_PROCESS, 0, 0)
        except OSError:
            pass
        try:  # noqa: SIM105 - under the worker's memory cgroup, the OOM killer picks runs
            _write("/proc/self/oom_score_adj", "1000")
        except OSError:
            pass

    def _restrict(self, uid: int, workdir: str, limits: dict, write_root: str) -> None:
        """The second half: rlimits, Landlock, its uid, its work dir, an empty environment."""
        mem = int(limits.get("memory", 512 << 20))
        as_limit = _vm_bytes() + mem
        cpu = max(1, int(limits.get("cpu_seconds", 10)))
        rl = [
            (resource.RLIMIT_CORE, 0),
            (resource.RLIMIT_FSIZE, int(limits.get("file_size", 16 << 20))),
            (resource.RLIMIT_NOFILE, int(limits.get("open_files", 256))),
            (resource.RLIMIT_AS, as_limit),
            (resource.RLIMIT_CPU, cpu),
            (resource.RLIMIT_NPROC, int(limits.get("processes", 64))),
            (resource.RLIMIT_MEMLOCK, 0),
            (resource.RLIMIT_MSGQUEUE, 0),
        ]
        for what, value in rl:
            try:  # noqa: SIM105
                resource.setrlimit(what, (value, value))
            except (ValueError, OSError):
                pass
        if self.landlock >= 1:
            landlock_restrict([write_root], self.landlock)
        if self.set_uid:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        os.chdir(workdir)
        _set_environ(_session_environ(workdir))

    def _spawn(
        self,
        uid: int,
        workdir: str,
        limits: dict,
        body,
        extra_fds: dict[int, int],
        cg: list[str],
        write_root: str | None = None,
        *,
        late: bool = False,
    ):
        """Fork a confined child running ``body()``; returns (pid, out_r, err_r).

        ``late``: the child only enters its cgroups; ``body`` restricts it (a spare run
        process, which learns its limits when it gets its run)."""
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # child
            self._child({1: out_w, 2: err_w, **extra_fds}, uid, workdir, limits, body, cg,
                        write_root, late=late)  # fmt: skip
        os.close(out_w)
        os.close(err_w)
        for fd in (out_r, err_r):
            os.set_blocking(fd, False)
        return pid, out_r, err_r

    def _child(
        self,
        fds: dict[int, int],
        uid: int,
        workdir: str,
        limits: dict,
        body,
        cg: list[str],
        write_root: str | None,
        *,
        late: bool = False,
    ) -> None:
        """In a freshly forked child: stdin from /dev/null, ``fds`` (target: source; 1 and 2
        are stdout and stderr) in place and every other fd closed, then confined (``late``:
        only in its cgroups) and ``body()`` run. Never returns."""
        code = 70
        try:  # noqa: SIM105 - first: the worker's high priority is not for the child's setup
            os.setpriority(os.PRIO_PROCESS, 0, 0)
        except OSError:
            pass
        try:
            # first out of the way of the targets (a source may sit on another's target)
            high = {target: fcntl.fcntl(src, fcntl.F_DUPFD, 64) for target, src in fds.items()}
            null = os.open("/dev/null", os.O_RDONLY)
            os.dup2(null, 0)
            keep = {0}
            for target, src in high.items():
                os.dup2(src, target)
                os.set_inheritable(target, True)
                keep.add(target)
            for fd in _open_fds():
                if fd not in keep:
                    try:  # noqa: SIM105
                        os.close(fd)
                    except OSError:
                        pass
            sys.stdin, sys.stdout, sys.stderr = _ZYGOTE_STDIO or _stdio()
            if late:
                self._enter(cg)
            else:
                self._confine(uid, workdir, limits, cg, write_root or workdir)
            code = body()
        except BaseException as exc:
            try:  # noqa: SIM105
                _print_exc(exc)
            except BaseException:
                pass
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except BaseException:
                pass
            os._exit(code if isinstance(code, int) else 1)

    # ---- killing and reaping ------------------------------------------------------------

    def _kill_uid_once(self, uid: int) -> None:
        """SIGKILL every process of ``uid`` (kill(-1) from a helper running as that uid)."""
        pid = os.fork()
        if pid == 0:
            try:
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
                os.kill(-1, signal.SIGKILL)
            except BaseException:
                pass
            os._exit(0)
        _waitpid(pid)

    def _release_uid(
        self,
        uid: int,
        cg: list[str],
        dirs: list[str],
        trashed: list[str] | None = None,
    ) -> None:
        """Kill what is left of ``uid``, remove its cgroups and dirs; free it once all is gone.

        Nothing slow happens here: the dirs are renamed into the trash at once and removed
        by the remover process once no process of the uid is left; the uid stays taken until
        then (so nothing of it is ever reused or left behind)."""
        killed = False  # True: by cgroup.kill, which needs no second go
        if cg:
            killed = self._kill_all(cg)
        elif self.set_uid and _procs_of(uid):
            self._kill_uid_once(uid)
        trash = [t for t in map(self._to_trash, dirs) if t] + list(trashed or ())
        entry = {"uid": uid, "cg": list(cg), "trash": trash, "sent": False, "due": 0.0,
                 "delay": _REAP_FIRST_S, "killed": killed}  # fmt: skip
        self._wait_children()
        if self._reap_entry(entry, time.monotonic()):
            if self.waiting:
                self._pump()
            return
        self.reaping.append(entry)
        self._reap_at(entry["due"])

    def _to_trash(self, path: str) -> str | None:
        """Rename ``path`` into the root-only trash (a constant-time step); its new path."""
        self.counter += 1
        dest = os.path.join(self.trash, f"{os.path.basename(path)}.{self.counter}")
        try:
            os.rename(path, dest)
        except OSError:
            return None
        return dest

    def _remove_later(self, path: str, lineage: dict | None = None) -> None:
        """Move ``path`` (a dropped fork's dir) out of sight and have the remover delete it.

        Processes of its lineage may still hold it open; what they add meanwhile is removed
        again when the lineage ends (its uid waits for that)."""
        trash = self._to_trash(path)
        if trash:
            self.remover.remove(trash)
            if lineage is not None:
                lineage.setdefault("trashed", []).append(trash)

    def _kill_all(self, cg: list[str]) -> bool:
        """SIGKILL every process in ``cg``: at once through ``cgroup.kill`` (cgroup v2, frozen
        processes and ones forking meanwhile included; True), or else pid by pid (False:
        a process forked meanwhile may be missed, so the caller kills again until none is
        left)."""
        v2 = self._cg_path(cg, "unified")
        if v2 is not None:
            try:
                _write(os.path.join(v2, "cgroup.kill"), "1")
                return True
            except OSError:
                pass
        self._kill_cgroup(cg)
        return False

    def _reap_entry(self, entry: dict, now: float) -> bool:
        """One attempt to finish releasing a uid; True when it is free again.

        Until its processes are gone, an entry is looked at only when due, at intervals
        that double up to ``_REAP_MAX_S`` (a dying fork bomb or memory hog takes a while;
        reading every such cgroup every few milliseconds, and again at every path the
        remover finished, cost the worker's loop more than all live sessions did). After
        that, what is left (the remover's work, the cgroups' removal) is cheap to look at."""
        uid = entry["uid"]
        if not entry["sent"]:
            if now < entry["due"]:
                return False
            if entry["cg"] and self._populated(entry["cg"]):
                if not entry["killed"]:
                    self._kill_cgroup(entry["cg"])
                return self._reap_later(entry, now)
            if not entry["cg"] and self.set_uid and _procs_of(uid):
                self._kill_uid_once(uid)
                return self._reap_later(entry, now)
            entry["sent"] = True  # every process is gone: nothing can write there any more
            for path in entry["trash"]:
                self.remover.remove(path)
        if self.remover.busy(entry["trash"]):
            entry["due"] = now + _REAP_MAX_S  # (the remover's answer looks again sooner)
            return False
        left = []
        for path in entry["cg"]:  # after the files: their memory charge leaves with them
            try:
                os.rmdir(path)
            except FileNotFoundError:
                pass
            except OSError:
                left.append(path)
        entry["cg"] = left
        if left:
            return self._reap_later(entry, now)
        self.busy_uids.discard(uid)
        return True

    @staticmethod
    def _reap_later(entry: dict, now: float) -> bool:
        """Not released yet: look again after the entry's interval, then double it."""
        entry["due"] = now + entry["delay"]
        entry["delay"] = min(_REAP_MAX_S, entry["delay"] * 2)
        return False

    def _populated(self, cg: list[str]) -> bool:
        """Whether any process is left in a lineage's or run's cgroups: the cgroup v2 group's
        ``populated`` flag (a few bytes, however many processes are dying), else the pids."""
        v2 = self._cg_path(cg, "unified")
        if v2 is not None:
            with contextlib.suppress(OSError):
                return b"populated 0" not in _read(os.path.join(v2, "cgroup.events"))
        return bool(self._cgroup_procs(cg))

    def _cg_path(self, cg: list[str], controller: str) -> str | None:
        """The group among ``cg`` (a lineage's or run's) in ``controller``'s hierarchy."""
        root = self.cgroup_roots.get(controller)
        return next((p for p in cg if os.path.dirname(p) == root), None) if root else None

    def _reap_at(self, when: float) -> None:
        """Have :meth:`_reap_tick` run at ``when`` or sooner (one timer for every entry)."""
        timer = self.reap_timer
        if timer is not None and timer.fn is not None and timer.when <= when:
            return
        if timer is not None:
            timer.cancel()
        self.reap_timer = self.at(when, self._reap_tick)

    def _reap_tick(self) -> None:
        """Retry releasing uids until all is gone (never given up: a uid whose processes
        have not died yet stays taken), each entry when it is due."""
        self.reap_timer = None
        self._reap_ready()
        if self.reaping:
            self._reap_at(min(e["due"] for e in self.reaping))

    def _reap_ready(self) -> None:
        """Finish the releases that can finish now; answer pings and start waiting work."""
        if self.reaping:
            self._wait_children()
            now = time.monotonic()
            self.reaping = [e for e in self.reaping if not self._reap_entry(e, now)]
            if not self.reaping:
                self._answer_pings()
        if self.waiting:
            self._pump()
        if len(self.spares) < SPARES:
            self._replenish()

    def _wait_children(self) -> None:
        for pid in list(self.children):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                self.children.discard(pid)

    # ---- one-shot executions and grading ------------------------------------------------

    def op_exec(self, req: dict, reply) -> None:
        if self.spares and not self.waiting:
            self._start_exec(req, reply, None)
            return
        limits = {**self.cfg["limits"], **req.get("limits", {})}
        timeout = float(req.get("timeout", limits.get("timeout", 10.0)))
        self._admit(req, reply, self._start_exec, False, timeout)

    def _start_exec(self, req: dict, reply, uid: int | None) -> None:
        """Start a one-shot run: in a spare process (``uid`` None) or a new one of ``uid``."""
        limits = {**self.cfg["limits"], **req.get("limits", {})}
        grade = req.get("grade")  # {"fn": name, "calls": [[args], ...]}
        start = time.monotonic()
        timeout = float(req.get("timeout", limits.get("timeout", 10.0)))
        run = self._take_spare(req, limits) if uid is None else self._fork_run(req, limits, uid)
        if run is None:  # no spare after all: wait for a uid like any run
            self._admit(req, reply, self._start_exec, False, timeout)
            return
        pid, cg = run["pid"], run["cg"]
        self.runs[pid] = run
        self._busy(+1)

        def done(got: dict) -> None:
            self._busy(-1)
            if got["status"] is not None:
                _kill(pid)
            try:  # the run's process group (it is the leader; its zombie holds the id)  # noqa: SIM105
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            # a killed run may take long to die (many children to kill first, a loaded
            # host): reap it once its pidfd says it is gone, never waiting on the loop
            if _alive(run["pidfd"]):
                _OnExit(self, run["pidfd"], lambda: reaped(got))
            else:
                reaped(got)

        def reaped(got: dict) -> None:
            self.runs.pop(pid, None)
            status = got["status"]
            wstatus = _waitpid(pid)  # (it has exited: this returns at once)
            for fd in (run["out"], run["err"], run["res"], run["pidfd"]):
                if fd is not None:
                    os.close(fd)
            note = _oom_note(_oom_cause(cg), limits, "run")
            self._release_uid(run["uid"], cg, [run["workdir"]])
            exit_code, sig = _decode_status(wstatus)
            if status is None:
                status = "ok" if exit_code == 0 else ("killed" if sig else "error")
            stderr = got["stderr"]
            if note:
                stderr += ("\n" if stderr and not stderr.endswith("\n") else "") + note + "\n"
            out = {
                "status": status, "exit_code": exit_code, "signal": sig,
                "stdout": got["stdout"], "stderr": stderr,
                "stdout_dropped": got["stdout_dropped"], "stderr_dropped": got["stderr_dropped"],
                "duration": time.monotonic() - start,
            }  # fmt: skip
            if grade is not None:
                out["results"] = _parse_results(got["result_bytes"], len(grade["calls"]))
            reply(out)

        Watch(self, fds={"stdout": run["out"], "stderr": run["err"]},
              cap=int(limits.get("output", 64 << 10)), deadline=start + timeout, on_done=done,
              pid_fd=run["pidfd"], result_fd=run["res"] if grade is not None else None)  # fmt: skip

    def _write_files(self, workdir: str, uid: int, files: dict | None) -> None:
        """The files a run starts with (the host's, e.g. a test file), owned by its uid."""
        for name, content in (files or {}).items():
            safe = os.path.join(workdir, os.path.basename(name))
            with open(safe, "w") as fh:
                fh.write(content)
            if self.set_uid:
                os.chown(safe, uid, uid)

    def _fork_run(self, req: dict, limits: dict, uid: int) -> dict:
        """A new process for a one-shot run (when no spare is ready)."""
        workdir = self._new_workdir(uid)
        self._write_files(workdir, uid, req.get("files"))
        code, grade = req["code"], req.get("grade")
        res_r, res_w = os.pipe()

        def body() -> int:
            if grade is None:
                os.close(3)
            return _run_main(code, grade)

        # every run is a session for the kernel: memory + files, processes and CPU weight of
        # its own, so a one-shot run can neither fill the worker nor outweigh a session
        cg = self._make_cgroup(f"u{uid}", limits)
        pid, out_r, err_r = self._spawn(uid, workdir, limits, body, {3: res_w}, cg)
        os.close(res_w)
        os.set_blocking(res_r, False)
        return {"uid": uid, "pid": pid, "pidfd": _pidfd(pid), "workdir": workdir, "cg": cg,
                "out": out_r, "err": err_r, "res": res_r}  # fmt: skip

    # ---- spare run processes ------------------------------------------------------------

    def _replenish(self) -> None:
        """Keep ``SPARES`` run processes forked and in cgroups of their own ahead of time.

        Moving a process into cgroup v1 groups waits for an RCU grace period (milliseconds);
        a one-shot run that finds a spare does not pay it, nor the fork."""
        while len(self.spares) < SPARES and not (self.waiting or self.stopping) and self._room():
            uid = self._free_uid(False)
            if uid is None:
                return
            self.busy_uids.add(uid)
            self.spares.append(self._make_spare(uid))

    def _make_spare(self, uid: int) -> dict:
        limits = dict(self.cfg["limits"])
        workdir = self._new_workdir(uid)
        cg = self._make_cgroup(f"u{uid}", limits)
        job_r, job_w = os.pipe()
        res_r, res_w = os.pipe()

        def body() -> int:  # in the spare: wait for a run, then confine and run it
            job = read_frame(4)
            os.close(4)
            if job.get("grade") is None:
                os.close(3)
            self._restrict(uid, workdir, job["limits"], workdir)
            return _run_main(job["code"], job.get("grade"))

        pid, out_r, err_r = self._spawn(
            uid, workdir, limits, body, {3: res_w, 4: job_r}, cg, late=True
        )
        os.close(job_r)
        os.close(res_w)
        os.set_blocking(res_r, False)
        return {"uid": uid, "pid": pid, "pidfd": _pidfd(pid), "workdir": workdir, "cg": cg,
                "out": out_r, "err": err_r, "res": res_r, "job": job_w, "limits": limits}  # fmt: skip

    def _take_spare(self, req: dict, limits: dict) -> dict | None:
        """A live spare given this run (limits on its cgroups, files, the code); None when
        there is none, or the run is too big to hand over without blocking."""
        job = frame({"code": req["code"], "limits": limits, "grade": req.get("grade")})
        if len(job) > _SPARE_JOB_MAX:
            return None
        while self.spares:
            spare = self.spares.pop(0)
            if _alive(spare["pidfd"]):
                break
            self._discard_spare(spare)  # (killed meanwhile: the OOM killer, say)
        else:
            return None
        self.at(time.monotonic(), self._replenish)
        if limits != spare["limits"]:
            self._limit_cgroup(spare["cg"], limits)
        self._write_files(spare["workdir"], spare["uid"], req.get("files"))
        os.write(spare["job"], job)  # (the pipe is empty and holds 64 KiB: never blocks)
        os.close(spare["job"])
        return spare

    def _reclaim_spare(self) -> None:
        """Work waits for a uid: free one a spare holds (spares never keep a session out)."""
        if self.spares:
            self._discard_spare(self.spares.pop())

    def _discard_spare(self, spare: dict) -> None:
        for fd in (spare["out"], spare["err"], spare["res"], spare["job"], spare["pidfd"]):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        _kill(spare["pid"])
        self.children.add(spare["pid"])
        self._release_uid(spare["uid"], spare["cg"], [spare["workdir"]])

    # ---- sessions -----------------------------------------------------------------------

    def op_session_new(self, req: dict, reply) -> None:
        self._admit(req, reply, self._start_session, True, 20.0)

    def _start_session(self, req: dict, reply, uid: int) -> None:
        limits = {**self.cfg["limits"], **req.get("limits", {})}
        # the CPU rlimit counts over the session's whole life, not per cell: allow 10 times more
        limits["cpu_seconds"] = int(limits.get("cpu_seconds", 10)) * 10
        request: dict = {}

        def prepare() -> dict:
            """Its dirs and cgroups, made when its request goes to the zygote (not before:
            opens waiting their turn make no cgroups meanwhile), once."""
            if not request:
                root = self._new_workdir(uid)  # the lineage's directory; forks get siblings
                workdir = self._new_workdir(uid, root)
                cg = self._make_cgroup(f"u{uid}", limits)
                request.update(uid=uid, workdir=workdir, limits=limits, cg=cg, root=root)
            return request

        def made(got: tuple | None) -> None:  # (from the zygote's answer: never raises)
            try:
                self._open_session(prepare(), got, reply)
            except Exception:
                reply({"status": "internal_error", "stderr": traceback.format_exc()})
                if uid not in self.lineages and request:  # nothing holds it: kill, remove
                    self._release_uid(uid, request["cg"], [request["root"]])

        if self.zygote is None or not self.zygote.spawn(prepare, made):
            made(None)

    def _open_session(self, request: dict, made: tuple | None, reply) -> None:
        """Book and answer a new session: the process the zygote ``made``, or (None) one the
        worker forks itself now."""
        uid, workdir, limits = request["uid"], request["workdir"], request["limits"]
        root, cg = request["root"], request["cg"]
        if self.stopping:
            if made is not None:
                for fd in made[1:4]:
                    os.close(fd)
                made[4].close()
            self._release_uid(uid, cg, [root])
            with contextlib.suppress(OSError):  # (the host may be gone already)
                reply({"status": "full", "error": "the sandbox worker is stopping"})
            return
        if made is not None:
            pid, pidfd, out_r, err_r, ours = made
        else:  # no zygote: fork it from the worker itself

            def body() -> int:
                return _session_main(3)

            ours, theirs = socket.socketpair()
            pid, out_r, err_r = self._spawn(uid, workdir, limits, body, {3: theirs.fileno()}, cg,
                                            root)  # fmt: skip
            theirs.close()
            self.children.add(pid)
            pidfd = _pidfd(pid)
        ours.setblocking(False)
        self.counter += 1  # (sessions may be answered back to back: a fresh number each)
        sid = f"s{self.counter}"
        self.lineages[uid] = {"dir": root, "cg": cg, "pids_fd": _open_counter(cg),
                              "freeze_fd": self._open_freezer(cg), "queue": collections.deque(),
                              "busy": False, "members": {}}  # fmt: skip
        self._add_session({
            "sid": sid, "pid": pid, "pidfd": pidfd, "uid": uid, "workdir": workdir, "ctl": ours,
            "out": out_r, "err": err_r, "limits": limits, "buf": bytearray(), "watch": None,
        })  # fmt: skip
        reply({"sid": sid})  # (no agent code has run in it yet: frozen after its first call)

    def _open_freezer(self, cg: list[str]) -> int | None:
        """An fd on the lineage's ``cgroup.freeze`` (cgroup v2), or None without a freezer."""
        v2 = self._cg_path(cg, "unified") if self.freezer else None
        if v2 is not None:
            with contextlib.suppress(OSError):
                return os.open(os.path.join(v2, "cgroup.freeze"), os.O_WRONLY | os.O_CLOEXEC)
        return None

    def _set_frozen(self, uid: int, frozen: bool) -> None:
        """Freeze or thaw every process of a lineage (cgroup v2 freezer).

        A frozen process gets no CPU, whatever signal it receives (SIGCONT from a fork of
        the same uid included); a fatal signal still kills it. The lineage is frozen whenever
        none of its operations runs, so no agent code runs between cells."""
        lineage = self.lineages.get(uid)
        fd = lineage.get("freeze_fd") if lineage is not None else None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.pwrite(fd, b"1" if frozen else b"0", 0)

    def _add_session(self, s: dict) -> None:
        self.sessions[s["sid"]] = s
        self.lineages[s["uid"]]["members"][s["pid"]] = s
        self.session_pids[s["pid"]] = s

    def _session(self, req: dict) -> dict | None:
        return self.sessions.get(req.get("sid", ""))

    def _lineage_op(self, s: dict, start) -> None:
        """Run ``start()`` when the session's lineage is idle (its ops run one at a time)."""
        lineage = self.lineages[s["uid"]]
        if lineage["busy"]:
            lineage["queue"].append(start)
        else:
            lineage["busy"] = True
            start()

    def _lineage_next(self, uid: int) -> None:
        lineage = self.lineages.get(uid)
        if lineage is None:
            return
        if lineage["queue"]:
            lineage["queue"].popleft()()
        else:
            lineage["busy"] = False

    def _signal(self, s: dict, sig: int) -> None:
        if s.get("pidfd") is not None:
            try:  # noqa: SIM105
                signal.pidfd_send_signal(s["pidfd"], sig)
            except OSError:
                pass

    def _frame_for(self, s: dict, msg: dict) -> bytes:
        """A control frame for ``s``, after dropping whatever its code wrote on the socket."""
        s["buf"].clear()
        try:
            while s["ctl"].recv(1 << 16):
                pass
        except OSError:
            pass
        s["nonce"] = os.urandom(8).hex()
        return frame({**msg, "n": s["nonce"]})

    def _read_ctl(self, s: dict) -> Any:
        """What the session's control socket has: a reply dict, _PENDING, or None (broken).

        Never blocks: a session that writes half a frame (or garbage) on its own socket only
        loses its own session.
        """
        buf = s["buf"]
        try:
            chunk = s["ctl"].recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return _PENDING
        except OSError:
            return None
        if not chunk:
            return None
        buf += chunk
        mark = _MARK + s.get("nonce", "").encode()
        at = buf.find(mark)
        if at < 0:  # junk so far: keep only a tail that could start the marker
            del buf[: max(0, len(buf) - len(mark))]
            return _PENDING
        start = at + len(mark)
        if len(buf) < start + 4:
            return _PENDING
        (n,) = _HDR.unpack(buf[start : start + 4])
        if n > _MAX_REPLY:
            return None
        if len(buf) < start + 4 + n:
            return _PENDING
        try:
            reply = json.loads(bytes(buf[start + 4 : start + 4 + n]))
        except ValueError:
            return None
        del buf[: start + 4 + n]
        return reply if isinstance(reply, dict) else None

    def _session_call(
        self, s: dict, msg: dict, deadline: float, on_done, read_ctl=None, prepare=None
    ) -> None:
        """Wake the session, send ``msg``, and report its answer (or its end) to ``on_done``.

        ``on_done(out)`` gets the output and a ``status`` that is None when the session
        answered. Before that, ``prepare(out)`` (if given) runs, the lineage is swept and the
        session is stopped again; after it, the lineage's next queued operation starts.
        """
        uid = s["uid"]
        self._set_frozen(uid, False)
        self._signal(s, signal.SIGCONT)

        def done(got: dict) -> None:
            s["watch"] = None
            self._busy(-1)
            status = got["status"]
            reply = got["reply"]
            if status is None and reply is None:
                status = "dead"
            got["status"] = status
            oom = None
            if status is not None:  # timeout, output flood or the session died: it is gone
                lineage = self.lineages.get(uid)
                if status == "dead" and lineage is not None:
                    oom = _oom_cause(lineage["cg"])
                self._drop_session(s)
            got["oom"] = oom
            if prepare is not None:
                prepare(got)
            got["note"] = self._sweep(uid)
            if s.get("pidfd") is not None and s is self.sessions.get(s["sid"]):
                self._signal(s, signal.SIGSTOP)  # other members stay stopped during its cells
            self._set_frozen(uid, True)  # no agent code runs between cells
            try:
                on_done(got)
            finally:
                self._lineage_next(uid)

        self._busy(+1)
        gone = s is not self.sessions.get(s["sid"])  # lost while this operation waited
        if gone or time.monotonic() >= deadline:
            done({"status": "dead" if gone else "timeout", "reply": None, "stdout": "", "stderr": "",
                  "stdout_dropped": 0, "stderr_dropped": 0, "result_bytes": b""})  # fmt: skip
            return
        watch = Watch(
            self, fds={"stdout": s["out"], "stderr": s["err"]},
            cap=int(s["limits"].get("output", 64 << 10)), deadline=deadline, on_done=done,
            pid_fd=s["pidfd"], ctl=s["ctl"], read_ctl=read_ctl or (lambda: self._read_ctl(s)),
            outbox=self._frame_for(s, msg),
        )  # fmt: skip
        if not watch.done:
            s["watch"] = watch

    def _sweep(self, uid: int) -> str:
        """After every session call: kill what the lineage left running besides its sessions.

        A cell's child processes die with the cell; a session process that still has threads
        running is stopped (its CPU would escape the cell's limit). What counts is what is
        alive: the processes in the lineage's cgroup against its live members. Returns a note
        for the observation, or "".
        """
        lineage = self._settle_members(uid)  # e.g. a fork its sibling's cell killed
        if lineage is None:
            return ""
        # the live members, a copy: dropping a session below must not change it
        members = dict(lineage["members"])
        if self._task_count(lineage) == len(members):  # one task each: nothing else runs
            return ""
        cg = lineage["cg"]
        if cg:
            procs = self._cgroup_procs(cg)
        else:
            procs = set(_procs_of(uid)) if self.set_uid else set(members)
        notes = []
        threaded = {pid for pid in members if pid in procs and _threads(pid) > 1}
        for pid in threaded:
            self._drop_session(members[pid])
            notes.append("[threads were still running when the cell ended: the session was "
                         "stopped; threads may not outlive a cell]")  # fmt: skip
        extra = procs - set(members)
        if extra:
            keep = {p for p in members if p not in threaded}
            n = self._kill_extra(cg, keep, extra)
            notes.append(f"[{n} background process(es) still running when the cell ended "
                         "were killed]")  # fmt: skip
        return "\n".join(notes)

    @staticmethod
    def _task_count(lineage: dict) -> int:
        """Tasks (processes + threads) in the lineage's pids cgroup (one pread); -1 unknown."""
        counter = lineage.get("pids_fd")
        try:
            return int(os.pread(counter, 32, 0)) if counter is not None else -1
        except (OSError, ValueError):
            return -1

    def _kill_extra(self, cg: list[str], keep: set[int], extra: set[int]) -> int:
        """SIGKILL what a lineage runs besides ``keep``; how many processes that was."""
        if cg:
            return self._kill_cgroup(cg, keep)
        for pid in extra:
            _kill(pid)
        return len(extra)

    def op_session_run(self, req: dict, reply) -> None:
        s = self._session(req)
        if s is None:
            reply({"status": "dead", "stdout": "", "stderr": "", "duration": 0.0})
            return
        start = time.monotonic()
        deadline = start + float(req.get("timeout", s["limits"].get("timeout", 10.0)))

        def done(out: dict) -> None:
            note = _oom_note(out["oom"], s["limits"], "session") or out["note"]
            status = out["status"]
            if status is None:
                status = "ok" if out["reply"].get("ok") is True else "error"
            stderr = out["stderr"]
            if note:
                stderr += ("\n" if stderr and not stderr.endswith("\n") else "") + note + "\n"
                if self._session(req) is None and status in ("ok", "error"):
                    status = "dead"
            answer = {"status": status, "stdout": out["stdout"], "stderr": stderr,
                      "stdout_dropped": out["stdout_dropped"],
                      "stderr_dropped": out["stderr_dropped"],
                      "duration": time.monotonic() - start}  # fmt: skip
            digest = (out["reply"] or {}).get("digest")
            if status in ("ok", "error") and isinstance(digest, str):
                answer["digest"] = digest  # the variables after the cell (asked with it)
            reply(answer)

        msg = {"op": "run", "code": req["code"], "digest": bool(req.get("digest"))}
        self._lineage_op(s, lambda: self._session_call(s, msg, deadline, done))

    def op_session_digest(self, req: dict, reply) -> None:
        s = self._session(req)
        if s is None:
            reply({"status": "dead", "digest": None})
            return

        def done(out: dict) -> None:
            digest = (out["reply"] or {}).get("digest")
            status = out["status"] or "ok"
            reply({"status": status, "digest": digest if isinstance(digest, str) else None})

        # the caller's deadline (the session's cell timeout): a fixed few seconds cut healthy
        # sessions on a loaded host, and a cut session is gone
        wait = min(max(float(req.get("timeout") or 5.0), 1.0), 600.0)
        deadline = time.monotonic() + wait
        self._lineage_op(s, lambda: self._session_call(s, {"op": "digest"}, deadline, done))

    def op_session_fork(self, req: dict, reply) -> None:
        s = self._session(req)
        if s is None:
            reply({"status": "dead"})
            return
        deadline = time.monotonic() + 5.0  # the copy of the work dir happens first
        self._lineage_op(s, lambda: self._start_fork(s, deadline, reply))

    def _start_fork(self, s: dict, deadline: float, reply) -> None:
        lineage = self.lineages[s["uid"]]
        workdir = self._new_workdir(s["uid"], lineage["dir"])
        got_fds: list[int] = []

        def read_fork_reply() -> Any:
            try:
                msg, fds, _, _ = socket.recv_fds(s["ctl"], 4096, 3)
            except (BlockingIOError, InterruptedError):
                return _PENDING
            except OSError:
                return None
            got_fds.extend(fds)
            try:
                info = json.loads(msg[4:]) if len(msg) > 4 else {}
            except ValueError:
                info = None
            return {"fork": info} if isinstance(info, dict) else {"fork": None}

        def prepare(out: dict) -> None:
            """Check the copy and make it a session of its own, before the lineage sweep."""
            info = (out["reply"] or {}).get("fork") if out["status"] is None else None
            pid = info.get("pid") if isinstance(info, dict) else None
            pidfd = None
            ok = len(got_fds) == 3 and isinstance(pid, int) and not isinstance(pid, bool)
            # trust no pid the session reports: it must be a live child of the session
            # process, of the session's uid, not yet known; held by a pidfd from now on
            if ok:
                pidfd = _pidfd(pid)
                ok = pidfd is not None and self._is_fork_of(pid, s)
            if not ok:
                for fd in got_fds:
                    os.close(fd)
                if pidfd is not None:
                    os.close(pidfd)
                self._drop_session(s)
                lineage = self.lineages.get(s["uid"])
                if lineage is not None:
                    self._remove_later(workdir, lineage)
                out["fork_sid"] = None
                return
            self.counter += 1
            sid = f"s{self.counter}"
            child_ctl = socket.socket(fileno=got_fds[0])
            child_ctl.setblocking(False)
            for fd in got_fds[1:]:
                os.set_blocking(fd, False)
            self._add_session({
                "sid": sid, "pid": pid, "pidfd": pidfd, "uid": s["uid"], "workdir": workdir,
                "ctl": child_ctl, "out": got_fds[1], "err": got_fds[2], "limits": s["limits"],
                "buf": bytearray(), "watch": None,
            })  # fmt: skip
            self._signal(self.sessions[sid], signal.SIGSTOP)
            out["fork_sid"] = sid

        def done(out: dict) -> None:
            sid = out.get("fork_sid")
            reply({"status": "ok", "sid": sid} if sid else {"status": "dead"})

        self._session_call(
            s, {"op": "fork", "dir": workdir}, deadline, done, read_fork_reply, prepare
        )

    def _is_fork_of(self, pid: int, parent: dict) -> bool:
        """Whether ``pid`` is a new copy of session ``parent``: not a session already, not
        the worker, a child of the session's process, of the session's uid (all four)."""
        fields = _proc_status(pid)  # (empty once the process is gone)
        uids = set(fields.get("Uid", "").split())
        return (
            pid not in self.session_pids
            and pid != os.getpid()
            and fields.get("PPid", "").strip() == str(parent["pid"])
            and uids == ({str(parent["uid"])} if self.set_uid else uids)
        )

    def op_session_close(self, req: dict, reply) -> None:
        s = self._session(req)
        if s is not None:
            self._drop_session(s)
        reply({"status": "ok"})

    def _drop_session(self, s: dict) -> None:
        """End session ``s`` (kill its process, free its fds and files); when it was the last
        live member of its lineage, end the lineage; otherwise kill whatever the lineage runs
        besides its live members (unless an operation of another member is running)."""
        if self.sessions.get(s["sid"]) is not s:
            return
        uid = s["uid"]
        self._forget(s)
        lineage = self._settle_members(uid)
        if lineage is not None and not lineage["busy"]:
            self._sweep(uid)
        self._wait_children()

    def _settle_members(self, uid: int) -> dict | None:
        """Forget the lineage's members whose process is gone; end the lineage when no live
        member is left. Returns the lineage if it lives on."""
        lineage = self.lineages.get(uid)
        if lineage is None:
            return None
        for gone in self._dead_members(lineage):
            self._forget(gone)
        if not lineage["members"]:
            self._end_lineage(uid)
            return None
        return lineage

    def _dead_members(self, lineage: dict) -> list[dict]:
        """Members whose process has exited (killed by a sibling, say): they hold nothing."""
        members = list(lineage["members"].values())
        poll = select.poll()
        for m in members:
            if m.get("pidfd") is not None:
                poll.register(m["pidfd"], select.POLLIN)
        exited = {fd for fd, _ in poll.poll(_NOW)}
        return [m for m in members if m.get("pidfd") is None or m["pidfd"] in exited]

    def _forget(self, s: dict) -> None:
        """Kill session ``s``'s process and drop it from the books (not its lineage)."""
        sid = s["sid"]
        if self.sessions.get(sid) is not s:
            return
        del self.sessions[sid]
        uid = s["uid"]
        self.lineages[uid]["members"].pop(s["pid"], None)
        self.session_pids.pop(s["pid"], None)
        pidfd = s.get("pidfd")
        if pidfd is not None:
            try:  # noqa: SIM105
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except OSError:
                pass
        if s.get("watch") is not None:  # an operation in flight ends as "dead"
            s["watch"].finish(None)
        if pidfd is not None:
            os.close(pidfd)
            s["pidfd"] = None
        for key in ("out", "err"):
            try:  # noqa: SIM105
                os.close(s[key])
            except OSError:
                pass
        s["ctl"].close()
        lineage = self.lineages.get(uid)  # (an operation that ended above may have ended it)
        if lineage is not None and lineage["members"]:  # else: goes with the lineage dir
            self._remove_later(s["workdir"], lineage)

    def _end_lineage(self, uid: int) -> None:
        """The lineage has no live member left: kill everything in it and release its uid."""
        lineage = self.lineages.pop(uid, None)
        if lineage is None:
            return
        for key in ("pids_fd", "freeze_fd"):
            if lineage.get(key) is not None:
                os.close(lineage[key])
        for queued in lineage["queue"]:  # operations that waited for a lost lineage
            queued()
        again = [t for t in lineage.get("trashed", ()) if os.path.lexists(t)]
        self._release_uid(uid, lineage["cg"], [lineage["dir"]], again)

    # ---- misc ---------------------------------------------------------------------------

    def op_ping(self, req: dict, reply) -> None:
        """Stats; answered once no uid is still being released (so counts are settled)."""
        self.ping_waiters.append(reply)
        if not self.reaping:
            self._answer_pings()
        elif len(self.ping_waiters) == 1:
            self.at(time.monotonic() + 5.0, self._answer_pings)

    def _answer_pings(self) -> None:
        waiters, self.ping_waiters = self.ping_waiters, []
        if not waiters:
            return
        self._wait_children()
        spare_dirs = {os.path.basename(sp["workdir"]) for sp in self.spares}
        info = {"status": "ok", "pid": os.getpid(), "rss": _rss_bytes(),
                "sessions": len(self.sessions), "layers": self.cfg["layers"],
                "lineages": len(self.lineages),
                "busy_uids": len(self.busy_uids) - len(self.spares), "spares": len(self.spares),
                "waiting": len(self.waiting), "reaping": len(self.reaping),
                "workdirs": len([d for d in os.listdir(self.work_root)
                                 if d != ".trash" and d not in spare_dirs]),
                "trash": len(os.listdir(self.trash)),
                "removing": sum(self.remover.pending.values()),
                "remover_pid": self.remover.pid, "guard_pid": self.guard_pid,
                "guard": self.guard_pid in self.children, "hidepid": self.hidepid,
                "zygote_pid": self.zygote.pid if self.zygote is not None else -1,
                "cgroups": sum(len([d for d in os.listdir(r) if os.path.isdir(os.path.join(r, d))])
                               for r in self.cgroup_roots.values())
                           - sum(len(sp["cg"]) for sp in self.spares),
                "children": len([p for p in os.listdir("/proc") if p.isdigit()]),
                "landlock_abi": self.landlock}  # fmt: skip
        for reply in waiters:
            reply(info)


# --------------------------------------------------------------------------------------------
# what runs in the children


def _run_main(code: str, grade: dict | None) -> int:
    g = {"__name__": "__main__", "__builtins__": __builtins__}
    exit_code = 0
    try:
        _check_text(code)
        exec(compile(code, "<sandbox>", "exec"), g)
    except SystemExit as e:
        exit_code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if grade is not None:
            return exit_code
    except BaseException as exc:
        _print_exc(exc)
        return 1
    if grade is None:
        return exit_code
    sys.stdout.flush()
    fn = g.get(grade["fn"])
    out = os.fdopen(3, "w", buffering=1, encoding="utf-8")
    for i, args in enumerate(grade["calls"]):
        try:
            if not callable(fn):
                raise NameError(f"function {grade['fn']!r} is not defined")
            value = fn(*args)
            line = json.dumps({"i": i, "ok": True, "value": _plain(value)}, allow_nan=True)
        except BaseException as e:
            line = json.dumps({"i": i, "ok": False, "error": f"{type(e).__name__}: {e}"[:500]})
        out.write(line + "\n")
    out.flush()
    return 0


def _plain(value, depth: int = 0):
    """Reduce a return value to plain JSON data; anything else is refused (no custom __eq__)."""
    if depth > 50:
        raise ValueError("value nested too deeply")
    if value is None or type(value) in (bool, str):
        return value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int.__int__(value) if type(value) is not int else value
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, str):
        return str.__str__(value)
    if type(value) in (list, tuple):
        return [_plain(v, depth + 1) for v in value]
    if type(value) is dict:
        return {
            "__dict__": [[_plain(k, depth + 1), _plain(v, depth + 1)] for k, v in value.items()]
        }
    if type(value) in (set, frozenset):
        return {"__set__": sorted((_plain(v, depth + 1) for v in value), key=repr)}
    raise TypeError(f"return value of type {type(value).__name__} is not plain data")


def _parse_results(raw: bytes, n: int) -> list:
    """First well-formed line per test index; anything else is ignored."""
    results: list = [None] * n
    for line in raw.split(b"\n"):
        try:
            item = json.loads(line)
            i = item["i"]
            if isinstance(i, int) and 0 <= i < n and results[i] is None:
                results[i] = {"ok": bool(item.get("ok")), "value": item.get("value"),
                              "error": str(item.get("error", ""))[:500]}  # fmt: skip
        except Exception:
            continue
    return results


def _session_main(ctl_fd: int) -> int:
    """A session's loop: run cells sent on the control socket, answer on it.

    The cell's code may break the socket (close fd 3, point it elsewhere, replace this loop):
    then the session ends quietly and the worker rebuilds it; it never prints the jail's
    internals.
    """
    ctl = socket.socket(fileno=ctl_fd)
    g: dict = {"__name__": "__main__", "__builtins__": __builtins__}
    # Signals are blocked whenever no cell runs, and what arrived meanwhile (a timer that
    # fell due, SIGCONT, SIGCHLD of a killed child) is dropped before the next cell: no
    # handler of the agent runs outside a cell. (The freezer is what keeps the process off
    # the CPU between calls; this keeps a pending signal from running code at wake-up.)
    # The functions are bound here, before any cell could replace them.
    quiet = _SignalGate()
    quiet.close()
    while True:
        try:
            msg = read_frame(ctl.fileno())
        except Exception:
            return 0
        op = msg.get("op")
        if op == "run":
            ok = True
            _usable_stdio()
            quiet.open()
            try:
                _run_cell(msg["code"], g)
            except BaseException as exc:
                ok = False
                _usable_stdio()
                with contextlib.suppress(BaseException):
                    if isinstance(exc, SystemExit):
                        sys.stderr.write("SystemExit is not allowed in a session cell\n")
                    else:
                        _print_exc(exc)
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except BaseException:
                pass
            quiet.close()
            answer: dict = {"ok": ok}
            if msg.get("digest"):  # the variables it left, so no second call asks for them
                # (a value whose repr fails: no digest here; the digest op reports it)
                with contextlib.suppress(BaseException):
                    answer["digest"] = _digest(g)
        elif op == "digest":
            answer = {"ok": True, "digest": _digest(g)}
        elif op == "fork":
            try:
                ctl = _session_fork(ctl, str(msg.get("dir", "")))
            except OSError:
                return 0
            continue
        else:
            answer = {"ok": False}
        try:
            _reply(ctl, msg, answer)
        except OSError:
            return 0


_DRAIN_MAX = 4096
"""Pending signals dropped at most before a cell (a timer re-arming faster than this loop
would otherwise keep the cell from ever starting)."""


class _SignalGate:
    """Blocks every signal between cells and drops what arrived meanwhile before the next.

    The masks go through libc directly: ``signal.pthread_sigmask`` turns the old mask into a
    set of enum members, ~60 us a call, which would be most of a cell's cost."""

    def __init__(self) -> None:
        self.sigmask = _libc.pthread_sigmask
        self.every = ctypes.create_string_buffer(b"\xff" * 128, 128)  # (not KILL, STOP: kernel)
        self.agents = ctypes.create_string_buffer(128)
        """The mask the agent's code had when its last cell ended (empty at first)."""
        self.pending = signal.sigpending
        self.take = signal.sigtimedwait

    def close(self) -> None:
        """A cell ended: block everything, keeping the agent's mask for its next cell."""
        self.sigmask(signal.SIG_BLOCK, self.every, self.agents)

    def open(self) -> None:
        """A cell starts: drop what is pending, give the agent its mask back."""
        self.drop_pending()
        self.sigmask(signal.SIG_SETMASK, self.agents, None)

    def drop_pending(self) -> None:
        for _ in range(_DRAIN_MAX):  # queued real-time signals come one at a time
            waiting = self.pending()
            if not waiting:
                return
            self.take(waiting, 0)


def _reply(ctl: socket.socket, msg: dict, obj: dict) -> None:
    ctl.sendall(_MARK + str(msg.get("n", "")).encode() + frame(obj))


def _session_fork(ctl: socket.socket, workdir: str) -> socket.socket:
    ours, theirs = socket.socketpair()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    sync_r, sync_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setsid()  # its own process group: closing the parent must not kill the copy
        if workdir:  # its own copy of the work dir, made before the parent runs on
            old = os.getcwd()
            try:
                _copy_tree(old, workdir)
                os.chdir(workdir)
                os.environ.update({"HOME": workdir, "TMPDIR": workdir})
            except OSError as exc:
                sys.stderr.write(f"[fork: work dir not copied: {exc}]\n")
        os.close(sync_r)
        os.close(sync_w)  # tells the parent the copy is ready
        ctl.close()
        theirs.close()
        os.close(out_r)
        os.close(err_r)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.close(out_w)
        os.close(err_w)
        return ours
    os.close(sync_w)
    done = select.poll()  # the copy closes its end once its work dir is copied: EOF
    done.register(sync_r)
    done.poll()
    os.close(sync_r)
    socket.send_fds(ctl, [frame({"pid": pid})], [theirs.fileno(), out_r, err_r])
    for fd in (out_r, out_w, err_r, err_w):
        os.close(fd)
    theirs.close()
    ours.close()
    return ctl


def _run_cell(code: str, g: dict) -> None:
    """Run a cell like a notebook: the value of a final bare expression is printed."""
    import ast

    _check_text(code)
    tree = ast.parse(code, "<cell>", "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        tail = tree.body.pop()
        assert isinstance(tail, ast.Expr)
        last = ast.Expression(tail.value)
    exec(compile(tree, "<cell>", "exec"), g)
    if last is not None:
        value = eval(compile(last, "<cell>", "eval"), g)
        if value is not None:
            print(repr(value))


def _check_text(code: str) -> None:
    """Refuse code Python cannot compile because it is not valid text (a lone surrogate),
    with a message about the code rather than a traceback through the compiler."""
    try:
        code.encode("utf-8")
    except UnicodeEncodeError as exc:
        line = code.count("\n", 0, exc.start) + 1
        raise SyntaxError(
            f"line {line}: the code holds a character that is not valid text "
            f"(a lone surrogate, {code[exc.start]!a})"
        ) from None


def _digest(g: dict) -> str:
    """A digest of a session's variables: names, types and small values.

    The session's own code made every object here, so nothing of theirs is trusted: a key
    or value may be a subclass whose ``__repr__``, ``__lt__``, ``__len__`` or ``__class__``
    raises. Names are compared as plain strings and types found with ``type()``; a value
    whose description fails counts by its type's name. (Before, such a value ended the
    session when its digest was asked.)"""
    h = hashlib.blake2b(digest_size=16)
    names = [(str.__str__(k), v) for k, v in list(g.items()) if issubclass(type(k), str)]
    for name, v in sorted(names, key=lambda item: item[0]):
        if name.startswith("__"):
            continue
        try:
            desc = _describe(v)
        except BaseException:
            desc = type.__dict__["__name__"].__get__(type(v))
        h.update(f"{name}={desc}\n".encode("utf-8", "replace"))
    return h.hexdigest()


def _describe(v: Any) -> str:
    """``v``'s repr (cut to 256 characters) for small plain values, else its type's name."""
    t = type(v)
    if issubclass(t, (int, float, str, bool, type(None), complex)):
        try:
            return repr(v)[:256]
        except ValueError:  # an int past the digit limit of int-to-str conversion
            return f"{t.__name__}:{v.bit_length() if issubclass(t, int) else 0}"
    if issubclass(t, (list, tuple, dict, set)) and len(v) < 64:
        text = repr(v)
        return text[:256] if " at 0x" not in text else t.__name__
    return t.__name__


# --------------------------------------------------------------------------------------------
# process helpers


def _write(path: str, text: str) -> None:
    """Write ``text`` to a kernel file (a cgroup's or /proc's) in one system call. (No
    file object: a session writes four of these before its first read, and every object
    it touches is a page copied from the zygote.)"""
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _session_environ(workdir: str) -> dict[str, str]:
    """The whole environment of a confined process: no variable of the host's."""
    return {"PATH": PATH_ENV, "HOME": workdir, "TMPDIR": workdir, "LANG": "C.UTF-8",
            "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}  # fmt: skip


def _set_environ(env: dict[str, str]) -> None:
    """Make ``os.environ`` equal ``env``, changing only what differs: a zygote's session
    finds all but its work dir set already, and each change copies pages of the zygote's
    (the C environment's array and strings, ``os.environ``'s dict)."""
    for key in [key for key in os.environ if key not in env]:
        del os.environ[key]
    for key, value in env.items():
        if os.environ.get(key) != value:
            os.environ[key] = value


def _read(path: str) -> bytes:
    """A kernel file's text (a cgroup's or /proc's: small) in one system call, as
    :func:`_write` writes one."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 1 << 16)
    finally:
        os.close(fd)


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None


def _alive(pidfd: int | None) -> bool:
    """Whether the process of ``pidfd`` still runs (a pidfd turns readable when it exits)."""
    if pidfd is None:
        return False
    poll = select.poll()
    poll.register(pidfd, select.POLLIN)
    return not poll.poll(_NOW)


def _open_counter(cg: list[str]) -> int | None:
    """An fd on the pids cgroup's ``pids.current`` (read with pread), or None."""
    for path in cg:
        try:
            return os.open(os.path.join(path, "pids.current"), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
    return None


SPARES = 2
"""Run processes a worker keeps forked and in their cgroups, for the next one-shot runs."""
_SPARE_JOB_MAX = 60 << 10
"""A run handed to a spare must fit its (empty, 64 KiB) pipe: the write never blocks."""
_NEAR = 1 << 20
"""How close to its limit a cgroup's peak must be to say it ran out of its own quota."""
_SLACK = 64 << 20
"""What a session's or run's memory cgroup allows on top of ``memory + disk`` (the warm
interpreter's own pages, page tables, kernel memory)."""
_NOW = 0
"""A poll timeout that does not wait."""


def _oom_cause(cg: list[str]) -> str | None:
    """Whether the OOM killer ran in the memory cgroup among ``cg`` and why: "own" (the
    cgroup reached its own limit), "worker" (the worker as a whole ran out: neighbours'
    memory, not this one's quota) or None (no OOM kill here)."""
    for path in cg:
        try:
            with open(os.path.join(path, "memory.oom_control")) as fh:
                kills = [int(line.split()[1]) for line in fh if line.startswith("oom_kill ")]
            if not kills or kills[0] == 0:
                return None
            # its peak reached its own limit (within a page or two): its own quota ran out
            peak = int(_read(os.path.join(path, "memory.max_usage_in_bytes")))
            limit = int(_read(os.path.join(path, "memory.limit_in_bytes")))
            return "own" if peak + _NEAR >= limit else "worker"
        except (OSError, ValueError):
            continue
    return None


def _oom_note(cause: str | None, limits: dict, what: str) -> str:
    """The observation line for an OOM kill, blaming what really ran out."""
    if cause is None:
        return ""
    again = "; it will be rebuilt from the previous cells" if what == "session" else ""
    if cause == "own":
        quota = (int(limits.get("memory", 0)) + int(limits.get("disk", 0))) >> 20
        return (f"[the {what} was killed: its memory plus files reached its quota of "
                f"{quota} MB{again}]")  # fmt: skip
    return (f"[the {what} was killed: the sandbox worker ran out of memory (other runs and "
            f"sessions hold it, not this {what}'s quota){again}]")  # fmt: skip


def _threads(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def _print_exc(exc: BaseException) -> None:
    """Print a traceback without the jail's own frames (the model sees only its code)."""
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__)
    seen: set[int] = set()
    todo = [te]
    while todo:  # this exception and every one chained to it
        cur = todo.pop()
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        cur.stack = traceback.StackSummary.from_list(
            [f for f in cur.stack if f.filename != __file__]
        )
        todo += [e for e in (cur.__cause__, cur.__context__) if e is not None]
        todo += list(getattr(cur, "exceptions", None) or [])
    sys.stderr.write("".join(te.format()))


def _copy_tree(src: str, dst: str) -> None:
    """Copy a work dir: regular files, directories and symlinks (never followed)."""
    with os.scandir(src) as it:
        for entry in it:
            target = os.path.join(dst, entry.name)
            try:
                if entry.is_symlink():  # first: below, nothing is a symlink
                    os.symlink(os.readlink(entry.path), target)
                elif entry.is_dir():
                    os.mkdir(target, 0o700)
                    _copy_tree(entry.path, target)
                elif entry.is_file():
                    shutil.copyfile(entry.path, target)
                    shutil.copymode(entry.path, target)
            except OSError as exc:
                sys.stderr.write(f"[fork: {entry.name} not copied: {exc}]\n")


def _open_fds() -> list[int]:
    try:
        return [int(x) for x in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 1024))


def _kill(pid: int) -> None:
    try:  # noqa: SIM105
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _waitpid(pid: int) -> int:
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except InterruptedError:
            continue
        except ChildProcessError:
            return 0


def _procs_of(uid: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    out.append(int(name))
            except OSError:
                pass
    return out


def _decode_status(status: int) -> tuple[int | None, int | None]:
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status)
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status), None
    return None, None


def _status_field(name: str) -> int:
    """A size field of /proc/self/status (``"VmSize:"``) in bytes; 0 when absent."""
    text = _read("/proc/self/status")
    at = text.find(b"\n" + name.encode())
    if at < 0:
        return 0
    return int(text[at:].split(None, 2)[1]) * 1024


def _vm_bytes() -> int:
    return _status_field("VmSize:")


def _rss_bytes() -> int:
    return _status_field("VmRSS:")


def main() -> None:
    cfg = json.loads(sys.argv[1])
    rfd, wfd = os.dup(0), os.dup(1)
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    for key, value in {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                       "MKL_NUM_THREADS": "1"}.items():  # fmt: skip
        os.environ[key] = value
    # before anything else: the only step that needs CAP_SYS_ADMIN (dropped below)
    hidepid = bool(cfg["layers"].get("jailed")) and hide_other_processes()
    for path in cfg.get("site", []):
        if path not in sys.path:
            sys.path.append(path)
    for mod in cfg.get("preload", []):
        try:  # noqa: SIM105
            __import__(mod)
        except Exception:
            pass
    if "numpy" in sys.modules:
        sys.modules["numpy"].arange(10).sum()
    if "sympy" in sys.modules:
        sym = sys.modules["sympy"]
        sym.simplify(sym.Symbol("x") ** 2 - sym.Symbol("x") ** 2 + sym.Rational(1, 3))
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    listener = None
    if cfg["layers"].get("seccomp"):
        numbers = syscall_numbers(cfg.get("libseccomp"))
        listener = install_seccomp(cfg.get("libseccomp"), guard=True)
    worker = Worker(cfg, wfd)
    worker.hidepid = hidepid
    if listener is not None:
        worker.guard_pid = _start_guard(listener, worker.work_root, numbers)
        worker.children.add(worker.guard_pid)
        os.close(listener)  # the guard holds the only copy: if it dies, guarded calls fail
    with contextlib.suppress(OSError):
        drop_capabilities(_CAP_SYS_ADMIN, _CAP_SYS_PTRACE)
    gc.collect()
    gc.freeze()
    if cfg.get("zygote", True):  # forked warm, once everything above is in place
        worker.zygote = Zygote(worker)
        worker.zygote.start()
    worker.at(time.monotonic(), worker._replenish)  # the first spare run processes
    worker.outbox.send({"status": "ready", "pid": os.getpid(), "landlock_abi": worker.landlock,
                        "hidepid": hidepid, "guard": worker.guard_pid > 0})  # fmt: skip
    worker.serve(rfd)


def _die_with_parent() -> None:
    """A helper of the worker ends with it (the jail's init waits for every process)."""
    parent = os.getppid()
    _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the worker died before the line above
        os._exit(0)


def _start_guard(listener: int, work_root: str, numbers: dict[int, str]) -> int:
    """Fork the syscall guard (see :func:`guard_main`); its pid."""
    pid = os.fork()
    if pid == 0:
        try:
            for fd in _open_fds():
                if fd not in (listener, 2):
                    with contextlib.suppress(OSError):
                        os.close(fd)
            _die_with_parent()
            _libc.prctl(15, b"sbx-guard", 0, 0, 0)  # PR_SET_NAME
            with contextlib.suppress(OSError):
                drop_capabilities(_CAP_SYS_ADMIN)
            guard_main(listener, work_root, numbers)
        finally:
            os._exit(0)
    return pid


if __name__ == "__main__":
    main()
