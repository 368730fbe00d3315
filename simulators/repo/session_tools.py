"""The tools' code inside a RepoFix sandbox session (standard library only).

The host sends this module's *text* as a session's first cell; its functions then live in
the session and each tool call is one more cell calling one of them. Arguments arrive as
base64 (any text the model wrote, lone surrogates included, travels safely) and every answer
is one JSON line after a marker, printed last. The agent never runs Python in the session
process itself: its ``bash`` commands run in child processes, so these functions cannot be
replaced by the agent, only the files they read.

Everything here runs jailed, with the session's uid, inside its work directory.
"""

import base64
import contextlib
import hashlib
import json
import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import time
import zlib

_AG_MARK = "\x1e__AGENTGYM_REPO__"
#: Folders that hold caches or tool state, not the project: left out of digests and dumps.
_AG_SKIP = {".git", "__pycache__", ".pytest_cache", ".tmp", ".mypy_cache", ".ruff_cache"}
_AG_GIT_DATE = "2024-01-01T00:00:00+00:00"


def _ag_root():
    try:
        return os.getcwd()
    except OSError:
        return os.environ.get("HOME", "/")


def _ag_text(b64):
    return base64.b64decode(b64).decode("utf-8", "replace")


def _ag_reply(obj):
    obj.setdefault("root", _ag_root())  # the host shows this path as ~
    sys.stdout.write("\n" + _AG_MARK + json.dumps(obj) + "\n")


#: Entries a walk visits at most (a tree of millions of files must not stall every call).
_AG_MAX_ENTRIES = 50_000


def _ag_walk(root):
    """(relative path, full path, lstat) of every entry under ``root``, sorted, caches out."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        if len(out) >= _AG_MAX_ENTRIES:
            break
        dirnames[:] = sorted(d for d in dirnames if d not in _AG_SKIP)
        for name in sorted(dirnames + filenames):
            full = os.path.join(dirpath, name)
            try:
                info = os.lstat(full)
            except OSError:
                continue
            out.append((os.path.relpath(full, root), full, info))
    return out


def _ag_digest(cwd):
    """A digest of the project's files (names, kinds, contents) and the shell's directory."""
    root = _ag_root()
    h = hashlib.sha256(("cwd\0" + cwd + "\0").encode("utf-8", "replace"))
    for rel, full, info in _ag_walk(root):
        h.update(rel.encode("utf-8", "surrogateescape") + b"\0")
        if stat.S_ISLNK(info.st_mode):
            h.update(b"L" + os.readlink(full).encode("utf-8", "surrogateescape"))
        elif stat.S_ISREG(info.st_mode):
            f = hashlib.sha256()
            try:
                with open(full, "rb") as fh:
                    for chunk in iter(lambda: fh.read(1 << 20), b""):
                        f.update(chunk)
            except OSError:
                f.update(b"unreadable")
            h.update(b"F" + f.digest())
        elif stat.S_ISDIR(info.st_mode):
            h.update(b"D")
        else:
            h.update(b"?")
    return h.hexdigest()[:32]


def _ag_env(root):
    tmp = os.path.join(root, ".tmp")
    os.makedirs(tmp, exist_ok=True)
    path = os.path.dirname(sys.executable) + ":/usr/local/bin:/usr/bin:/bin"
    return {
        "PATH": path,
        "HOME": root,
        "TMPDIR": tmp,
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "PAGER": "cat",
        "GIT_PAGER": "cat",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "agent",
        "GIT_AUTHOR_EMAIL": "agent@localhost",
        "GIT_COMMITTER_NAME": "agent",
        "GIT_COMMITTER_EMAIL": "agent@localhost",
    }


def _ag_setup(files_b64, git):
    """Write the starting files (and commit them to a fresh git repository)."""
    root = _ag_root()
    files = json.loads(zlib.decompress(base64.b64decode(files_b64)))
    for rel, text in files.items():
        full = os.path.join(root, rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as fh:
            fh.write(text)
    has_git = bool(git) and shutil.which("git", path=_ag_env(root)["PATH"]) is not None
    if has_git:
        env = dict(_ag_env(root), GIT_AUTHOR_DATE=_AG_GIT_DATE, GIT_COMMITTER_DATE=_AG_GIT_DATE)
        for args in (
            ["init", "-q", "--template="],
            ["add", "-A"],
            ["commit", "-q", "-m", "Initial commit"],
        ):
            subprocess.run(
                ["git", *args],
                cwd=root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
        os.makedirs(os.path.join(root, ".git", "info"), exist_ok=True)
        with open(os.path.join(root, ".git", "info", "exclude"), "w") as fh:
            fh.write("__pycache__/\n.tmp/\n.pytest_cache/\n")
    _ag_reply({"digest": _ag_digest("."), "git": has_git})


def _ag_read_all(proc, out_fd, cwd_fd, deadline, cap):
    """Collect output (head and tail up to ``cap`` bytes) until the command ends or the
    deadline passes; returns (head, tail, dropped, cwd bytes, timed out)."""
    head, tail, dropped, cwd = bytearray(), bytearray(), 0, bytearray()
    fds = {out_fd, cwd_fd}
    exited_at = None
    while fds:
        now = time.monotonic()
        if proc.poll() is not None and exited_at is None:
            exited_at = now
        if exited_at is not None and now - exited_at > 0.2:
            break  # the command is done; a background child holding the pipe is not waited for
        if now >= deadline:
            return head, tail, dropped, cwd, True
        ready, _, _ = select.select(list(fds), [], [], min(0.05, deadline - now))
        for fd in ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                fds.discard(fd)
            elif fd == cwd_fd:
                cwd += chunk[:4096]
            elif len(head) < cap // 2:
                room = cap // 2 - len(head)
                head += chunk[:room]
                tail += chunk[room:]
            else:
                tail += chunk
            if len(tail) > cap // 2:
                dropped += len(tail) - cap // 2
                del tail[: len(tail) - cap // 2]
    return head, tail, dropped, cwd, False


def _ag_bash(cmd_b64, cwd, timeout, cap):
    """Run one shell command in the session's directory; the directory persists."""
    root = _ag_root()
    start_dir = os.path.normpath(os.path.join(root, cwd))
    if not os.path.isdir(start_dir):
        start_dir, cwd = root, "."
    out_r, out_w = os.pipe()
    cwd_r, cwd_w = os.pipe()
    script = f'__ag_cmd=$1; shift; trap "pwd >&{cwd_w}" EXIT\neval "$__ag_cmd"'
    try:
        proc = subprocess.Popen(
            ["bash", "-c", script, "bash", _ag_text(cmd_b64).replace("\0", "")],
            cwd=start_dir,
            env=_ag_env(root),
            stdin=subprocess.DEVNULL,
            stdout=out_w,
            stderr=out_w,
            pass_fds=(cwd_w,),
            start_new_session=True,
        )
    except OSError as exc:
        for fd in (out_r, out_w, cwd_r, cwd_w):
            os.close(fd)
        _ag_reply({"error": f"could not start bash: {exc}", "digest": _ag_digest(cwd)})
        return
    os.close(out_w)
    os.close(cwd_w)
    deadline = time.monotonic() + float(timeout)
    head, tail, dropped, new_cwd, timed_out = _ag_read_all(proc, out_r, cwd_r, deadline, cap)
    if timed_out or proc.poll() is None:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
    rc = proc.wait()
    os.close(out_r)
    os.close(cwd_r)
    where = new_cwd.decode("utf-8", "replace").strip().splitlines()
    if where and not timed_out and os.path.isdir(where[-1]):
        rel = os.path.relpath(where[-1], root)
        cwd = where[-1] if rel.startswith("..") else rel
    text = head.decode("utf-8", "replace")
    if dropped:
        text += f"\n[... {dropped} bytes of output cut ...]\n"
    text += tail.decode("utf-8", "replace")
    _ag_reply(
        {
            "out": text,
            "rc": rc,
            "timed_out": timed_out,
            "cwd": cwd,
            "root": root,
            "digest": _ag_digest(cwd),
        }
    )


def _ag_resolve(path, root):
    """An absolute path for what the model wrote: relative to the project, ``~/...`` or
    absolute."""
    if path == "~" or path.startswith("~/"):
        path = root + path[1:]
    return os.path.normpath(os.path.join(root, path))


def _ag_inside(full, root):
    return full == root or full.startswith(root.rstrip("/") + "/")


def _ag_show(full, root):
    return "~" + full[len(root) :] if _ag_inside(full, root) else full


def _ag_listing(full, root, limit=400):
    lines = []
    for rel, _, info in _ag_walk(full):
        if rel.count(os.sep) > 1 or any(part.startswith(".") for part in rel.split(os.sep)):
            continue
        lines.append(rel + ("/" if stat.S_ISDIR(info.st_mode) else ""))
    extra = f"\n[... {len(lines) - limit} more entries]" if len(lines) > limit else ""
    head = f"Files and folders in {_ag_show(full, root)}, two levels deep (hidden ones left out):"
    return head + "\n" + "\n".join(lines[:limit]) + extra


def _ag_numbered(lines, first):
    return "\n".join(f"{n:6}\t{line}" for n, line in enumerate(lines, start=first))


def _ag_view(path_b64, start, end, cwd):
    """A file with line numbers (optionally lines ``start``..``end``), or a directory."""
    root = _ag_root()
    full = _ag_resolve(_ag_text(path_b64), root)
    if os.path.isdir(full):
        _ag_reply({"out": _ag_listing(full, root), "digest": _ag_digest(cwd)})
        return
    try:
        with open(full, "rb") as fh:
            data = fh.read(4 << 20)
    except OSError as exc:
        _ag_reply(
            {
                "error": f"cannot read {_ag_show(full, root)}: {exc.strerror or exc}",
                "digest": _ag_digest(cwd),
            }
        )
        return
    if b"\0" in data[:8192]:
        _ag_reply(
            {
                "out": f"{_ag_show(full, root)} is a binary file ({len(data)} bytes).",
                "digest": _ag_digest(cwd),
            }
        )
        return
    lines = data.decode("utf-8", "replace").splitlines()
    first = 1
    if start is not None:
        last = len(lines) if end is None or end == -1 else end
        if not 1 <= start <= max(1, len(lines)) or last < start:
            _ag_reply(
                {
                    "error": f"view_range [{start}, {end}] is outside the file's "
                    f"{len(lines)} lines",
                    "digest": _ag_digest(cwd),
                }
            )
            return
        lines, first = lines[start - 1 : last], start
    _ag_reply({"out": _ag_numbered(lines, first), "digest": _ag_digest(cwd)})


def _ag_write(full, text):
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as fh:
        fh.write(text)


def _ag_editable(path_b64, root, cwd):
    """The absolute path to edit, or None after replying with why it cannot be edited."""
    full = _ag_resolve(_ag_text(path_b64), root)
    if not _ag_inside(full, root) or full == root:
        _ag_reply(
            {
                "error": f"{_ag_show(full, root)} is outside the repository (~); only "
                "files in it can be edited",
                "digest": _ag_digest(cwd),
            }
        )
        return None
    return full


def _ag_replace(path_b64, old_b64, new_b64, cwd):
    """Replace the one occurrence of ``old`` in a file with ``new``."""
    root = _ag_root()
    full = _ag_editable(path_b64, root, cwd)
    if full is None:
        return
    old, new = _ag_text(old_b64), _ag_text(new_b64)
    try:
        with open(full, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        _ag_reply(
            {"error": f"cannot read {_ag_show(full, root)}: {why}", "digest": _ag_digest(cwd)}
        )
        return
    count = text.count(old) if old else 0
    if count != 1:
        if not old:
            why = "old_str is empty"
        elif count == 0:
            why = f"old_str was not found in {_ag_show(full, root)}"
        else:
            at, lines = 0, []
            for _ in range(count):
                at = text.index(old, at)
                lines.append(str(text.count("\n", 0, at) + 1))
                at += 1
            why = (
                f"old_str occurs {count} times in {_ag_show(full, root)} (lines "
                f"{', '.join(lines)}); include more context to make it unique"
            )
        _ag_reply({"error": why + "; no edit was made", "digest": _ag_digest(cwd)})
        return
    at = text.index(old)
    _ag_write(full, text[:at] + new + text[at + len(old) :])
    first = max(1, text.count("\n", 0, at) + 1 - 4)
    lines = (text[:at] + new + text[at + len(old) :]).splitlines()
    shown = lines[first - 1 : text.count("\n", 0, at) + new.count("\n") + 5]
    out = f"Edited {_ag_show(full, root)}. The edited part now reads:\n" + _ag_numbered(
        shown, first
    )
    _ag_reply({"out": out, "digest": _ag_digest(cwd)})


def _ag_create(path_b64, text_b64, cwd):
    """Create a new file (refuses one that exists)."""
    root = _ag_root()
    full = _ag_editable(path_b64, root, cwd)
    if full is None:
        return
    if os.path.lexists(full):
        _ag_reply(
            {
                "error": f"{_ag_show(full, root)} already exists; edit it with str_replace",
                "digest": _ag_digest(cwd),
            }
        )
        return
    try:
        _ag_write(full, _ag_text(text_b64))
    except OSError as exc:
        _ag_reply(
            {
                "error": f"cannot create {_ag_show(full, root)}: {exc.strerror or exc}",
                "digest": _ag_digest(cwd),
            }
        )
        return
    _ag_reply({"out": f"Created {_ag_show(full, root)}.", "digest": _ag_digest(cwd)})


def _ag_dump(max_file, max_total):
    """Every regular file of the project (compressed), for grading and the final diff."""
    root = _ag_root()
    files, skipped, total = {}, [], 0
    for rel, full, info in _ag_walk(root):
        if not stat.S_ISREG(info.st_mode):
            if not stat.S_ISDIR(info.st_mode):
                skipped.append(rel)
            continue
        if info.st_size > max_file or total + info.st_size > max_total:
            skipped.append(rel)
            continue
        try:
            with open(full, "rb") as fh:
                data = fh.read(max_file + 1)
        except OSError:
            skipped.append(rel)
            continue
        total += len(data)
        files[rel] = base64.b64encode(data).decode()
    blob = base64.b64encode(zlib.compress(json.dumps(files).encode(), 6)).decode()
    _ag_reply({"files": blob, "skipped": skipped[:100]})
