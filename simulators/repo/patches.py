"""Apply unified diffs (``git diff`` output) to a tree of text files, strictly.

Used to read SWE-bench-format instances: the gold ``patch`` and the ``test_patch`` are
applied to the repository snapshot on the host. A hunk whose context does not match is an
error naming the file and the hunk, never a silent partial application.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from agentgym.error import InvalidConfigError

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchError(InvalidConfigError):
    """A patch that does not apply to the files it names."""


@dataclass
class FilePatch:
    old_path: str | None  # None: the file is created
    new_path: str | None  # None: the file is deleted
    hunks: list[tuple[int, list[str]]] = field(default_factory=list)  # (old start, lines)

    @property
    def path(self) -> str:
        return str(self.new_path or self.old_path)


def _strip(name: str) -> str | None:
    name = name.split("\t", 1)[0].strip()
    if name == "/dev/null":
        return None
    return name[2:] if name.startswith(("a/", "b/")) else name


def parse_patch(text: str) -> list[FilePatch]:
    """The file patches of a unified diff, in order."""
    patches: list[FilePatch] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            current = FilePatch(_strip(line[4:]), _strip(lines[i + 1][4:]))
            patches.append(current)
            i += 2
            continue
        match = _HUNK.match(line)
        if match and patches:
            old_len = int(match.group(2) or 1)
            new_len = int(match.group(4) or 1)
            body: list[str] = []
            i += 1
            seen_old = seen_new = 0
            while i < len(lines) and (seen_old < old_len or seen_new < new_len):
                row = lines[i]
                if row.startswith("\\"):
                    i += 1
                    continue
                tag = row[:1] or " "
                seen_old += tag in " -"
                seen_new += tag in " +"
                body.append(tag + row[1:])
                i += 1
            patches[-1].hunks.append((int(match.group(1)), body))
            continue
        i += 1
    return patches


def _apply_hunks(path: str, text: str, hunks: list[tuple[int, list[str]]]) -> str:
    lines = text.splitlines()
    trailing = text.endswith("\n") or not text
    offset = 0
    for number, (start, body) in enumerate(hunks, start=1):
        old = [row[1:] for row in body if row[0] in " -"]
        new = [row[1:] for row in body if row[0] in " +"]
        at = max(0, start - 1 + offset) if old else max(0, start + offset)
        if lines[at : at + len(old)] != old:
            found = [k for k in range(len(lines) - len(old) + 1) if lines[k : k + len(old)] == old]
            if not found:
                raise PatchError(f"hunk {number} of the patch to {path} does not match the file")
            at = min(found, key=lambda k: abs(k - at))
        lines[at : at + len(old)] = new
        offset += len(new) - len(old)
    return "\n".join(lines) + ("\n" if trailing and lines else "")


def apply_patch(files: Mapping[str, str], text: str) -> dict[str, str]:
    """``files`` with the unified diff ``text`` applied (a new dict).

    Raises:
        PatchError: a file the patch changes is missing, one it creates exists, or a hunk's
            context does not match.
    """
    out = dict(files)
    for patch in parse_patch(text):
        if patch.old_path is None:
            if patch.path in out:
                raise PatchError(f"the patch creates {patch.path}, which already exists")
            out[patch.path] = _apply_hunks(patch.path, "", patch.hunks)
            continue
        if patch.old_path not in out:
            raise PatchError(f"the patch changes {patch.old_path}, which is not in the repository")
        if patch.new_path is None:
            del out[patch.old_path]
            continue
        result = _apply_hunks(patch.old_path, out.pop(patch.old_path), patch.hunks)
        out[patch.new_path] = result
    return out


def touched_paths(text: str) -> list[str]:
    """The paths a patch creates, changes or deletes."""
    return sorted({p for fp in parse_patch(text) for p in (fp.old_path, fp.new_path) if p})
