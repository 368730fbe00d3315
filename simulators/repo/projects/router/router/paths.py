"""Path clean-up before matching: percent-decoding, duplicate slashes, dot segments."""

from __future__ import annotations

from urllib.parse import unquote


def normalize_path(path: str, keep_trailing_slash: bool = False) -> str:
    """A canonical path: decoded, ``//`` collapsed, ``.`` and ``..`` resolved (never above
    the root), and no trailing slash unless ``keep_trailing_slash`` (the root stays ``/``)."""
    path = unquote(path.split("?", 1)[0].split("#", 1)[0])
    trailing = path.endswith("/") and len(path) > 1
    stack: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if stack:
                stack.pop()
            continue
        stack.append(segment)
    result = "/" + "/".join(stack)
    if keep_trailing_slash and trailing and result != "/":
        result += "/"
    return result


def join_paths(prefix: str, path: str) -> str:
    """``/api`` + ``/users`` -> ``/api/users``; a prefix of ``/`` changes nothing."""
    prefix = prefix.rstrip("/")
    if not path.startswith("/"):
        path = "/" + path
    return (prefix + path) if prefix else path
