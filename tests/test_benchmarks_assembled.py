"""BENCHMARKS.md is exactly what ``python -m benchmarks --assemble`` builds.

Each benchmark writes its section to ``benchmarks/results/<name>.md`` and BENCHMARKS.md is
their concatenation, so a figure edited in BENCHMARKS.md alone would be lost the next time
any benchmark runs. Hand-written sections (the learning runs, soak results) therefore live
in a results file too, and this test fails when the two drift apart.
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.__main__ import HEADER, RESULTS, TARGET


def assembled() -> str:
    sections = [p.read_text().strip() for p in sorted(RESULTS.glob("*.md"))]
    return HEADER + "\n" + "\n\n".join(sections) + "\n"


def test_benchmarks_md_is_the_concatenation_of_the_results_files() -> None:
    current = Path(TARGET).read_text()
    built = assembled()
    if current != built:
        ours, theirs = current.splitlines(), built.splitlines()
        first = next(
            (i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs))
        )
        raise AssertionError(
            f"BENCHMARKS.md differs from benchmarks/results/*.md from line {first + 1}: "
            f"{(ours[first : first + 1] or ['<end>'])[0]!r} vs {(theirs[first : first + 1] or ['<end>'])[0]!r}. "
            "Edit the results file, then run `python -m benchmarks --assemble`."
        )
