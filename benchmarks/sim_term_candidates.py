"""Candidate cost and acceptance terms, each fitted only on its profile's calibration points (issue 20).

Four comparisons, printed as markdown (docs/SIMULATOR.md carries the results and says what shipped):

- ``tree``: the EAGLE-3 paper's Table 3 row (``h100-llama3-8b-eagle3``). The shipped fit (``hbm_efficiency``,
  ``cpu_overhead_ms`` on Table 4's two batch-1 throughputs and Table 3's batch 64) beside two fits that add a
  term for what differs between SGLang v0.4.4's 8/8/64 tree and its chain of 3: ``cpu_per_draft_step_ms``
  (host time per draft step: ``FlashInferMultiStepDraftBackend.common_template`` plans FlashInfer's decode
  attention once per step, ``num_steps - 1`` times) and ``verify_mask_ns`` (the verify's custom mask,
  ``seq_lens_sum x num_draft_tokens`` elements). Three terms on three points is an exact solve: no residual,
  no leave-one-out. Then the batch 2-56 speedups, held out.
- ``moe``: the MoE profile (``h100x2-qwen3-30b-a3b-eagle3``, SpecForge #339): the shipped fit, whose
  ``routing_overlap`` sits at its bound, beside independent routing (``routing_overlap`` 0) with
  ``cpu_per_draft_step_ms`` as the third term (its chain has 3 draft steps, its 7/4/16 tree 7).
- ``h200-moe``: the H200 kernel table of Qwen3-30B-A3B (``data/calibration/h200-2026-12-01/qwen3-30b-a3b.json``),
  the shipped three-term fit on its 25 decode points beside the same fit with the measured per-token expert
  cost (``moe_token_us`` 0.192) and the measured grouped-GEMM FLOP efficiency (``expert_flops_efficiency``,
  198 TFLOP/s at 4,096 tokens in the table's expert rows) held fixed: residuals per held-out family.
- ``draft``: the MoE profile's accept lengths (SpecForge #339) with and without a solved ``draft_calibration``,
  on the tree settings neither solve uses.

Usage::

    .venv/bin/python benchmarks/sim_term_candidates.py [tree] [moe] [h200-moe] [draft]    # default: all four
"""

from __future__ import annotations

import dataclasses
import sys
import time

#: The grouped-GEMM FLOP efficiency measured in the H200 table's expert rows: 198.28 TFLOP/s at 4,096 tokens
#: (Qwen3-30B-A3B's experts, torch grouped_mm) over the H200's 989.4 TFLOP/s data sheet.
H200_GROUPED_GEMM_EFFICIENCY = 198.28 / 989.4
#: The MoE profile's published accept lengths (SpecForge #339): (num_steps, topk, num_draft_tokens) -> accept length.
SPECFORGE_339 = {(3, 1, 4): 1.86, (7, 4, 16): 2.52, (3, 3, 8): 2.20, (3, 3, 4): 1.99, (6, 4, 12): 2.42, (8, 8, 60): 3.2}


def _profile_fits(name: str, candidates: list[tuple[str, list[str], dict[str, float]]]) -> None:
    """Fit each candidate's terms on the profile's calibration points only; print the held-out errors."""
    from workbench.sim import load_profile
    from workbench.sim._calibrate import Predictor, fit, profile_points

    prof = load_profile(name)
    cal, val = profile_points(prof, "calibration"), profile_points(prof, "validation")
    predictor = Predictor(prof)
    print(
        "| fit | terms | calibration residuals | "
        + " | ".join(p.name for p in val)
        + " | median abs | mean abs | worst |"
    )
    print("|---|---|---|" + "---|" * (len(val) + 3))
    for label, terms, start in candidates:
        t0 = time.perf_counter()
        result = fit(
            prof,
            cal,
            terms=terms,
            predictor=predictor,
            start=dataclasses.replace(prof.physics.efficiency, **start),
            exact_ok=True,
            max_iterations=40,
        )
        errors = [q / p.value - 1 for p, q in zip(val, predictor.predict(val, result.efficiency))]
        absolute = sorted(abs(e) for e in errors)
        mid = len(absolute) // 2
        median = absolute[mid] if len(absolute) % 2 else (absolute[mid - 1] + absolute[mid]) / 2
        values = ", ".join(f"{k} = {v:.4g}" for k, v in result.values.items())
        print(
            f"| {label} | {values} | "
            + ", ".join(f"{r:+.1%}" for r in result.residuals)
            + " | "
            + " | ".join(f"{e:+.1%}" for e in errors)
            + f" | {median:.1%} | {sum(absolute) / len(absolute):.1%} | {absolute[-1]:.1%} |"
        )
        print(f"<!-- {label}: {time.perf_counter() - t0:.0f} s -->", file=sys.stderr)


def tree() -> None:
    two = ["hbm_efficiency", "cpu_overhead_ms"]
    _profile_fits(
        "h100-llama3-8b-eagle3",
        [
            ("shipped (2 terms)", two, {}),
            ("+ cpu_per_draft_step_ms", [*two, "cpu_per_draft_step_ms"], {"cpu_per_draft_step_ms": 0.2}),
            ("+ verify_mask_ns", [*two, "verify_mask_ns"], {"verify_mask_ns": 5.0}),
        ],
    )


def moe() -> None:
    two = ["hbm_efficiency", "cpu_overhead_ms"]
    _profile_fits(
        "h100x2-qwen3-30b-a3b-eagle3",
        [
            ("shipped (routing_overlap fitted)", [*two, "routing_overlap"], {}),
            (
                "independent routing + cpu_per_draft_step_ms",
                [*two, "cpu_per_draft_step_ms"],
                {"routing_overlap": 0.0, "cpu_per_draft_step_ms": 0.2},
            ),
        ],
    )


def h200_moe() -> None:
    from workbench.calibration import fit_table, load_table
    from workbench.sim import Efficiency

    table = load_table("data/calibration/h200-2026-12-01/qwen3-30b-a3b.json")
    starts = [
        ("shipped", Efficiency(layer_fixed_us=20.0)),
        ("moe_token_us 0.192", Efficiency(layer_fixed_us=20.0, moe_token_us=0.192)),
        (
            "moe_token_us 0.192, expert_flops_efficiency 0.200",
            Efficiency(layer_fixed_us=20.0, moe_token_us=0.192, expert_flops_efficiency=H200_GROUPED_GEMM_EFFICIENCY),
        ),
    ]
    for label, start in starts:
        result = fit_table(table, gpu="h200", start=start)
        print(f"\n{label}: " + ", ".join(f"{k} = {v:.4g}" for k, v in result.values.items()))
        summary = result.residual_summary()
        print("| set | family, context | points | median abs | worst | mean |")
        print("|---|---|---|---|---|---|")
        for row in summary.itertuples():
            print(
                f"| {row.set} | {row.family}, {row.context} | {row.points} | {row.median_abs_error_pct:.1f}% | "
                f"{row.max_abs_error_pct:.1f}% | {row.mean_error_pct:+.1f}% |"
            )


def draft() -> None:
    from workbench.sim import SpecConfig
    from workbench.sim._acceptance import AcceptanceModel

    chain = {"num_steps": 3, "accept_length": 1.86}
    point = {
        key: {"num_steps": key[0], "topk": key[1], "num_draft_tokens": key[2], "accept_length": value}
        for key, value in SPECFORGE_339.items()
    }
    base = {"depth_decay": 1.0, "concentration": 50.0, "chain": chain}
    models = {
        "shipped (chain, 7/4/16)": AcceptanceModel.from_table({**base, "tree": point[(7, 4, 16)]}),
        "draft_calibration solved (chain, 7/4/16, 3/3/8)": AcceptanceModel.from_table(
            {**base, "tree": [point[(7, 4, 16)], point[(3, 3, 8)]]}
        ),
    }
    held = [(3, 3, 4), (6, 4, 12), (8, 8, 60)]  # used by neither solve
    print(
        "| model | alpha | sibling | draft_calibration | "
        + " | ".join("/".join(map(str, k)) for k in held)
        + " | mean abs |"
    )
    print("|---|---|---|---|" + "---|" * (len(held) + 1))
    for label, model in models.items():
        errors = [
            model.expected_accept_length(SpecConfig("EAGLE3", num_steps=s, topk=k, num_draft_tokens=n, spec_v2=False))
            / SPECFORGE_339[(s, k, n)]
            - 1
            for s, k, n in held
        ]
        print(
            f"| {label} | {model.alpha:.3f} | {model.sibling:.3f} | {model.draft_calibration:.3f} | "
            + " | ".join(f"{e:+.1%}" for e in errors)
            + f" | {sum(abs(e) for e in errors) / len(errors):.1%} |"
        )


def main(argv: list[str]) -> int:
    jobs = {"tree": tree, "moe": moe, "h200-moe": h200_moe, "draft": draft}
    chosen = argv or list(jobs)
    unknown = [a for a in chosen if a not in jobs]
    if unknown:
        print(f"unknown comparison {unknown}: choose from {list(jobs)}", file=sys.stderr)
        return 2
    for name in chosen:
        print(f"\n## {name}\n")
        jobs[name]()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
