"""How fast ``workbench import`` reads a large sglang.bench_serving file with ``--output-details``.

Builds a JSONL file of ``--lines`` runs, each the last line of
tests/fixtures/imports/bench_serving/bs059_baseline_details.jsonl (a real 0.5.9 record,
concurrency 4, 8 requests) with its per-request arrays repeated ``--repeat`` times (400
requests and about 350 KB a line by default, the size real ``--output-details`` lines reach),
then times :func:`workbench.import_results` reading and checking it (``store=False``) and
reading, checking and storing it into a temporary runs folder. Prints the best and median of
``--rounds`` rounds in seconds, and MB/s of input.

Usage::

    .venv/bin/python benchmarks/import_speed.py [--lines 20] [--repeat 50] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import workbench as wb

FIXTURE = (
    Path(__file__).resolve().parents[1]
    / "tests"
    / "fixtures"
    / "imports"
    / "bench_serving"
    / "bs059_baseline_details.jsonl"
)
DETAILS = ("input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors")


def build(path: Path, *, lines: int, repeat: int) -> int:
    """Write the test file; returns its size in bytes."""
    record = json.loads(FIXTURE.read_text().splitlines()[-1])
    for key in DETAILS:
        record[key] = record[key] * repeat
    with path.open("w") as fh:
        for i in range(lines):
            fh.write(json.dumps({**record, "max_concurrency": 2 ** (i % 8)}) + "\n")
    return path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.jsonl"
        size = build(path, lines=args.lines, repeat=args.repeat)
        for label, store in (("read+check", False), ("read+check+store", True)):
            times = []
            for r in range(args.rounds):
                runs = Path(tmp) / f"runs-{label}-{r}"
                start = time.perf_counter()
                result = wb.import_results(path, store=store, runs_dir=runs)
                times.append(time.perf_counter() - start)
            print(
                f"{label:>17}: {args.lines} lines, {size / 1e6:.1f} MB, {len(result.requests)} request rows: "
                f"best {min(times):.2f} s, median {statistics.median(times):.2f} s "
                f"({size / 1e6 / min(times):.1f} MB/s best)"
            )


if __name__ == "__main__":
    main()
