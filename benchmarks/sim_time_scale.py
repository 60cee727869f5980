"""Which time scale the simulated engine should default to: measured output tok/s against the offline
prediction, and the wall time, at several time scales, for the way ``workbench bench`` measures (one
server at a time, a streamed chunk per token) and the way ``spec_vs_baseline`` measures (every variant's
server at once, a chunk per 8 tokens).

Each configuration runs the same plan through :func:`workbench.benchmark_variants` (real
``workbench.sim`` server processes, the real HTTP client) into a temporary runs folder, and each
(variant, level) is set against :func:`workbench.sim.predict` (the same engine core on a virtual
clock, no HTTP, no sleeping). The error is what running faster than real time costs: the wall-clock
overheads of each request (HTTP, the client's loop, process wake-ups) count the time scale times over.
The load average before and after each configuration is printed, since a busy CPU widens the error.

The figures behind :data:`workbench.engines.DEFAULT_SIM_TIME_SCALE` come from this script.

Usage::

    .venv/bin/python benchmarks/sim_time_scale.py                          # scales 2, 4, 8; levels 1, 8, 64
    .venv/bin/python benchmarks/sim_time_scale.py --scales 4,8 --levels 1,64 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from typing import Any

import pandas as pd

import workbench as wb
from workbench.bench import repeat_seed
from workbench.sim import predict
from workbench.store import load_runs

VARIANTS = ("baseline", "eagle3-topk4")
#: How each caller measures: servers at once (None: every variant) and tokens per streamed chunk.
MODES = {"bench": {"parallel": 1, "stream_interval": 1}, "report": {"parallel": None, "stream_interval": 8}}


def measure(
    variants: list[str], levels: list[int], *, time_scale: float, parallel: int | None, stream_interval: int
) -> tuple[pd.DataFrame, float]:
    """Per (variant, level): output tok/s and the time the server fell behind its schedule; the wall time (s)."""
    with tempfile.TemporaryDirectory(prefix="sim-time-scale-") as runs_dir:
        started = time.monotonic()
        runs = wb.benchmark_variants(
            variants,
            concurrency_levels=levels,
            repeats=1,
            time_scale=time_scale,
            runs_dir=runs_dir,
            parallel=len(variants) if parallel is None else parallel,
            progress=False,
            load={"extra_sampling_params": {"stream_interval": stream_interval}} if stream_interval > 1 else None,
        )
        wall_s = time.monotonic() - started
        _, levels_frame = load_runs(runs)
    table = levels_frame[["variant", "concurrency", "output_throughput_tok_s", "sim_behind_schedule_wall_s"]]
    return table.rename(columns={"output_throughput_tok_s": "measured_tok_s"}), wall_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--levels", default="1,8,64")
    parser.add_argument("--scales", default="2,4,8")
    parser.add_argument("--modes", default="bench,report")
    parser.add_argument("--json", default=None, help="write every row as JSON here")
    args = parser.parse_args()
    variants, levels = args.variants.split(","), [int(c) for c in args.levels.split(",")]
    want = pd.DataFrame(predict("seed-pcie-8gpu", variants, concurrency_levels=levels, seed=repeat_seed(0, 0)))
    want = want[["variant", "concurrency", "output_throughput_tok_s"]].rename(
        columns={"output_throughput_tok_s": "predicted_tok_s"}
    )
    rows: list[dict[str, Any]] = []
    for mode in args.modes.split(","):
        for scale in [float(s) for s in args.scales.split(",")]:
            load_before = os.getloadavg()[0]
            got, wall_s = measure(variants, levels, time_scale=scale, **MODES[mode])
            table = got.merge(want, on=["variant", "concurrency"])
            table["error_pct"] = (table["measured_tok_s"] / table["predicted_tok_s"] - 1.0) * 100
            worst = table.loc[table["error_pct"].abs().idxmax()]
            print(
                f"\n=== {mode} ({MODES[mode]}), time scale {scale:g}: {wall_s:.0f} s wall; load average "
                f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after ==="
            )
            print(table.round(2).to_string(index=False))
            print(
                f"median |error| {table['error_pct'].abs().median():.1f}%; worst {worst['variant']} c="
                f"{int(worst['concurrency'])} {worst['error_pct']:+.1f}%"
            )
            rows += [
                {**r, "mode": mode, "time_scale": scale, "wall_s": wall_s, "load_before": load_before}
                for r in table.to_dict("records")
            ]
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
