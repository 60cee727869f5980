"""``workbench sim ...``: the simulator's command-line verbs (calibrate a profile).

Heavy imports (numpy, the engine) happen inside the commands, so ``workbench --help``
stays fast.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

if TYPE_CHECKING:
    from workbench.sim._calibrate import Point

sim_app = typer.Typer(
    help="The simulated SGLang engine: calibrate its profiles, predict sweeps offline.", no_args_is_help=True
)


def _table(rows: list[dict], columns: list[tuple[str, str, str]]) -> str:
    """A Markdown table: columns are (key, header, format)."""
    head = "| " + " | ".join(h for _, h, _ in columns) + " |"
    rule = "|" + "|".join("---" for _ in columns) + "|"
    body = [
        "| "
        + " | ".join(format(r[k], f) if isinstance(r[k], (int, float)) else str(r[k]) for k, _, f in columns)
        + " |"
        for r in rows
    ]
    return "\n".join([head, rule, *body])


def _fit_table(points: Sequence[Point], predicted: Sequence[float], headers: tuple[str, str, str]) -> str:
    """Each point's measured and predicted value and the relative error between them, under ``headers``
    (measured, predicted, error)."""
    rows = [
        {"point": p.name, "measured": p.value, "predicted": q, "error": q / p.value - 1}
        for p, q in zip(points, predicted)
    ]
    measured, predicted_header, error = headers
    return _table(
        rows,
        [
            ("point", "point", ""),
            ("measured", measured, ".4g"),
            ("predicted", predicted_header, ".4g"),
            ("error", error, "+.1%"),
        ],
    )


@sim_app.command("calibrate")
def calibrate_command(
    profile: Annotated[str, typer.Argument(metavar="PROFILE", help="profile name (data/profiles/NAME.toml) or path")],
    points: Annotated[
        Optional[Path],
        typer.Option(
            "--points",
            help="a tidy per-level table (CSV or parquet: variant, concurrency, output_throughput_tok_s) "
            "to fit instead of the profile's calibration points",
        ),
    ] = None,
    write: Annotated[bool, typer.Option("--write", help="write the fitted terms into the profile file")] = False,
    loo: Annotated[bool, typer.Option("--loo/--no-loo", help="leave-one-out refits (one fit per point)")] = True,
) -> None:
    """Fit a profile's efficiency terms (only those its fit table names) to measured points.

    Prints the fitted terms, each point's residual, a leave-one-out prediction for every
    point, and the predictions for the profile's validation points (never fitted).
    """
    from workbench.sim import _calibrate as cal
    from workbench.sim._profiles import load_profile

    prof = load_profile(profile)
    pts = cal.points_from_levels(points) if points else cal.profile_points(prof)
    predictor = cal.Predictor(prof)
    result = cal.fit(prof, pts, predictor=predictor)
    typer.echo(
        f"profile {prof.name}: {len(pts)} points, {len(result.terms)} free terms "
        f"({', '.join(result.terms)}); {result.iterations} iterations"
    )
    typer.echo("\nfitted: " + ", ".join(f"{k} = {v:.4g}" for k, v in result.values.items()))
    typer.echo("\n" + _fit_table(pts, result.predicted, ("measured", "fitted model", "residual")))
    if loo:
        loo_rows = cal.leave_one_out(prof, pts, predictor=predictor, start=result.efficiency)
        cols = [
            ("point", "left out", ""),
            ("measured", "measured", ".4g"),
            ("loo_predicted", "predicted without it", ".4g"),
            ("loo_error", "error", "+.1%"),
        ]
        cols += [(f"loo_{t}", t, ".4g") for t in result.terms]
        typer.echo("\nleave-one-out:\n" + _table(loo_rows, cols))
    validation = cal.profile_points(prof, "validation")
    if validation and not points:
        predicted = predictor.predict(validation, result.efficiency)
        typer.echo(
            "\nvalidation (out of sample, never fitted):\n"
            + _fit_table(validation, predicted, ("published", "predicted", "error"))
        )
    typer.echo(f"\n{predictor.levels_run} offline levels simulated")
    if write:
        cal.write_efficiency(prof.path, result.values)
        typer.echo(f"wrote {', '.join(result.terms)} to {prof.path}")


#: Columns of ``workbench sim predict``'s tables: (key, header, format).
PREDICT_COLUMNS = [
    ("concurrency", "c", "d"),
    ("output_throughput_tok_s", "output tok/s", ".1f"),
    ("mean_per_request_tok_s", "per-request tok/s", ".1f"),
    ("mean_ttft_ms", "TTFT ms", ".0f"),
    ("mean_tpot_ms", "TPOT ms", ".2f"),
    ("accept_length", "accept len", ".2f"),
    ("step_batch", "step batch", "d"),
    ("step_total_ms", "step ms", ".2f"),
    ("step_weights_ms", "weights", ".2f"),
    ("step_kv_ms", "KV", ".2f"),
    ("step_compute_ms", "compute", ".2f"),
    ("step_communication_ms", "comm", ".2f"),
    ("step_draft_ms", "draft", ".2f"),
    ("step_overhead_ms", "overhead", ".2f"),
]


def _levels_option(text: str | None) -> list[int] | None:
    """``--levels`` parsed by the bench's one parser (an empty part refused); the plan checks the range."""
    if text is None:
        return None
    from workbench.bench import parse_number_list

    return parse_number_list("--levels", text, int, "whole numbers (requests in flight)", "1,2,4")


def _one_of(name: str, value: str | None, old_name: str, old_value: str | None) -> str | None:
    """An option given under its name or its former one (kept working, hidden from the help).

    Raises:
        ConfigError: both given.
    """
    from workbench.errors import ConfigError

    if value is not None and old_value is not None:
        raise ConfigError(f"{old_name} is the former name of {name}; give {name} once")
    return value if value is not None else old_value


@sim_app.command("predict")
def predict_command(
    variants: Annotated[
        list[str], typer.Argument(metavar="VARIANT", help="variant names (data/variants/NAME.toml) or files")
    ],
    profile: Annotated[
        Optional[str],
        typer.Option(
            "--sim-profile",
            help="profile name (data/profiles/NAME.toml) or path, as `workbench bench --sim-profile` "
            "(default seed-pcie-8gpu)",
        ),
    ] = None,
    levels: Annotated[
        Optional[str],
        typer.Option("--levels", help="concurrency levels, e.g. 1,2,4 (default: the profile's workload's)"),
    ] = None,
    requests: Annotated[
        Optional[int],
        typer.Option(
            "--requests",
            min=1,
            help="requests per level (default: the profile's workload's, else max(16, 2 x concurrency))",
        ),
    ] = None,
    max_new_tokens: Annotated[
        Optional[int],
        typer.Option("--max-new-tokens", min=1, help="output tokens per request (default: the profile's)"),
    ] = None,
    seed: Annotated[
        Optional[int], typer.Option("--seed", help="prompt order and acceptance sampling (default: the profile's)")
    ] = None,
    prompt_set: Annotated[
        Optional[str],
        typer.Option(
            "--prompt-set",
            help="prompt set whose acceptance figures apply (the profile's acceptance.prompt_sets table; default: the workload's)",
        ),
    ] = None,
    temperature: Annotated[
        Optional[float],
        typer.Option(
            "--temperature",
            help="requests' temperature: 0 uses greedy acceptance figures, > 0 sampled ones (default: the profile's workload's)",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="print one JSON object: the settings and a row per (variant, level)")
    ] = False,
    old_profile: Annotated[Optional[str], typer.Option("--profile", hidden=True)] = None,
    old_levels: Annotated[Optional[str], typer.Option("--concurrency-levels", hidden=True)] = None,
) -> None:
    """Predict each variant's closed-loop sweep offline (virtual clock; a MODEL PREDICTION, not a measurement).

    Per variant and level: output tok/s, per-request tok/s, TTFT, TPOT, accept length and the decode
    step's time at the level's mean running batch, split into weights, KV, compute, communication,
    draft and overhead (ms). ``--json`` keys are the stored level tables' column names.
    """
    import json
    import math

    from workbench.errors import ConfigError
    from workbench.sim._predict import predict, prediction_plan
    from workbench.sim._profiles import load_profile

    profile = _one_of("--sim-profile", profile, "--profile", old_profile) or "seed-pcie-8gpu"
    levels = _one_of("--levels", levels, "--concurrency-levels", old_levels)
    try:
        prof = load_profile(profile)
        plan = prediction_plan(
            prof,
            concurrency_levels=_levels_option(levels),
            requests_per_level=requests,
            max_new_tokens=max_new_tokens,
            seed=seed,
            prompt_set=prompt_set,
            temperature=temperature,
        )
        rows = predict(
            prof,
            variants,
            concurrency_levels=plan.concurrency_levels,
            requests_per_level=plan.requests_per_level,
            max_new_tokens=plan.max_new_tokens,
            seed=plan.seed,
            prompt_set=prompt_set,
            temperature=temperature,
        )
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    from workbench.sim._held_out import trust
    from workbench.sim._variant_flags import variant_config

    names = list(dict.fromkeys(r["variant"] for r in rows))
    trusted = {
        name: trust(prof.held_out, variant_config(prof, spec_of).spec, plan.concurrency_levels)
        for name, spec_of in zip(names, variants)
    }
    if as_json:
        clean = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()} for r in rows]
        typer.echo(
            json.dumps(
                {
                    "profile": prof.name,
                    "prediction": "offline",
                    "simulated": True,
                    "held_out": trusted,
                    "levels": list(plan.concurrency_levels),
                    "requests_per_level": plan.requests_per_level,
                    "max_new_tokens": plan.max_new_tokens,
                    "seed": plan.seed,
                    "prompt_set": prompt_set,
                    "temperature": temperature,
                    "rows": clean,
                },
                indent=1,
            )
        )
        return
    rule = f"{plan.requests_per_level} requests" if plan.requests_per_level else "max(16, 2c) requests"
    typer.echo(
        f"MODEL PREDICTION (offline simulator, virtual clock; not a measurement): profile {prof.name}, "
        f"{rule} per level, {plan.max_new_tokens} output tokens, seed {plan.seed}"
        + (f", prompt set {prompt_set}" if prompt_set else "")
        + (f", temperature {temperature:g}" if temperature is not None else "")
    )
    for name in names:
        typer.echo(f"\n{name}")
        table = [
            {k: ("-" if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
            for r in rows
            if r["variant"] == name
        ]
        typer.echo(_table(table, PREDICT_COLUMNS))
        typer.echo(trusted[name])
    typer.echo(
        "\nstep: one decode iteration at the level's mean running batch (ms); draft: every draft forward; "
        "overhead: exposed CPU and eager launches"
    )
