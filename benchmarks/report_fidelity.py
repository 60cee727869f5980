"""How faithful the default report's simulated measurement is: measured output tok/s per level against the
offline prediction for the same plan, for the report's fast settings and (side by side) the old ones.

The default ``make report`` measures ``spec_vs_baseline`` on the simulated server at time scale 8, with
every variant's server measured at once within a repeat (``parallel``) and one streamed chunk every
8 tokens (``stream_interval``; see notebooks/spec_vs_baseline.ipynb). This script runs that plan through
the same call (:func:`workbench.benchmark_variants`, real servers, the real HTTP client) and sets each
(variant, level) mean over the repeats against :func:`workbench.sim.predict`, the same engine core on a
virtual clock, averaged over the same repeat seeds. Its target: every level within 3% on a quiet machine.

``--side-by-side`` measures the old settings too (time scale 4, one server at a time, a chunk per token)
in the same process right after, so the two errors are compared under the same load; ``--levels`` and
``--repeats`` make that cheaper. The figures are recorded in docs/PERFORMANCE.md with the load they
were taken under (printed here: the load average before and after each configuration).

Usage::

    .venv/bin/python benchmarks/report_fidelity.py                      # the default report's plan
    .venv/bin/python benchmarks/report_fidelity.py --side-by-side --levels 1,8,64 --repeats 1
    .venv/bin/python benchmarks/report_fidelity.py --json fidelity.json
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

#: spec_vs_baseline's default variants (the like-for-like baseline, three EAGLE-3 variants, the seed's baseline).
VARIANTS = ("baseline-cap48", "eagle3-topk4", "eagle3-topk1-v2", "eagle3-topk4-off-above-8", "baseline")
#: The report's simulator settings and the old ones (before issue 22).
SETTINGS = {
    "report": {"time_scale": 8.0, "parallel": None, "stream_interval": 8},
    "old": {"time_scale": 4.0, "parallel": 1, "stream_interval": 1},
}
TARGET = 0.03


def measure(
    variants: list[str],
    levels: list[int],
    repeats: int,
    *,
    time_scale: float,
    parallel: int | None,
    stream_interval: int,
) -> tuple[pd.DataFrame, float]:
    """Per (variant, level): the mean output tok/s over the repeats, the repeats behind schedule; wall s."""
    with tempfile.TemporaryDirectory(prefix="report-fidelity-") as runs_dir:
        started = time.monotonic()
        runs = wb.benchmark_variants(
            variants,
            concurrency_levels=levels,
            repeats=repeats,
            time_scale=time_scale,
            runs_dir=runs_dir,
            parallel=len(variants) if parallel is None else parallel,
            progress=False,
            load={"extra_sampling_params": {"stream_interval": stream_interval}} if stream_interval > 1 else None,
        )
        wall = time.monotonic() - started
        _, lv = load_runs(runs)
    lv["behind"] = lv["sim_behind_schedule_wall_s"].fillna(0.0) > 0
    out = (
        lv.groupby(["variant", "concurrency"])
        .agg(
            measured_tok_s=("output_throughput_tok_s", "mean"),
            n=("output_throughput_tok_s", "size"),
            behind=("behind", "sum"),
        )
        .reset_index()
    )
    return out, wall


def predicted(variants: list[str], levels: list[int], repeats: int) -> pd.DataFrame:
    """Per (variant, level): the offline prediction's output tok/s, averaged over the repeats' seeds."""
    rows = []
    for r in range(repeats):
        rows += predict("seed-pcie-8gpu", variants, concurrency_levels=levels, seed=repeat_seed(0, r))
    frame = pd.DataFrame(rows)
    return (
        frame.groupby(["variant", "concurrency"])["output_throughput_tok_s"]
        .mean()
        .rename("predicted_tok_s")
        .reset_index()
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--levels", default="1,2,4,8,16,32,64")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--side-by-side", action="store_true", help="also measure the old settings, right after")
    parser.add_argument("--json", default=None, help="write every row as JSON here")
    args = parser.parse_args()
    variants, levels = args.variants.split(","), [int(c) for c in args.levels.split(",")]
    want = predicted(variants, levels, args.repeats)
    tables: dict[str, Any] = {}
    for name in ("report", "old") if args.side_by_side else ("report",):
        load_before = os.getloadavg()[0]
        got, wall = measure(variants, levels, args.repeats, **SETTINGS[name])
        table = got.merge(want, on=["variant", "concurrency"])
        table["error_pct"] = (table["measured_tok_s"] / table["predicted_tok_s"] - 1.0) * 100
        tables[name] = table
        worst = table.loc[table["error_pct"].abs().idxmax()]
        print(
            f"\n=== {name} settings {SETTINGS[name]}: {wall:.0f} s wall; load average {load_before:.1f} before, "
            f"{os.getloadavg()[0]:.1f} after ==="
        )
        print(table.round({"measured_tok_s": 1, "predicted_tok_s": 1, "error_pct": 1}).to_string(index=False))
        within = (table["error_pct"].abs() <= TARGET * 100).sum()
        print(
            f"{within} of {len(table)} levels within {TARGET:.0%}; worst {worst['variant']} at concurrency "
            f"{int(worst['concurrency'])}: {worst['error_pct']:+.1f}%; median |error| "
            f"{table['error_pct'].abs().median():.1f}%; {int(table['behind'].sum())} level measurements behind "
            "schedule"
        )
    if args.side_by_side:
        both = tables["report"].merge(tables["old"], on=["variant", "concurrency"], suffixes=("_report", "_old"))
        print("\n=== side by side: error of the report's settings against the old ones (percent) ===")
        print(both[["variant", "concurrency", "error_pct_report", "error_pct_old"]].round(1).to_string(index=False))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({k: v.to_dict(orient="records") for k, v in tables.items()}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
