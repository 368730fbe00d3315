"""Run benchmarks and assemble BENCHMARKS.md.

    python -m benchmarks                # every bench_*.py
    python -m benchmarks core web       # some of them
    python -m benchmarks --assemble     # only rebuild BENCHMARKS.md from benchmarks/results/

Each module ``benchmarks/bench_<name>.py`` has ``run(quick: bool = False) -> str`` returning a
markdown section that compares the real code with a baseline measured in the same run. The
section is written to ``benchmarks/results/<name>.md``; BENCHMARKS.md is the concatenation of
every result file, so one benchmark can be re-run without re-running the others.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.timing import load

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
TARGET = HERE.parent / "BENCHMARKS.md"

HEADER = """# Benchmarks

Every figure here was produced by `python -m benchmarks` (the harness in `benchmarks/`), which
measures the real code and its baseline in the same run and writes one section per benchmark.
Each section names the machine it ran on. Unless a section says otherwise, the machine is the
project's standard one: 2 CPU cores, 24 GiB RAM, no GPU, Debian 12, Python 3.11.

Re-run one section with `python -m benchmarks NAME` (names are the `bench_NAME.py` files).
The one exception is the learning section (`benchmarks/results/learning.md`): training runs
take tens of minutes each, so it is written from `examples/train_compare.py` runs, and it
gives the command behind every table and plot.
"""


def available() -> list[str]:
    return sorted(
        m.name[len("bench_") :]
        for m in pkgutil.iter_modules([str(HERE)])
        if m.name.startswith("bench_")
    )


def machine() -> str:
    import os

    return f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"


def assemble() -> None:
    sections = [p.read_text().strip() for p in sorted(RESULTS.glob("*.md"))]
    TARGET.write_text(HEADER + "\n" + "\n\n".join(sections) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "names", nargs="*", help=f"benchmarks to run (default all: {', '.join(available())})"
    )
    parser.add_argument("--quick", action="store_true", help="small budgets, for a smoke run")
    parser.add_argument("--assemble", action="store_true", help="only rebuild BENCHMARKS.md")
    args = parser.parse_args(argv)
    RESULTS.mkdir(exist_ok=True)
    if not args.assemble:
        names = args.names or available()
        unknown = sorted(set(names) - set(available()))
        if unknown:
            parser.error(f"unknown benchmarks {unknown}; available: {available()}")
        for name in names:
            print(f"[bench] {name} ...", flush=True)
            start = time.perf_counter()
            load_before = load()
            module = importlib.import_module(f"benchmarks.bench_{name}")
            section = module.run(quick=args.quick).strip()
            section += (
                f"\n\n_Measured {time.strftime('%Y-%m-%d')} on {machine()}; took "
                f"{time.perf_counter() - start:.0f} s; {load_before} at the start, "
                f"{load()} at the end._\n"
            )
            (RESULTS / f"{name}.md").write_text(section)
            print(f"[bench] {name} done in {time.perf_counter() - start:.1f}s", flush=True)
    assemble()
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
