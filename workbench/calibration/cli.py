"""``workbench calibrate``: time a model's kernels on a GPU host; ``workbench calibrate fit``: fit a stored table.

Heavy imports (pandas, numpy, the host machinery) happen inside the commands, so
``workbench --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from workbench.hosts.cli import HOST_OPTION

calibrate_app = typer.Typer(
    help="Time a model's kernel groups on a GPU host (remote/gpu_calibrate.py) and fit the simulator's "
    "efficiency terms to the table.",
    invoke_without_command=True,
)

#: Where tables go unless ``--out`` says otherwise (relative to the project).
DEFAULT_OUT = "data/calibration"
#: The profile whose CPU terms, workload and acceptance a written profile carries.
DEFAULT_CARRY = "h100-llama3-8b-eagle3"
#: ``--carry`` of both calibrate and fit: the profile a written profile takes its other sections from.
_CarryOpt = Annotated[
    str, typer.Option("--carry", help="profile whose CPU terms, workload and acceptance a written profile carries")
]


def _md(rows: list[dict], columns: list[tuple[str, str, str]]) -> str:
    """A Markdown table: columns are (key, header, format)."""
    head = "| " + " | ".join(h for _, h, _ in columns) + " |"
    rule = "|" + "|".join("---" for _ in columns) + "|"

    def cell(v: object, f: str) -> str:
        if isinstance(v, float) and v != v:
            return "—"
        return format(v, f) if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)

    body = ["| " + " | ".join(cell(r[k], f) for k, _, f in columns) + " |" for r in rows]
    return "\n".join([head, rule, *body])


def fit_report(fit) -> str:
    """The fit as text: terms, every point's residual, held-out summary, knees (Markdown tables)."""
    t = fit.table
    out = [
        f"{t.name}: {t.provenance()}",
        "fitted: "
        + ", ".join(f"{k} = {v:.4g}" for k, v in fit.values.items())
        + f" ({fit.iterations} iterations; data sheet data/gpus/{fit.gpu}.toml)",
    ]
    pts = fit.points.dropna(subset=["residual"]).assign(set=lambda d: d["fitted"].map({True: "fit", False: "held out"}))
    out.append(
        _md(
            pts.to_dict("records"),
            [
                ("point", "point", ""),
                ("set", "set", ""),
                ("measured_ms", "measured ms", ".3f"),
                ("model_ms", "model ms", ".3f"),
                ("residual", "residual", "+.1%"),
            ],
        )
    )
    out.append(
        _md(
            fit.residual_summary().to_dict("records"),
            [
                ("set", "set", ""),
                ("family", "family", ""),
                ("context", "context", "d"),
                ("points", "points", "d"),
                ("median_abs_error_pct", "median abs error %", ".1f"),
                ("max_abs_error_pct", "max abs error %", ".1f"),
                ("mean_error_pct", "mean error %", "+.1f"),
            ],
        )
    )
    out.append(
        "knee (tokens per step where a decode step leaves its one-token time by 10%):\n"
        + _md(
            fit.knees().to_dict("records"),
            [
                ("context", "context", "d"),
                ("floor_ms", "measured floor ms", ".2f"),
                ("measured_knee_tokens", "measured knee", ".0f"),
                ("max_measured_tokens", "largest T measured", "d"),
                ("model_floor_ms", "model floor ms", ".2f"),
                ("model_knee_tokens", "model knee", ".0f"),
            ],
        )
    )
    return "\n\n".join(out)


def _gpu_stem(table) -> str:
    from workbench.paths import project_root

    stem = table.gpu_name.lower().replace("nvidia", "").strip().replace(" ", "-")
    if not (project_root() / "data" / "gpus" / f"{stem}.toml").is_file():
        raise typer.BadParameter(f"no data sheet data/gpus/{stem}.toml for {table.gpu_name!r}; pass --gpu NAME")
    return stem


def _fit_and_write(paths: list[Path], *, gpu: Optional[str], write_profile: Optional[str], carry: str) -> None:
    from workbench.calibration import fit_table, load_table, profile_text
    from workbench.calibration._profile import write_profile as write
    from workbench.paths import project_root

    for path in paths:
        table = load_table(path)
        if not table.calibration:
            typer.echo(f"{path}: a CPU test run, not a calibration; nothing to fit")
            continue
        fit = fit_table(table, gpu=gpu or _gpu_stem(table))
        typer.echo(fit_report(fit) + "\n")
        if write_profile:
            name = (
                write_profile.replace("{shape}", table.name)
                if "{shape}" in write_profile or len(paths) == 1
                else f"{write_profile}-{table.name}"
            )
            root = project_root()
            rel = (
                str(table.path.resolve().relative_to(root))
                if table.path.resolve().is_relative_to(root)
                else str(table.path)
            )
            text = profile_text(
                fit,
                name=name,
                carry=root / "data" / "profiles" / f"{carry}.toml",
                table_path=rel,
                description=f"One {table.gpu_name}, {table.plan['target']['name']}: the roofline fitted "
                f"to GPU kernel timings ({rel}).",
            )
            dst = write(root / "data" / "profiles" / f"{name}.toml", text)
            typer.echo(f"wrote {dst}")


@calibrate_app.callback()
def calibrate_command(
    ctx: typer.Context,
    host: Annotated[Optional[str], HOST_OPTION] = None,
    preset: Annotated[
        Optional[str],
        typer.Option(
            "--preset",
            help="shape preset(s), comma-separated: llama3-8b, qwen3-30b-a3b (tiny, tiny-moe: CPU test shapes)",
        ),
    ] = None,
    model: Annotated[
        Optional[str], typer.Option("--model", help="target model: a data/models stem or a .toml file")
    ] = None,
    draft: Annotated[Optional[str], typer.Option("--draft", help="draft model likewise ('none': no draft)")] = None,
    tp: Annotated[
        Optional[int], typer.Option("--tp-size", help="tensor-parallel ranks (one rank's shapes are timed; default 1)")
    ] = None,
    gpus: Annotated[
        Optional[str], typer.Option("--gpus", help="GPU indices, e.g. 0,1 (two or more: all-reduce too)")
    ] = None,
    quick: Annotated[bool, typer.Option("--quick", help="the short grid (about 1-3 min per shape on an H200)")] = False,
    out: Annotated[
        Optional[Path],
        typer.Option(
            "--out",
            help="local folder for the tables (default data/calibration/<host>-<shape>); the same folder resumes",
        ),
    ] = None,
    python: Annotated[Optional[str], typer.Option("--python", help="the host's Python that has PyTorch")] = None,
    device: Annotated[
        str, typer.Option("--device", help="auto (a GPU) or cpu (tiny shapes: a test, never a calibration)")
    ] = "auto",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="plan only (points, memory, time); no torch needed")
    ] = False,
    gpu: Annotated[
        Optional[str],
        typer.Option("--gpu", help="data sheet to fit against (data/gpus/NAME.toml; default from the GPU's name)"),
    ] = None,
    write_profile: Annotated[
        Optional[str], typer.Option("--write-profile", help="write data/profiles/NAME.toml from the fit")
    ] = None,
    carry: _CarryOpt = DEFAULT_CARRY,
    old_tp: Annotated[Optional[int], typer.Option("--tp", hidden=True)] = None,
) -> None:
    """Upload remote/gpu_calibrate.py to --host, run it with the host's Python that has PyTorch (progress shown,
    resumable: run the same command again), fetch the raw tables, and fit the simulator's terms to them.

    On 'local' it runs here when a GPU is present and refuses clearly otherwise.
    """
    if ctx.invoked_subcommand is not None:
        return
    if host is None:
        typer.echo(ctx.get_help())
        raise typer.Exit(2)
    from workbench.calibration import CalibrationRequest, run_calibration
    from workbench.errors import ConfigError
    from workbench.hosts import get_host
    from workbench.paths import resolve

    if tp is not None and old_tp is not None:
        raise ConfigError("--tp is the former name of --tp-size; give --tp-size once")
    tp = tp if tp is not None else (old_tp if old_tp is not None else 1)
    try:
        ids = tuple(int(g) for g in gpus.split(",")) if gpus else ()
    except ValueError:
        raise ConfigError(f"--gpus takes indices such as 0,1; got {gpus!r}") from None
    request = CalibrationRequest(
        presets=tuple(p for p in (preset or "").split(",") if p),
        model=model,
        draft=draft,
        tp=tp,
        gpus=ids,
        quick=quick,
        device=device,
    )
    shape = "-".join(request.presets) or Path(model or "model").stem
    folder = resolve(out) if out else resolve(f"{DEFAULT_OUT}/{host}-{shape}")
    with get_host(host) as h:
        run = run_calibration(h, request, out_dir=folder, python=python, dry_run=dry_run, progress=typer.echo)
    if dry_run:
        import json

        typer.echo(json.dumps(list(run.plans), indent=1))
        typer.echo(f"plans fetched into {folder}")
        return
    typer.echo(
        f"{len(run.tables)} table(s) in {folder} ({run.duration_s:.0f} s on host {run.host}); log {run.log_path}"
    )
    _fit_and_write(list(run.tables), gpu=gpu, write_profile=write_profile, carry=carry)


@calibrate_app.command("fit")
def fit_command(
    tables: Annotated[
        list[Path], typer.Argument(metavar="TABLE", help="timing tables (NAME.json) or a folder of them")
    ],
    gpu: Annotated[
        Optional[str], typer.Option("--gpu", help="data sheet (data/gpus/NAME.toml; default from the table)")
    ] = None,
    write_profile: Annotated[
        Optional[str],
        typer.Option(
            "--write-profile",
            help="write data/profiles/NAME.toml (several tables: NAME-<shape>, or put {shape} in NAME)",
        ),
    ] = None,
    carry: _CarryOpt = DEFAULT_CARRY,
) -> None:
    """Fit the roofline's terms to stored tables: residual per point, held-out errors, knees; optionally write a profile."""
    paths: list[Path] = []
    for t in tables:
        paths += sorted(p for p in t.glob("*.json") if not p.name.endswith(".plan.json")) if t.is_dir() else [t]
    _fit_and_write(paths, gpu=gpu, write_profile=write_profile, carry=carry)
