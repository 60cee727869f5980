"""How long the ``workbench`` command takes to start: wall time of a few ``--help`` calls.

Runs each command ``--repeat`` times as a fresh process (the installed console script
next to this interpreter, as a user types it) and prints the best and the median wall
time in seconds, plus which heavy third-party packages the command imported. Best of N
is the figure to quote on a noisy machine; the median shows the spread.

Usage::

    .venv/bin/python benchmarks/cli_startup.py [--repeat 5] [--json out.json] [-- ARGS ...]

With ``-- ARGS`` only that one command line is measured (e.g. ``-- variants --help``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

#: The command lines measured by default (arguments of ``workbench``).
COMMANDS: tuple[tuple[str, ...], ...] = (("--help",), ("inspect", "--help"), ("report", "--help"))
#: Packages a verb's help should never need.
HEAVY = ("pandas", "numpy", "nbformat", "papermill", "altair", "paramiko", "aiohttp", "jsonschema")

_PROBE = (
    "import sys, json\n"
    "sys.argv = ['workbench', *sys.argv[1:]]\n"
    "try:\n"
    "    from workbench.cli import app\n"
    "    app()\n"
    "except SystemExit:\n"
    "    pass\n"
    "finally:\n"
    f"    sys.stderr.write('\\n__heavy__' + json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))\n"
)


def _workbench() -> list[str]:
    """The console script beside this interpreter (what `make` and users run)."""
    script = Path(sys.executable).with_name("workbench")
    if not script.exists():
        raise SystemExit(f"no {script}: run `make venv` first (or run this with the venv's python)")
    return [str(script)]


def time_command(args: tuple[str, ...], *, repeat: int) -> dict[str, object]:
    """Run ``workbench ARGS`` ``repeat`` times; wall times (s), best, median and the heavy imports."""
    command = [*_workbench(), *args]
    times = []
    env = dict(os.environ, COLUMNS="100")
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, env=env, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"`{' '.join(command)}` exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    probe = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, env=env, check=False)
    heavy = json.loads(probe.stderr.rsplit("__heavy__", 1)[-1]) if "__heavy__" in probe.stderr else None
    return {
        "command": "workbench " + " ".join(args),
        "times_s": [round(t, 3) for t in times],
        "best_s": round(min(times), 3),
        "median_s": round(statistics.median(times), 3),
        "heavy_imports": heavy,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per command (default 5)")
    parser.add_argument("--json", default=None, help="also write the results as JSON here")
    parser.add_argument("args", nargs="*", help="one command line to measure instead of the defaults")
    ns = parser.parse_args()
    commands = (tuple(ns.args),) if ns.args else COMMANDS
    results = [time_command(c, repeat=ns.repeat) for c in commands]
    print(f"{'command':<28} {'best s':>7} {'median s':>9}  heavy imports")
    for r in results:
        heavy = ", ".join(r["heavy_imports"]) if r["heavy_imports"] else "none"  # type: ignore[arg-type]
        print(f"{r['command']:<28} {r['best_s']:>7.3f} {r['median_s']:>9.3f}  {heavy}")
    if ns.json:
        Path(ns.json).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
