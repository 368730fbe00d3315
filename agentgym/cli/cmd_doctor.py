"""``agentgym doctor``: which sandbox layers and system parts work on this host, with fixes.

Every layer is probed for real (a throwaway bubblewrap jail, a cgroup created and removed, a
Landlock ABI query...). With ``--run`` it also starts one jailed worker and runs a snippet
through it. Exit code 0 when the sandbox can isolate code here, 1 when a required layer is
missing (the sandbox then refuses to run unless ``allow_unisolated=True``).

Then it checks the system parts each env family needs (bubblewrap for code, Chromium,
Playwright and fonts for web, tesseract and fonts for visual, torch for ``agentgym train``)
and prints the fix for every missing one. Those do not change the exit code: a machine
without Chromium still runs the other families.
"""

from __future__ import annotations

import argparse
import json


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "doctor",
        help="check the sandbox layers and the system parts each env family needs",
        description=__doc__,
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--run", action="store_true", help="also start a worker and run a snippet")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from agentgym.cli.doctor_checks import check_parts, environment_notes
    from agentgym.simulators.sandbox.layers import LAYER_DOCS, REQUIRED, detect_layers

    layers = detect_layers()
    parts = check_parts()
    missing = [name for name in REQUIRED if not layers[name].active]
    smoke: dict[str, object] | None = None
    if args.run and not missing:
        from agentgym.simulators.sandbox import SandboxPool

        with SandboxPool(workers=1) as pool:
            result = pool.run("import os\nprint(os.getuid())")
            smoke = {"status": result.status, "uid": result.stdout.strip(),
                     "ms": round(result.duration * 1000, 1)}  # fmt: skip
    if args.json:
        print(json.dumps({
            "layers": {n: {"active": lay.active, "detail": lay.detail} for n, lay in layers.items()},
            "required_missing": missing,
            "smoke_test": smoke,
            "parts": {p.name: p.as_dict() for p in parts},
            "parts_missing": [p.name for p in parts if not p.ok],
        }, indent=2))  # fmt: skip
        return 1 if missing else 0
    print("agentgym sandbox isolation layers:")
    for name, layer in layers.items():
        mark = "ok     " if layer.active else "MISSING"
        req = " (required)" if name in REQUIRED else ""
        print(f"  [{mark}] {name}{req}: {layer.detail}")
        print(f"            stops: {LAYER_DOCS[name]}")
    print("system parts by env family:")
    for part in parts:
        print("  " + part.line())
    for note in environment_notes():
        print(f"  (set: {note})")
    if smoke is not None:
        print(f"Smoke test: a jailed run finished with status {smoke['status']} as uid "
              f"{smoke['uid']} in {smoke['ms']} ms.")  # fmt: skip
    if missing:
        print(f"The sandbox will REFUSE to run code here: missing {', '.join(missing)}. "
              "Install the missing pieces (e.g. apt-get install bubblewrap; pip install "
              "pyseccomp) or pass allow_unisolated=True at your own risk.")  # fmt: skip
        return 1
    inactive = [n for n, lay in layers.items() if not lay.active]
    print(
        "The sandbox can isolate code here"
        + (f" (without: {', '.join(inactive)})." if inactive else " with every layer.")
    )
    return 0
