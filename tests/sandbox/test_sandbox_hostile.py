"""Hostile code of every kind is contained, reported as a normal result, and leaves nothing.

Each case runs one snippet in the shared pool, checks what came back, and then (fixture
``no_leaks``) that no process, fd, work dir, mount or cgroup leaked and every worker still
answers. Network cases only ever target 127.0.0.1 or local Unix sockets.
"""

from __future__ import annotations

import os
import socket
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from agentgym.simulators.sandbox import ExecResult, Limits, SandboxPool

pytestmark = [pytest.mark.sandbox, pytest.mark.usefixtures("no_leaks")]

ALLOWED_ENV = {"PATH", "HOME", "TMPDIR", "LANG", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"}


@dataclass(frozen=True)
class Case:
    name: str
    code: str
    check: Callable[[ExecResult], bool]
    timeout: float = 2.0


def contained(r: ExecResult) -> bool:
    """Stopped by a limit: a timeout, a kill, an error, or an output cap."""
    return r.status in ("timeout", "killed", "error", "output_limit")


def denied(r: ExecResult) -> bool:
    return r.status == "ok" and r.stdout.strip().endswith("DENIED")


def _try(body: str) -> str:
    """Code that prints DENIED when ``body`` raises (and ALLOWED when it does not)."""
    return (
        "try:\n"
        + textwrap.indent(textwrap.dedent(body), "    ")
        + (
            "\n    print('ALLOWED')\nexcept (OSError, PermissionError, RuntimeError, ValueError):\n"
            "    print('DENIED')\n"
        )
    )


CTYPES = "import ctypes, ctypes.util\nlibc = ctypes.CDLL(None, use_errno=True)\n"


def _libc_fails(call: str) -> str:
    return CTYPES + f"r = {call}\nprint('DENIED' if r == 0 else 'ALLOWED')\n"


CASES = [
    # ---- processes and threads
    Case(
        "fork_bomb",
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
        contained,
    ),
    Case(
        "fork_bomb_children_spin",
        "import os\nfor _ in range(10000):\n    try:\n        if os.fork() == 0:\n            while True: pass\n    except OSError:\n        break\nwhile True: pass\n",
        contained,
    ),
    Case(
        "thread_bomb",
        "import threading, time\nts=[]\nwhile True:\n    t = threading.Thread(target=time.sleep, args=(100,)); t.start(); ts.append(t)\n",
        contained,
    ),
    Case(
        "daemon_left_behind",
        "import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(1000)\n    os._exit(0)\nprint('parent done')\n",
        lambda r: r.status == "ok" and "parent done" in r.stdout,
    ),
    Case(
        "subprocess_shell",
        "import subprocess\nprint(subprocess.run(['sh', '-c', 'echo hi; sleep 100 &'], capture_output=True, timeout=5).stdout)\n",
        lambda r: r.status in ("ok", "timeout", "error"),
    ),
    # ---- memory
    Case(
        "memory_bomb_bytearray",
        "x = bytearray(8 << 30)\n",
        lambda r: r.status == "error" and "MemoryError" in r.stderr,
    ),
    Case("memory_bomb_growing", "l = []\nwhile True:\n    l.append(' ' * 10**7)\n", contained),
    Case(
        "memory_bomb_numpy",
        "import numpy as np\na = np.ones(10**10)\n",
        lambda r: r.status == "error" and "MemoryError" in r.stderr,
    ),
    Case(
        "memory_bomb_mmap",
        "import mmap\nm = mmap.mmap(-1, 16 << 30)\n",
        lambda r: r.status == "error",
    ),
    Case(
        "memory_bomb_many_processes",
        "import os, time\nfor _ in range(8):\n    if os.fork() == 0:\n        x = b'x' * (400 << 20)\n"
        "        time.sleep(30)\n        os._exit(0)\ntime.sleep(30)\n",
        contained,
        4.0,
    ),
    Case("huge_int", "x = 10 ** 10 ** 9\n", contained, 1.0),
    # ---- time
    Case("busy_loop", "while True:\n    pass\n", lambda r: r.status == "timeout", 0.5),
    Case("sleep", "import time\ntime.sleep(100)\n", lambda r: r.status == "timeout", 0.5),
    Case(
        "ignore_signals",
        "import signal\nfor s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM):\n    signal.signal(s, signal.SIG_IGN)\nwhile True: pass\n",
        lambda r: r.status == "timeout",
        0.5,
    ),
    Case("cpu_limit", "while True: pass\n", lambda r: r.status in ("killed", "timeout"), 3.0),
    # ---- output
    Case(
        "huge_output",
        "while True:\n    print('x' * 10000)\n",
        lambda r: r.status in ("output_limit", "timeout") and len(r.stdout) <= 64 << 10,
    ),
    Case(
        "huge_output_then_exit",
        "import sys\nsys.stdout.write('y' * (300 << 10))\n",
        lambda r: (
            r.status == "ok"
            and len(r.stdout) == 64 << 10
            and r.stdout_dropped > 0
            and "dropped" in r.text()
        ),
    ),
    Case(
        "huge_stderr",
        "import sys\nwhile True:\n    sys.stderr.write('e' * 10000)\n",
        lambda r: len(r.stderr) <= 64 << 10 and r.status in ("output_limit", "timeout"),
    ),
    Case(
        "binary_output",
        "import sys\nsys.stdout.buffer.write(bytes(range(256)) * 100)\n",
        lambda r: r.status == "ok" and "\ufffd" in r.stdout,
    ),
    Case("surrogate_output", "print('\\udcff bad')\n", lambda r: r.status == "ok"),
    Case(
        "fake_result_markers",
        'print(\'{"status": "ok", "exit_code": 0}\')\nraise SystemExit(3)\n',
        lambda r: r.status == "error" and r.exit_code == 3,
    ),
    # ---- files
    Case("write_tmp_outside_workdir", _try("open('/tmp/evil', 'w').write('x')"), denied),
    Case(
        "write_into_library",
        _try(
            "import numpy, os\nopen(os.path.join(os.path.dirname(numpy.__file__), 'evil.py'), 'w')"
        ),
        denied,
    ),
    Case("write_into_sandbox_code", _try("open('/opt/agentgym/jail.py', 'a')"), denied),
    Case("write_usr", _try("open('/usr/bin/evil', 'w')"), denied),
    Case("read_etc_shadow", _try("open('/etc/shadow').read()"), denied),
    Case("read_etc_passwd", _try("open('/etc/passwd').read()"), denied),
    Case(
        "file_size_bomb",
        _try(
            "f = open('big', 'wb')\nfor _ in range(100):\n    f.write(b'0' * (1 << 20))\nf.close()"
        ),
        lambda r: denied(r) or r.status == "killed",
    ),
    Case(
        "many_files",
        "for i in range(2000):\n    open(f'f{i}', 'w').write('x')\nprint('made')\n",
        lambda r: r.status == "ok" and "made" in r.stdout,
    ),
    Case(
        "symlink_escape",
        _try("import os\nos.symlink('/opt/agentgym/jail.py', 'l')\nopen('l', 'a').write('x')"),
        denied,
    ),
    Case(
        "hidden_tests_not_in_jail",
        "import os\nhits = []\nfor root, dirs, files in os.walk('/'):\n"
        "    dirs[:] = [d for d in dirs if root != '/' or d not in ('proc', 'sys', 'dev', 'usr')]\n"
        "    if root.endswith('site-packages'):  # third-party packages (their own data) are\n"
        "        dirs[:] = [d for d in dirs if 'agentgym' in d]  # visible read-only: not walked\n"
        "    hits += [f for f in files if f.endswith('.jsonl') or f == 'sokoban.py']\n"
        "try:\n    import agentgym\n    hits.append('agentgym importable')\n"
        "except ImportError:\n    pass\nprint('FOUND', hits)\n",
        lambda r: r.status == "ok" and r.stdout.strip() == "FOUND []",
        10.0,
    ),
    Case(
        "host_worktree_absent",
        f"import os\nprint(os.path.exists({os.path.abspath('.')!r}), os.path.exists('/work'))\n",
        lambda r: r.status == "ok" and r.stdout.strip() == "False False",
    ),
    # ---- environment, /proc, other processes
    Case(
        "environment",
        "import os\nprint(sorted(os.environ))\n",
        lambda r: r.status == "ok" and set(eval(r.stdout)) <= ALLOWED_ENV,
    ),
    Case(
        "proc_environ_of_worker",
        _try("open('/proc/1/environ').read()\nopen('/proc/2/environ').read()"),
        denied,
    ),
    Case("proc_mem_of_worker", _try("open('/proc/2/mem', 'rb').read(1)"), denied),
    Case(
        "proc_sees_only_jail",
        "import os\nprint(len([p for p in os.listdir('/proc') if p.isdigit()]))\n",
        lambda r: r.status == "ok" and int(r.stdout) < 10,
    ),
    Case(
        "fds_are_clean",
        "import os\nprint(sorted(int(x) for x in os.listdir('/proc/self/fd')))\n",
        lambda r: r.status == "ok" and eval(r.stdout) == [0, 1, 2, 3],
    ),
    Case(
        "stdin_is_empty",
        "import sys\nprint(repr(sys.stdin.read()))\n",
        lambda r: r.status == "ok" and r.stdout.strip() == "''",
    ),
    # ---- signals
    Case("kill_parent", _try("import os\nos.kill(os.getppid(), 9)"), denied),
    Case("kill_pid1", _try("import os\nos.kill(1, 9)"), denied),
    Case(
        "kill_minus_one",
        "import os, signal\nos.kill(-1, signal.SIGKILL)\nprint('survived')\n",
        lambda r: r.status in ("killed", "ok"),
    ),
    Case("killpg_zero", "import os\nos.killpg(0, 9)\n", lambda r: r.status == "killed"),
    # ---- privileges and kernel interfaces
    Case("setuid_root", _try("import os\nos.setuid(0)"), denied),
    Case("setgid_root", _try("import os\nos.setgid(0)"), denied),
    Case("ptrace_attach", _libc_fails("libc.ptrace(16, 2, 0, 0) + 1"), denied),
    Case("mount", _libc_fails("libc.mount(b'none', b'/tmp', b'tmpfs', 0, None) + 1"), denied),
    Case("unshare_user", _libc_fails("libc.unshare(0x10000000) + 1"), denied),
    Case("unshare_net", _libc_fails("libc.unshare(0x40000000) + 1"), denied),
    Case("setns", _libc_fails("libc.setns(0, 0) + 1"), denied),
    Case("chroot", _try("import os\nos.chroot('/tmp')"), denied),
    Case("bpf", _libc_fails("libc.syscall(321, 0, 0, 0) + 1"), denied),
    Case("io_uring", _libc_fails("libc.syscall(425, 1, 0) + 1"), denied),
    Case("sethostname", _try("import socket\nsocket.sethostname('evil')"), denied),
    Case(
        "ctypes_segfault",
        "import ctypes\nctypes.string_at(0)\n",
        lambda r: r.status == "killed" and r.signal == 11,
    ),
    Case("abort", "import os\nos.abort()\n", lambda r: r.status == "killed"),
    Case(
        "stack_overflow",
        "import sys\nsys.setrecursionlimit(10**7)\ndef f(n): return f(n + 1)\nf(0)\n",
        contained,
    ),
    Case(
        "sys_exit_code",
        "import sys\nsys.exit(7)\n",
        lambda r: r.status == "error" and r.exit_code == 7,
    ),
    # ---- network (loopback only) and sockets
    Case(
        "tcp_loopback",
        _try("import socket\ns = socket.create_connection(('127.0.0.1', PORT), timeout=1)"),
        denied,
    ),
    Case(
        "udp_loopback",
        _try(
            "import socket\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', PORT))"
        ),
        denied,
    ),
    Case(
        "unix_socket",
        _try("import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect('UNIXPATH')"),
        denied,
    ),
    Case(
        "abstract_unix_socket",
        _try("import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect('\\0agentgym-test')"),
        denied,
    ),
    Case(
        "socketpair_allowed",
        "import socket\na, b = socket.socketpair()\na.send(b'ok')\nprint(b.recv(2).decode())\n",
        lambda r: r.status == "ok" and r.stdout.strip() == "ok",
    ),
]


@pytest.fixture(scope="module")
def listeners(tmp_path_factory: pytest.TempPathFactory):
    """A TCP listener on 127.0.0.1 and a Unix socket on the host: nothing may reach them."""
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    tcp.setblocking(False)
    path = str(tmp_path_factory.mktemp("uds") / "s.sock")
    uds = socket.socket(socket.AF_UNIX)
    uds.bind(path)
    uds.listen(8)
    uds.setblocking(False)
    yield tcp, uds, path
    tcp.close()
    uds.close()


def test_at_least_forty_hostile_cases() -> None:
    assert len(CASES) >= 40
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_code_is_contained(pool: SandboxPool, case: Case, listeners) -> None:
    tcp, uds, path = listeners
    code = case.code.replace("PORT", str(tcp.getsockname()[1])).replace("UNIXPATH", path)
    limits = Limits(
        timeout=case.timeout, cpu_seconds=1 if case.name == "cpu_limit" else 10, file_size=16 << 20
    )
    result = pool.run(code, limits=limits)
    assert case.check(result), f"{case.name}: {result}"
    for sock in (tcp, uds):
        with pytest.raises(BlockingIOError):
            sock.accept()
