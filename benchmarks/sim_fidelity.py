"""How faithfully the real-time simulated server reproduces its own engine model.

For each time scale, runs the default workload (levels 1..64, ``max(16, 2c)``
requests, 256 output tokens) against real ``workbench.sim`` server processes for the
baseline and EAGLE-3 variants, and compares every level's measured output
throughput and per-request tok/s with the offline prediction of the same engine
core on a virtual clock (no HTTP, no sleeping). Also prints the four calibration
figures next to the measured targets, and the server's behind-schedule time.

Usage::

    .venv/bin/python benchmarks/sim_fidelity.py [--time-scale 2 4] [--out docs/fidelity.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time

from workbench.bench import load_prompts
from workbench import benchmark_variant
from workbench.sim._offline_figures import figures
from workbench.sim._profiles import load_profile
from workbench.sim._text import TextModel
from workbench.store import load_run

LEVELS = (1, 2, 4, 8, 16, 32, 64)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-scale", type=float, nargs="+", default=[2.0])
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    args = parser.parse_args()
    profile = load_profile()
    text = TextModel()
    lengths = [text.count_tokens(p.text) for p in load_prompts()]
    predicted = figures(profile, prompt_lengths=lengths, max_new_tokens=256, concurrency_levels=LEVELS)
    results = []
    for scale in args.time_scale:
        with tempfile.TemporaryDirectory() as runs_dir:
            t0 = time.monotonic()
            measured = {}
            for variant, key in (("baseline", "baseline"), ("eagle3-topk4", "eagle3")):
                run = load_run(
                    benchmark_variant(
                        variant, concurrency_levels=LEVELS, time_scale=scale, runs_dir=runs_dir, progress=False
                    )
                )
                sim = run.manifest["server_info"]["simulation"]
                measured[key] = (run.levels.set_index("concurrency"), sim["behind_schedule_s"], sim["max_lag_s"])
            wall = time.monotonic() - t0
        print(f"\n=== time scale {scale:g}x: {wall:.0f} s wall for both sweeps ===")
        print(
            f"{'variant':9s} {'c':>3s} {'out tok/s':>10s} {'predicted':>10s} {'ratio':>6s} "
            f"{'per-req':>8s} {'predicted':>10s} {'ratio':>6s}"
        )
        rows = []
        for key, (levels, behind, lag) in measured.items():
            for c in LEVELS:
                out, per = levels.loc[c, "output_throughput_tok_s"], levels.loc[c, "mean_per_request_tok_s"]
                p_out, p_per = predicted[key][c]
                rows.append(
                    {
                        "variant": key,
                        "concurrency": c,
                        "output_tok_s": out,
                        "predicted_output_tok_s": p_out,
                        "per_request_tok_s": per,
                        "predicted_per_request_tok_s": p_per,
                    }
                )
                print(
                    f"{key:9s} {c:3d} {out:10.1f} {p_out:10.1f} {out / p_out:6.3f} {per:8.1f} {p_per:10.1f} {per / p_per:6.3f}"
                )
            print(f"{key}: server behind schedule {behind:.3f} s in total, max lag {lag * 1000:.1f} ms")
        base, eagle = measured["baseline"][0], measured["eagle3"][0]
        figs = {
            "baseline_c1_per_request_tok_s": base.loc[1, "mean_per_request_tok_s"],
            "eagle3_c1_per_request_tok_s": eagle.loc[1, "mean_per_request_tok_s"],
            "baseline_saturation_output_tok_s": base["output_throughput_tok_s"].max(),
            "eagle3_saturation_output_tok_s": eagle["output_throughput_tok_s"].max(),
        }
        print(f"\n{'figure':36s} {'measured':>9s} {'simulated':>10s} {'error':>7s}")
        for k, v in figs.items():
            target = profile.calibration[k]
            print(f"{k:36s} {target:9.1f} {v:10.1f} {v / target - 1:+7.1%}")
        signs = bool(eagle.loc[1, "mean_per_request_tok_s"] > base.loc[1, "mean_per_request_tok_s"]) and all(
            base.loc[c, "output_throughput_tok_s"] > eagle.loc[c, "output_throughput_tok_s"] for c in LEVELS[1:]
        )
        print(f"signs kept (EAGLE-3 ahead at 1, baseline ahead from 2 up): {signs}")
        results.append({"time_scale": scale, "wall_s": wall, "levels": rows, "figures": figs, "signs_kept": signs})
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(results, fh, indent=1, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
