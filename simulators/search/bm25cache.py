"""Corpus indexes on disk: built once per corpus file, reused while the file is unchanged.

An index lives in ``<cache dir>/<sha256 of the corpus>-v<N>/`` as ``.npy`` arrays (opened
memory-mapped, so every process on the machine shares one copy in the page cache) and a
``meta.json``. The cache dir is ``index_dir=`` if given, else ``$AGENTGYM_CACHE_DIR/search``,
else ``$XDG_CACHE_HOME/agentgym/search`` (``~/.cache/agentgym/search``). Passages' texts are
not copied: the index keeps each passage's byte offset in the corpus file and reads it there.

The corpus's SHA-256 names the index, so an edited file gets a new index. Hashing a large
file takes a while (about 1.5 s per GB), so the digest is remembered in ``digests.json``
against the file's size, modification time and inode, and recomputed when any of them
changes (as ``make`` and ``git`` judge a file unchanged). Two processes asking for the same
new index build it once: the second waits on a lock file, then opens the first one's.

A progress bar (on stderr, only when it is a terminal) follows the build of a corpus over
64 MB; ``progress=True`` or ``False`` forces it on or off.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import sys
import threading
import time
from array import array
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from agentgym.simulators.search.passages import Builder, FilePassages, PassageIndex
from agentgym.simulators.search.readers import iter_corpus

from agentgym.datafiles import file_sha256
from agentgym.error import InvalidConfigError

#: Bumped whenever the saved layout or the tokenizer changes (old indexes are then rebuilt).
INDEX_VERSION = 1
#: Environment variable naming the cache root (the index goes in its ``search/``).
CACHE_ENV = "AGENTGYM_CACHE_DIR"
#: Corpora larger than this get a progress bar (when stderr is a terminal).
PROGRESS_BYTES = 64 << 20
_ARRAYS = ("data", "indices", "indptr", "term_hashes", "term_ids", "title_hashes",
           "title_order", "offsets", "lengths")  # fmt: skip


def default_cache_dir() -> str:
    """Where corpus indexes go unless ``index_dir=`` says otherwise."""
    root = os.environ.get(CACHE_ENV)
    if root:
        return os.path.join(root, "search")
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "agentgym", "search")


@dataclass(frozen=True)
class CorpusIndex:
    """A corpus file's index and where it came from."""

    path: str
    sha256: str
    index: PassageIndex
    #: Lines left out of the index, by reason.
    skipped: dict[str, int]
    directory: str
    #: Whether this call built the index (False: it was found on disk).
    built: bool

    def describe(self) -> str:
        left = ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items()))
        return (
            f"{os.path.basename(self.path)} (FlashRAG/Search-R1 corpus JSONL, sha256 "
            f"{self.sha256[:12]}): {len(self.index)} passages"
            + (f", skipped {left}" if left else "")
        )


_LOADED: dict[tuple[str, str], CorpusIndex] = {}
_LOADED_LOCK = threading.Lock()


def _stat_key(path: str) -> list[int]:
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def corpus_digest(path: str, cache_dir: str) -> str:
    """The SHA-256 of ``path``, remembered in ``cache_dir`` against its size, mtime, inode."""
    memo_path = os.path.join(cache_dir, "digests.json")
    key = _stat_key(path)
    try:
        with open(memo_path, encoding="utf-8") as fh:
            memo = json.load(fh)
        if not isinstance(memo, dict):
            memo = {}
    except (OSError, ValueError):
        memo = {}
    known = memo.get(path)
    if isinstance(known, list) and len(known) == 4 and known[:3] == key:
        return str(known[3])
    digest = file_sha256(path)
    if _stat_key(path) != key:
        raise InvalidConfigError(f"corpus={path!r} changed while it was being read; try again.")
    memo[path] = [*key, digest]
    tmp = f"{memo_path}.{os.getpid()}.{threading.get_ident()}.tmp"
    with contextlib.suppress(OSError):
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(memo, fh)
        os.replace(tmp, memo_path)
    return digest


def open_corpus(
    path: str | os.PathLike[str],
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
) -> CorpusIndex:
    """The index of a FlashRAG corpus file: from this process's memory, from disk, or built."""
    path = os.path.realpath(os.fspath(path))
    if not os.path.isfile(path):
        raise InvalidConfigError(f"corpus={path!r}: no such file.")
    cache = os.path.abspath(os.fspath(cache_dir)) if cache_dir else default_cache_dir()
    try:
        os.makedirs(cache, exist_ok=True)
    except OSError as exc:
        raise InvalidConfigError(
            f"cannot create the index cache {cache!r} ({exc.strerror}); pass index_dir= a "
            f"writable folder or set {CACHE_ENV}."
        ) from None
    digest = corpus_digest(path, cache)
    with _LOADED_LOCK:
        found = _LOADED.get((cache, digest))
        if found is not None and found.path == path:
            return found
        target = os.path.join(cache, f"{digest}-v{INDEX_VERSION}")
        with _file_lock(target + ".lock"):
            built = not _complete(target)
            if built:
                _build(path, target, digest, progress)
            loaded = _load(path, target, digest, built)
        _LOADED[(cache, digest)] = loaded
        return loaded


@contextlib.contextmanager
def _file_lock(lock_path: str) -> Iterator[None]:
    with open(lock_path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _complete(target: str) -> bool:
    try:
        with open(os.path.join(target, "meta.json"), encoding="utf-8") as fh:
            meta = json.load(fh)
    except (OSError, ValueError):
        return False
    return meta.get("version") == INDEX_VERSION and all(
        os.path.isfile(os.path.join(target, f"{name}.npy")) for name in _ARRAYS
    )


def _progress_bar(path: str, progress: bool | None) -> object | None:
    size = os.path.getsize(path)
    stream = sys.stderr
    wanted = (
        progress
        if progress is not None
        else size > PROGRESS_BYTES and stream is not None and stream.isatty()
    )
    if not wanted:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=size, unit="B", unit_scale=True, desc="indexing corpus", leave=False)


def _build(path: str, target: str, digest: str, progress: bool | None) -> None:
    started = time.perf_counter()
    bar = _progress_bar(path, progress)
    pending = [0]

    def on_bytes(n: int) -> None:
        pending[0] += n
        if bar is not None and pending[0] >= 1 << 20:
            bar.update(pending[0])  # type: ignore[attr-defined]
            pending[0] = 0

    skipped: dict[str, int] = {}
    builder = Builder()
    offsets, lengths = array("q"), array("i")
    try:
        for line in iter_corpus(path, skipped, on_bytes):
            builder.add(line.title, line.text)
            offsets.append(line.offset)
            lengths.append(line.length)
    finally:
        if bar is not None:
            bar.close()  # type: ignore[attr-defined]
    arrays = builder.finish()
    arrays["offsets"] = np.frombuffer(offsets, dtype=np.int64)
    arrays["lengths"] = np.frombuffer(lengths, dtype=np.int32)
    shutil.rmtree(target, ignore_errors=True)
    tmp = f"{target}.{os.getpid()}.{threading.get_ident()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    for name in _ARRAYS:
        np.save(os.path.join(tmp, f"{name}.npy"), arrays[name])
    meta = {
        "version": INDEX_VERSION,
        "corpus": path,
        "sha256": digest,
        "passages": len(lengths),
        "terms": len(builder.vocab),
        "skipped": skipped,
        "k1": 1.5,
        "b": 0.75,
        "build_seconds": round(time.perf_counter() - started, 3),
    }
    with open(os.path.join(tmp, "meta.json"), "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=1)
    os.rename(tmp, target)


def _load(path: str, target: str, digest: str, built: bool) -> CorpusIndex:
    with open(os.path.join(target, "meta.json"), encoding="utf-8") as fh:
        meta = json.load(fh)
    arrays = {name: np.load(os.path.join(target, f"{name}.npy"), mmap_mode="r") for name in _ARRAYS}
    passages = FilePassages(path, arrays["offsets"], arrays["lengths"])
    index = PassageIndex(arrays, int(meta["passages"]), passages)
    return CorpusIndex(path, digest, index, dict(meta.get("skipped") or {}), target, built)
