"""How many (variant, concurrency level) points per second the offline engine simulates.

Runs the report's default workload (the shipped prompts, 256 output tokens, ``max(16, 2c)``
requests per level) for the seed variants ``baseline`` and ``eagle3-topk4`` at levels
1, 2, 4, ..., 64, on the virtual clock, ``--repeat`` times, and prints points per second
(the median run) plus where the time goes: the engine core alone, and the summary of each
level (``--summary pandas`` uses the benchmark's ``summarize_level``, the path calibration
used before; ``fast`` the pure-Python figures calibration uses now, when present).

Usage::

    .venv/bin/python benchmarks/sim_offline_speed.py [--repeat 3] [--summary pandas|fast]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from workbench.bench._prompts import load_prompts
from workbench.bench import default_requests_per_level
from workbench.sim import _calibrate as calibrate
from workbench.sim._profiles import load_profile
from workbench.sim._spec import SpecConfig
from workbench.sim._text import TextModel

LEVELS = (1, 2, 4, 8, 16, 32, 64)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--summary", choices=("pandas", "fast"), default="pandas")
    args = parser.parse_args()
    profile = load_profile("seed-pcie-8gpu")
    text = TextModel()
    lengths = [text.count_tokens(p.text) for p in load_prompts()]
    specs = {"baseline": SpecConfig(), "eagle3-topk4": calibrate.seed_eagle3_spec()}
    extra = {}
    if hasattr(calibrate, "variant_cost"):  # after the roofline: the variant's flags build the cost
        extra = {name: {"cost": calibrate.variant_cost(profile, name)} for name in specs}
    walls, engine_walls = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        engine_s = 0.0
        for name, spec in specs.items():
            for c in LEVELS:
                e0 = time.perf_counter()
                rows = calibrate.offline_level(profile, spec, concurrency=c, prompt_lengths=lengths,
                                               max_new_tokens=256, num_requests=default_requests_per_level(c),
                                               **extra.get(name, {}))
                engine_s += time.perf_counter() - e0
                if args.summary == "fast":
                    calibrate.level_figures(rows)
                else:
                    calibrate.level_stats(rows)
        walls.append(time.perf_counter() - t0)
        engine_walls.append(engine_s)
    points = len(specs) * len(LEVELS)
    wall = statistics.median(walls)
    engine = statistics.median(engine_walls)
    print(f"{points} points in {wall:.3f} s (median of {args.repeat}): {points / wall:.1f} points/s; "
          f"engine core {engine:.3f} s ({points / engine:.1f} points/s), summaries ({args.summary}) "
          f"{wall - engine:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
