"""``workbench bench``: run a sweep from a terminal, into the runs folder, and print its summary.

The same call the notebooks make (:func:`workbench.benchmark_variants`: the same plan,
defaults, identity and resume rules), then one line per (variant, level): n repeats and
the mean with its 95% interval of output tok/s, per-request tok/s and accept length.
Registered in :mod:`workbench.cli` in one line. It lives at the root, not in
``workbench/bench/``, because it drives the root glue (variants, servers, store,
analysis), which the bench package may not import (docs/ARCHITECTURE.md, rule 4).

Importing this module is cheap (typer only); the sweep machinery is imported when the
command runs, so ``workbench --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from workbench.errors import ConfigError
from workbench.variants.cli import DraftModelPathOption, GpusOption, ModelPathOption, TpSizeOption

__all__ = ["bench_command", "parse_levels", "summary_lines"]

#: Metrics of the summary, with their column titles and decimals.
SUMMARY_METRICS = (("output_throughput_tok_s", "output tok/s", 1), ("mean_per_request_tok_s", "per-request tok/s", 1),
                   ("accept_length", "accept length", 2))


def parse_levels(text: str) -> list[int]:
    """``"1,2,4"`` -> ``[1, 2, 4]``.

    Raises:
        ConfigError: a part that is not a whole number (the plan checks the range).
    """
    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        return [int(p) for p in parts]
    except ValueError:
        raise ConfigError(f"--levels must be comma-separated whole numbers (requests in flight), e.g. 1,2,4; "
                          f"got {text!r}") from None


def _cell(mean: float, lo: float, hi: float, digits: int) -> str:
    if mean != mean:
        return "-"
    if lo != lo:
        return f"{mean:.{digits}f} (no CI)"
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def summary_lines(means: Any) -> list[str]:
    """A text table of :func:`workbench.analysis.repeat_table` rows (variant, concurrency, n, metrics)."""
    header = ["variant", "concurrency", "n", *[f"{title} (95% CI)" for _, title, _ in SUMMARY_METRICS]]
    rows = [[str(r["variant"]), str(int(r["concurrency"])), str(int(r["n"])),
             *[_cell(r[m], r[f"{m}_lo"], r[f"{m}_hi"], d) for m, _, d in SUMMARY_METRICS]]
            for r in means.to_dict("records")]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    fmt = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    return [fmt.format(*header), *(fmt.format(*row) for row in rows)]


def bench_command(
    variants: Annotated[Optional[list[str]], typer.Argument(
        metavar="VARIANT", help="Variant names (data/variants/) or files (or --grid).")] = None,
    host: Annotated[str, typer.Option("--host", "-H", help="'local' or an ssh config alias.")] = "local",
    engine: Annotated[Optional[str], typer.Option(help="'sim' or 'sglang' (default: sim locally, sglang on a host).")] = None,
    levels: Annotated[Optional[str], typer.Option("--levels", help="Concurrency levels, e.g. 1,2,4 (default 1..64).")] = None,
    requests: Annotated[Optional[int], typer.Option("--requests", help="Requests per level (default max(16, 2c)).")] = None,
    repeats: Annotated[Optional[int], typer.Option(
        "--repeats", help="Times each level is measured (default: 3 on a real engine, 1 on the simulator).")] = None,
    label: Annotated[Optional[str], typer.Option("--label", help="Name of the sweep (part of its identity).")] = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="Start new runs instead of resuming this sweep's.")] = False,
    runs_dir: Annotated[Path, typer.Option("--runs-dir", help="Runs folder (relative: to the project root).")] = Path("data/runs"),
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", help="Output tokens per request.")] = 256,
    time_scale: Annotated[Optional[float], typer.Option(
        "--time-scale", help="Simulator only: simulated seconds per wall second (default 2).")] = None,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Progress bars.")] = True,
    model_path: ModelPathOption = None,
    draft_model_path: DraftModelPathOption = None,
    tp_size: TpSizeOption = None,
    gpus: GpusOption = None,
    grid: Annotated[Optional[str], typer.Option(
        "--grid", help="A grid (data/grids/NAME.toml or a file) of topk x num_steps x num_draft_tokens on a template "
        "variant: its points are measured after VARIANT..., each checked first (refused points are named).")] = None,
) -> None:
    """Benchmark VARIANT... at each concurrency level, repeat by repeat, and print a summary.

    Runs the sweep into the runs folder exactly as the notebooks do; running the same
    command again resumes it (finished levels are skipped), --fresh starts anew. Prints,
    per variant and level, n repeats and the mean with its 95% interval. Exit status 1
    when a server failed (the others are still measured), 2 for bad input.
    """
    from workbench._investigation import benchmark_variants

    if not variants and grid is None:
        raise ConfigError("name the variants to measure (e.g. `workbench bench baseline eagle3-topk4`) or a --grid")
    failures: list[Any] = []
    paths = benchmark_variants(
        variants or [], grid=grid, model_path=model_path, draft_model_path=draft_model_path, tp_size=tp_size,
        gpus=gpus, host=host, engine=engine, concurrency_levels=parse_levels(levels) if levels is not None else None,
        requests_per_level=requests, repeats=repeats, label=label, fresh=fresh, runs_dir=runs_dir,
        max_new_tokens=max_new_tokens, time_scale=time_scale, progress=progress, on_failure=failures.append)
    for line in summary_lines(_means(paths)):
        typer.echo(line)
    for note in _crossovers(paths, variants or []):
        typer.echo(note)
    typer.echo("runs: " + ", ".join(str(p) for p in paths))
    for failure in failures:
        typer.echo(f"FAILED {failure.variant} ({failure.kind}); run {failure.run}:\n{failure.message}", err=True)
    if failures:
        raise typer.Exit(code=1)


def _means(paths: list[Path]) -> Any:
    """Means and intervals over repeats of the runs' levels (one row per variant and concurrency)."""
    from workbench.analysis import repeat_table
    from workbench.store import load_runs

    _, levels = load_runs(paths)
    for m, _, _ in SUMMARY_METRICS:
        if m not in levels:
            levels[m] = float("nan")
    return repeat_table(levels, [m for m, _, _ in SUMMARY_METRICS])


def _crossovers(paths: list[Path], variants: list[str]) -> list[str]:
    """One line per speculative variant and metric when a variant named ``baseline`` was measured."""
    from workbench._investigation import load_study

    names = [Path(v).stem for v in variants]
    if "baseline" not in names or len(names) < 2:
        return []
    try:
        study = load_study(paths, baseline="baseline")
        return [f"{row.variant}, {row.metric}: {row.description}" for row in study.crossover_table().itertuples()]
    except ConfigError as exc:  # e.g. the baseline's server failed: no comparison to print
        return [f"(no crossover: {exc})"]
