"""The simulated engine against stored real-SGLang runs: the same variant files and workload, no fit.

    .venv/bin/python benchmarks/real_vs_sim.py [--real DIR] [--profile h200-llama3-8b] [--time-scale 1]

Reads the real runs (default ``data/measured/h200-sglang-0.5.17-2026-12-06/runs``: SGLang 0.5.17 on an H200,
random weights, accept length forced with ``SGLANG_SIMULATE_ACC_LEN``), measures the same variant files on the
simulated engine with the given profile at the same levels, requests and output length (``workbench bench
--engine sim``; the simulator forces the same accept lengths from the files' ``[env]``), and prints per level the
output tok/s of both, the error, and the spec/baseline ratio of both. Only runs that measured levels are used.
Results: docs/REAL_SGLANG.md ("The simulator against these runs, out of the box").
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_REAL = ROOT / "data" / "measured" / "h200-sglang-0.5.17-2026-12-06" / "runs"


def _levels(runs: list[Path]) -> pd.DataFrame:
    frames = [pd.read_parquet(r / "levels.parquet") for r in runs if (r / "levels.parquet").exists()]
    return pd.concat(frames, ignore_index=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--real", type=Path, default=DEFAULT_REAL, help="folder of real runs")
    ap.add_argument("--profile", default="h200-llama3-8b", help="simulator profile (data/profiles/NAME.toml)")
    ap.add_argument("--time-scale", type=float, default=1.0, help="simulated seconds per wall second")
    args = ap.parse_args(argv)
    runs = [r for r in sorted(args.real.iterdir()) if (r / "levels.parquet").exists()]
    manifests = [json.loads((r / "manifest.json").read_text()) for r in runs]
    files = [m["variant_definition"]["path"] for m in manifests]
    files = [
        f if Path(f).exists() else str(ROOT / "benchmarks" / "real_sglang" / "variants" / Path(f).name) for f in files
    ]
    plan = manifests[0]["plan"]
    real = _levels(runs)
    levels = ",".join(str(int(c)) for c in sorted(real["concurrency"].unique()))
    with tempfile.TemporaryDirectory() as tmp:
        argv_ = [
            sys.executable,
            "-m",
            "workbench",
            "bench",
            *files,
            "--engine",
            "sim",
            "--sim-profile",
            args.profile,
            "--time-scale",
            f"{args.time_scale:g}",
            "--repeats",
            "1",
            "--levels",
            levels,
            "--max-new-tokens",
            str(plan["max_new_tokens"]),
            "--runs-dir",
            tmp,
            "--no-progress",
            "--fresh",
        ]
        done = subprocess.run(argv_, cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stdout[-3000:], done.stderr[-3000:], sep="\n")
            return done.returncode
        sim = _levels([p for p in Path(tmp).iterdir() if p.is_dir()])
    keys = ["variant", "concurrency"]
    both = real[keys + ["output_throughput_tok_s"]].merge(
        sim[keys + ["output_throughput_tok_s", "sim_behind_schedule_wall_s"]], on=keys, suffixes=("_real", "_sim")
    )
    both["error_pct"] = 100 * (both["output_throughput_tok_s_sim"] / both["output_throughput_tok_s_real"] - 1)
    base = manifests[0]["variant"]
    ref = both[both["variant"] == base].set_index("concurrency")
    for col in ("real", "sim"):
        both[f"ratio_{col}"] = [
            row[f"output_throughput_tok_s_{col}"] / ref.loc[row["concurrency"], f"output_throughput_tok_s_{col}"]
            for _, row in both.iterrows()
        ]
    print(f"simulated (profile {args.profile}, time scale {args.time_scale:g}) against real runs in {args.real}")
    print(both.round(2).to_string(index=False))
    print(f"mean absolute throughput error: {both['error_pct'].abs().mean():.1f}% over {len(both)} points")
    spec = both[both["variant"] != base]
    ratio_err = 100 * (spec["ratio_sim"] / spec["ratio_real"] - 1)
    print(f"mean absolute spec/baseline ratio error: {ratio_err.abs().mean():.1f}% over {len(spec)} points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
