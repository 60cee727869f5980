"""``workbench sim ...``: the simulator's command-line verbs (calibrate a profile).

Heavy imports (numpy, the engine) happen inside the commands, so ``workbench --help``
stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

sim_app = typer.Typer(help="The simulated SGLang engine: calibrate its profiles.", no_args_is_help=True)


def _table(rows: list[dict], columns: list[tuple[str, str, str]]) -> str:
    """A Markdown table: columns are (key, header, format)."""
    head = "| " + " | ".join(h for _, h, _ in columns) + " |"
    rule = "|" + "|".join("---" for _ in columns) + "|"
    body = ["| " + " | ".join(format(r[k], f) if isinstance(r[k], (int, float)) else str(r[k])
                              for k, _, f in columns) + " |" for r in rows]
    return "\n".join([head, rule, *body])


@sim_app.command("calibrate")
def calibrate_command(
    profile: Annotated[str, typer.Argument(help="profile name (data/profiles/NAME.toml) or path")],
    points: Annotated[Optional[Path], typer.Option(
        "--points", help="a tidy per-level table (CSV or parquet: variant, concurrency, output_throughput_tok_s) "
                         "to fit instead of the profile's calibration points")] = None,
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
    typer.echo(f"profile {prof.name}: {len(pts)} points, {len(result.terms)} free terms "
               f"({', '.join(result.terms)}); {result.iterations} iterations")
    typer.echo("\nfitted: " + ", ".join(f"{k} = {v:.4g}" for k, v in result.values.items()))
    rows = [{"point": p.name, "measured": p.value, "predicted": q, "residual": q / p.value - 1}
            for p, q in zip(pts, result.predicted)]
    typer.echo("\n" + _table(rows, [("point", "point", ""), ("measured", "measured", ".4g"),
                                     ("predicted", "fitted model", ".4g"), ("residual", "residual", "+.1%")]))
    if loo:
        loo_rows = cal.leave_one_out(prof, pts, predictor=predictor, start=result.efficiency)
        cols = [("point", "left out", ""), ("measured", "measured", ".4g"),
                ("loo_predicted", "predicted without it", ".4g"), ("loo_error", "error", "+.1%")]
        cols += [(f"loo_{t}", t, ".4g") for t in result.terms]
        typer.echo("\nleave-one-out:\n" + _table(loo_rows, cols))
    validation = cal.profile_points(prof, "validation")
    if validation and not points:
        predicted = predictor.predict(validation, result.efficiency)
        rows = [{"point": p.name, "measured": p.value, "predicted": q, "error": q / p.value - 1}
                for p, q in zip(validation, predicted)]
        typer.echo("\nvalidation (out of sample, never fitted):\n" + _table(
            rows, [("point", "point", ""), ("measured", "published", ".4g"), ("predicted", "predicted", ".4g"),
                   ("error", "error", "+.1%")]))
    typer.echo(f"\n{predictor.levels_run} offline levels simulated")
    if write:
        cal.write_efficiency(prof.path, result.values)
        typer.echo(f"wrote {', '.join(result.terms)} to {prof.path}")
