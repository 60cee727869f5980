"""The model's whole speculative step against the GPU's, calibrated on plain decode only (issue 20, item 3).

Reads a ``remote/gpu_spec_step.py`` table (default: the H200 run committed under
``data/calibration/h200-2026-12-02-spec/``), fits the roofline's three GPU terms on its decode rows,
predicts every whole EAGLE step (chain of 3, chain of 7, topk-4 16-token tree; batch 1-256) and prints
the errors with and without the measured small kernels, as markdown (docs/SIMULATOR.md carries the
result). Target: at most 10% per held-out point.

Usage::

    .venv/bin/python benchmarks/spec_step_accuracy.py [TABLE [KERNELS_TABLE]]

KERNELS_TABLE (default: TABLE) costs the small kernels, for a table timed without them: the wide trees'
run ``data/calibration/h200-2026-12-02-spec-trees/`` takes the first run's kernel rows.
"""

from __future__ import annotations

import sys

from workbench.calibration._spec_step import spec_step_accuracy, spec_step_breakdown

DEFAULT = "data/calibration/h200-2026-12-02-spec/spec_step.csv"


def main(argv: list[str]) -> int:
    path = argv[0] if argv else DEFAULT
    kernels = argv[1] if len(argv) > 1 else None
    terms, rows = spec_step_accuracy(path, kernels_table=kernels)
    print(
        "fitted on", int(rows["fitted"].sum()), "decode points:", ", ".join(f"{k} = {v:.4g}" for k, v in terms.items())
    )
    for fitted, label in ((True, "decode (fitted)"), (False, "whole spec step (held out)")):
        d = rows[rows["fitted"] == fitted]
        for shape, g in d.groupby("shape", sort=False):
            print(f"\n{label}, {shape}:")
            print("| batch | " + " | ".join(str(b) for b in g["batch"]) + " |")
            print("|---|" + "---|" * len(g))
            print("| measured ms | " + " | ".join(f"{v:.2f}" for v in g["measured_ms"]) + " |")
            print("| model ms | " + " | ".join(f"{v:.2f}" for v in g["model_ms"]) + " |")
            print("| error | " + " | ".join(f"{v:+.1f}%" for v in g["error_pct"]) + " |")
            print(
                "| error, shipped h200-llama3-8b terms (no fit) | "
                + " | ".join(f"{v:+.1f}%" for v in g["shipped_error_pct"])
                + " |"
            )
            if not fitted:
                print(
                    "| error without the small kernels | "
                    + " | ".join(f"{v:+.1f}%" for v in g["error_no_kernels_pct"])
                    + " |"
                )
                print("| small kernels ms | " + " | ".join(f"{v:.3f}" for v in g["kernels_ms"]) + " |")
    held = rows[~rows["fitted"]]
    for col, label in (
        ("error_pct", "with the measured kernels"),
        ("error_no_kernels_pct", "without them"),
        ("shipped_error_pct", "shipped h200-llama3-8b terms, no fit (out of the box)"),
    ):
        a = held[col].abs()
        print(f"\nheld out ({len(held)} points), {label}: median |error| {a.median():.1f}%, worst {a.max():.1f}%")
    parts = spec_step_breakdown(path, terms, kernels_table=kernels)
    print("\nthe parts, each timed alone, against the model's (error %, held out):")
    for shape, g in parts.groupby("shape", sort=False):
        print(f"\n{shape}:")
        batches = sorted(g["batch"].unique())
        print("| part | " + " | ".join(str(b) for b in batches) + " |")
        print("|---|" + "---|" * len(batches))
        for part, h in g.groupby("part", sort=False):
            h = h.set_index("batch")
            print(f"| {part} | " + " | ".join(f"{h.loc[b, 'error_pct']:+.0f}%" for b in batches) + " |")
    worst = held["error_pct"].abs().max()
    print("target (<= 10% per point):", "met" if worst <= 10 else "MISSED")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
