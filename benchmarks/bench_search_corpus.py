"""A user's corpus at scale: index build and search latency on a FlashRAG-layout corpus of a
million passages, against ``bm25s`` used directly on the same file in the same run.

The corpus is generated (nothing is downloaded): 250,000 titles of invented words, four
passages each, 80-120 words a passage drawn from a 200,000-word vocabulary with Zipf-like
frequencies (rank^-1.1, as in natural text), written as FlashRAG JSONL (``id``,
``contents`` = ``"Title"\\ntext``). Queries are 4-6 words taken from random passages.

Rows:

* **build, cold**: SearchQA's corpus index (:func:`agentgym.simulators.search.bm25cache.open_corpus`
  with an empty cache: the file's SHA-256, one streaming pass, the numpy build, the saved
  arrays) against bm25s (read the JSONL, ``bm25s.tokenize`` with English stopwords,
  ``BM25().index``). Each build runs in a fresh process, the two kinds taking turns round
  after round, and reports its wall time and peak RSS.
* **open, cached**: a new process opening the index this corpus already has on disk (the
  digest from the remembered file stat, the arrays memory-mapped): what every later env
  construction costs.
* **search**: one process holding both indexes answers the queries, the two taking turns
  round after round; per-query latency of a top-3 search including tokenizing the query
  (ours: ``PassageIndex.search``; bm25s: ``bm25s.tokenize`` then ``retrieve(k=3)``).

``python -m benchmarks.bench_search_corpus [--passages N] [--rounds R]`` prints the section;
the corpus is kept in ``$TMPDIR/agentgym-bench-corpus`` between runs (``--keep``).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.timing import load

WORDS_PER_TITLE = 4
VOCAB = 200_000
SYLLABLES = [c + v for c in "bcdfghjklmnprstvz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]


def _vocabulary(rng: np.random.Generator, size: int) -> list[str]:
    out: dict[str, None] = {}
    while len(out) < size:
        parts = rng.integers(0, len(SYLLABLES), size=int(rng.integers(2, 5)))
        out.setdefault("".join(SYLLABLES[int(p)] for p in parts), None)
    return list(out)


def make_corpus(path: Path, passages: int, seed: int = 0) -> list[str]:
    """Write the corpus; returns the queries (drawn from its passages)."""
    rng = np.random.default_rng(seed)
    vocab = np.array(_vocabulary(rng, VOCAB), dtype=object)
    weights = 1.0 / np.arange(1, VOCAB + 1) ** 1.1
    cdf = np.cumsum(weights / weights.sum())
    titles = max(1, passages // WORDS_PER_TITLE)
    title_words = rng.integers(0, VOCAB, size=(titles, 2))
    queries: list[str] = []
    query_rows = set(rng.choice(passages, size=min(passages, 400), replace=False).tolist())
    with open(path, "w", encoding="utf-8") as fh:
        for start in range(0, passages, 10_000):
            n = min(10_000, passages - start)
            lengths = rng.integers(80, 121, size=n)
            ids = np.searchsorted(cdf, rng.random(int(lengths.sum())))
            words = vocab[np.minimum(ids, VOCAB - 1)]
            offsets = np.concatenate(([0], np.cumsum(lengths)))
            lines = []
            for j in range(n):
                row = start + j
                t = title_words[row // WORDS_PER_TITLE]
                title = f"{vocab[t[0]].capitalize()} {vocab[t[1]].capitalize()}"
                text = " ".join(words[offsets[j] : offsets[j + 1]])
                lines.append(json.dumps({"id": str(row), "contents": f'"{title}"\n{text}'}))
                if row in query_rows:
                    picks = rng.choice(
                        offsets[j + 1] - offsets[j], size=int(rng.integers(3, 6)), replace=False
                    )
                    queries.append(
                        " ".join([vocab[t[0]], *(words[offsets[j] + int(p)] for p in picks)])
                    )
            fh.write("\n".join(lines) + "\n")
    return queries[:200]


# ---- what runs in the child processes --------------------------------------------------------


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu_s() -> float:
    """CPU seconds this process used (user + system): less moved by a loaded machine."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _child_ours(corpus: str, cache: str) -> dict:
    from agentgym.simulators.search.bm25cache import open_corpus

    start, cpu = time.perf_counter(), _cpu_s()
    index = open_corpus(corpus, cache_dir=cache, progress=False)
    seconds = time.perf_counter() - start
    return {
        "cpu_s": _cpu_s() - cpu,
        "seconds": seconds,
        "built": index.built,
        "passages": len(index.index),
        "rss_mb": _peak_rss_mb(),
    }


def _bm25s_texts(corpus: str) -> list[str]:
    texts = []
    with open(corpus, encoding="utf-8") as fh:
        for line in fh:
            contents = json.loads(line)["contents"]
            title, _, text = contents.partition("\n")
            texts.append(f"{title.strip(chr(34))}. {text}")
    return texts


def _child_bm25s(corpus: str, save_to: str) -> dict:
    import bm25s

    start, cpu = time.perf_counter(), _cpu_s()
    texts = _bm25s_texts(corpus)
    tokens = bm25s.tokenize(texts, stopwords="en", show_progress=False)
    del texts
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    seconds, cpu = time.perf_counter() - start, _cpu_s() - cpu
    rss = _peak_rss_mb()
    if save_to:
        shutil.rmtree(save_to, ignore_errors=True)
        retriever.save(save_to)
    return {
        "seconds": seconds,
        "cpu_s": cpu,
        "passages": int(retriever.scores["num_docs"]),
        "rss_mb": rss,
    }


def _child_search(corpus: str, cache: str, saved: str, queries_file: str, rounds: int) -> dict:
    import bm25s
    from agentgym.simulators.search.bm25cache import open_corpus

    queries = json.loads(Path(queries_file).read_text())
    ours = open_corpus(corpus, cache_dir=cache, progress=False).index
    theirs = bm25s.BM25.load(saved, mmap=True)

    def ours_one(q: str) -> list[int]:
        return ours.search(q, 3)

    def theirs_one(q: str) -> list[int]:
        tokens = bm25s.tokenize([q], stopwords="en", show_progress=False)
        docs, _ = theirs.retrieve(tokens, k=3, show_progress=False, n_threads=1)
        return [int(d) for d in docs[0]]

    for q in queries[:5]:  # warm both (imports, page cache)
        ours_one(q), theirs_one(q)
    out: dict[str, list[list[float]]] = {"ours": [], "bm25s": []}
    agree = 0
    for r in range(rounds):
        order = [("ours", ours_one), ("bm25s", theirs_one)]
        for name, fn in order if r % 2 == 0 else order[::-1]:
            lat = []
            for q in queries:
                start = time.perf_counter()
                fn(q)
                lat.append(time.perf_counter() - start)
            out[name].append(lat)
    for q in queries:
        agree += len(set(ours_one(q)) & set(theirs_one(q)))
    return {"latency": out, "top3_overlap": agree / (3 * len(queries)), "rss_mb": _peak_rss_mb()}


def _child(argv: list[str]) -> None:
    kind, *rest = argv
    if kind == "ours":
        result = _child_ours(*rest)
    elif kind == "bm25s":
        result = _child_bm25s(*rest)
    else:
        result = _child_search(rest[0], rest[1], rest[2], rest[3], int(rest[4]))
    print(json.dumps(result))


def _spawn(*args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_search_corpus", "--child", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"child {args[0]} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---- the section -----------------------------------------------------------------------------


def _ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1e3:,.2f}"


def run(
    quick: bool = False,
    passages: int | None = None,
    rounds: int | None = None,
    keep: bool = False,
    search_only: bool = False,
) -> str:
    """Measure; a markdown section. ``quick``: 20,000 passages, for checking the script.
    ``search_only``: the open and search rows only, on the indexes an earlier ``keep`` run
    left (after a change to search alone)."""
    passages = passages or (20_000 if quick else 1_000_000)
    rounds = rounds or 2
    work = Path(tempfile.gettempdir()) / "agentgym-bench-corpus"
    work.mkdir(exist_ok=True)
    corpus = work / f"corpus-{passages}.jsonl"
    queries_file = work / f"queries-{passages}.json"
    start = time.perf_counter()
    if not (corpus.exists() and queries_file.exists()):
        queries_file.write_text(json.dumps(make_corpus(corpus, passages)))
    generate_s = time.perf_counter() - start
    size_mb = corpus.stat().st_size / 2**20
    builds: dict[str, list[dict]] = {"ours": [], "bm25s": []}
    cache = work / "cache"
    saved = work / f"bm25s-{passages}"
    for r in range(0 if search_only else rounds):
        kinds = ["ours", "bm25s"] if r % 2 == 0 else ["bm25s", "ours"]
        for kind in kinds:
            if kind == "ours":
                shutil.rmtree(cache, ignore_errors=True)
                builds["ours"].append(_spawn("ours", str(corpus), str(cache)))
            else:
                builds["bm25s"].append(_spawn("bm25s", str(corpus), str(saved)))
    opened = [_spawn("ours", str(corpus), str(cache)) for _ in range(3)]
    search = _spawn(
        "search", str(corpus), str(cache), str(saved), str(queries_file), str(3 if quick else 5)
    )
    if not keep:
        shutil.rmtree(work, ignore_errors=True)

    def build_row(label: str, rows: list[dict]) -> str:
        if not rows:
            return f"| {label} | - | - | - | - |"
        secs = [b["seconds"] for b in rows]
        cpu = statistics.median(b["cpu_s"] for b in rows)
        rss = max(b["rss_mb"] for b in rows)
        return (
            f"| {label} | {min(secs):,.1f} | {statistics.median(secs):,.1f} | {cpu:,.1f} | "
            f"{rss:,.0f} |"
        )

    lat = search["latency"]
    rows_ours = [statistics.median(r) for r in lat["ours"]]
    rows_theirs = [statistics.median(r) for r in lat["bm25s"]]
    flat_ours = [x for r in lat["ours"] for x in r]
    flat_theirs = [x for r in lat["bm25s"] for x in r]

    def p95(xs: list[float]) -> float:
        return float(np.percentile(xs, 95)) * 1e3

    lines = [
        f"## SearchQA on a user's corpus: {passages:,} passages, index build and search",
        "",
        f"A generated FlashRAG-layout corpus of {passages:,} passages ({size_mb:,.0f} MB, "
        f"80-120 words each; generated in {generate_s:,.0f} s when not kept from an earlier "
        f"run). Builds in fresh processes, ours and bm25s taking turns over {rounds} rounds; "
        "peak RSS is the build process's.",
        "",
        "| build, cold | min s | median s | median CPU s | peak RSS MB |",
        "|---|---|---|---|---|",
        build_row("agentgym index (hash, stream, numpy build, save)", builds["ours"]),
        build_row("bm25s direct (read, tokenize, index)", builds["bm25s"]),
        "",
        f"Opening the cached index in a new process: {min(o['seconds'] for o in opened) * 1e3:,.0f} ms "
        f"(min of 3; digest from the remembered stat, arrays memory-mapped).",
        "",
        f"Search, top 3, {len(flat_ours) // len(lat['ours'])} queries of 4-6 words, both indexes "
        f"in one process taking turns over {len(lat['ours'])} rounds (ms per query):",
        "",
        "| search | median of round medians | p95 | ",
        "|---|---|---|",
        f"| agentgym (`PassageIndex.search`) | {statistics.median(rows_ours) * 1e3:,.2f} | {p95(flat_ours):,.2f} |",
        f"| bm25s (`tokenize` + `retrieve`, numpy backend) | {statistics.median(rows_theirs) * 1e3:,.2f} | {p95(flat_theirs):,.2f} |",
        "",
        f"Top-3 overlap between the two: {search['top3_overlap']:.1%} (the tokenizers differ: "
        "bm25s drops one-letter words and uses its own stopword list).",
        "",
        f"Machine: {load()} at the end of the run.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--child"]:
        _child(args[1:])
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--passages", type=int, default=None)
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--keep", action="store_true", help="keep the generated corpus for the next run")
    p.add_argument("--search-only", action="store_true", help="reuse a kept run's indexes")
    ns = p.parse_args(args)
    print(
        run(
            quick=ns.quick,
            passages=ns.passages,
            rounds=ns.rounds,
            keep=ns.keep,
            search_only=ns.search_only,
        )
    )


if __name__ == "__main__":
    main()
