"""``workbench runs``: the run catalogue from a terminal (list, show, label, compare, delete, export).

Registered in :mod:`workbench.cli` in one line (``app.add_typer(runs_app, name="runs")``, through
:mod:`workbench.sweeps.cli`). It lives in ``sweeps/``, beside ``_bench_cli.py``, because ``compare``
and ``show`` summarise levels with the analysis package, which the store may not import
(docs/ARCHITECTURE.md, rule 4).
Importing it is cheap (typer only); pandas and the store are imported when a command runs.
Formats and the imported runs' contract: docs/RUNS.md.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from workbench.store.cli import RunsDirOption

__all__ = ["runs_app"]

runs_app = typer.Typer(
    help="The run catalogue: list, show, label, compare, delete and export stored runs.", no_args_is_help=True
)

#: The width `runs list` and `runs compare` keep their lines to (a terminal of 100 columns).
WIDTH = 100


@runs_app.command("list")
def list_command(
    runs_dir: RunsDirOption = None,
    all_columns: Annotated[bool, typer.Option("--all-columns", help="Every column (path, times, tool...).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per run.")] = False,
) -> None:
    """List every run, oldest first, with its state (complete, incomplete, failed, running, broken, ...).

    One line per run: its id, state, kind (simulated, measured on a real engine, or import), units
    ((level, repeat) pairs) stored of those planned, time scale and set: runs of one set share time scale,
    workload and requests per level, and a legend under the table says what each set is, with a note when
    the runs are of more than one (their figures are not like for like). What is wrong with a broken or
    unfinished run follows, one paragraph each. Lines fit 100 columns; --all-columns prints every column.

    A runs folder that does not exist is said so (exit 1), apart from one that holds no run (exit 0). Oldest
    first by start time; an imported run whose file has no measurement time by the time it was imported;
    folders without a readable manifest last.
    """
    from workbench.errors import ConfigError
    from workbench.store import runs_root, runs_root_source
    from workbench.sweeps._catalogue import list_runs

    base, source = runs_root(runs_dir), runs_root_source(runs_dir)
    if base.exists() and not base.is_dir():
        raise ConfigError(
            f"The runs folder {base} (from {source}) is a file, not a folder: point --runs-dir or "
            "WORKBENCH_RUNS_DIR at the folder your runs are in"
        )
    if not base.exists():
        typer.echo(
            f"no runs folder: {base} (from {source}) does not exist; `workbench bench`, `workbench import` "
            "or a notebook creates it, or point --runs-dir at the folder your runs are in",
            err=True,
        )
        raise typer.Exit(code=1)
    table = list_runs(runs_dir)
    if as_json:
        typer.echo(table.to_json(orient="records", indent=1))
        return
    if not len(table):
        typer.echo(f"no runs stored in {base} (the folder exists and holds no run)")
        return
    if all_columns:
        typer.echo(table.astype(object).where(table.notna(), "").to_string(index=False))
        return
    for line in listing_lines(table):
        typer.echo(line)


def _scale(row: Mapping[str, Any]) -> str:
    """A run's time scale for a person: ``8x``; ``""`` where none is recorded (an import)."""
    value = row.get("time_scale")
    return f"{float(value):g}x" if isinstance(value, (int, float)) and value == value else ""


def _setting_key(row: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """What must agree for two runs' figures to be like for like: time scale, workload, requests per level
    (None for a run whose plan is unknown: a broken one)."""
    if not row.get("workload"):
        return None
    return _scale(row), str(row["workload"]), str(row.get("requests_per_level") or "as the file says")


def _set_names(keys: Sequence[tuple[str, str, str] | None]) -> dict[tuple[str, str, str], str]:
    """A letter per distinct setting, in the order runs show them (A, B, ..., Z, then S27, S28, ...)."""
    letters: dict[tuple[str, str, str], str] = {}
    for key in keys:
        if key is not None and key not in letters:
            n = len(letters)
            letters[key] = chr(ord("A") + n) if n < 26 else f"S{n + 1}"
    return letters


def listing_lines(table: Any) -> list[str]:
    """``runs list``'s text: the table (id, state, kind, units, scale, set, and label where any run has one),
    then the legend of the sets, a note when there are several, and each run's problem, wrapped to :data:`WIDTH`."""
    import textwrap

    rows = table.astype(object).where(table.notna(), None).to_dict("records")
    keys = [_setting_key(r) for r in rows]
    sets = _set_names(keys)
    labelled = any(r.get("label") for r in rows)
    header = ["run_id", "state", "kind", "units", "scale", "set", *(["label"] if labelled else [])]
    cells = []
    for r, key in zip(rows, keys):
        planned, stored = r.get("units_planned"), r.get("units_stored")
        units = "" if stored is None else f"{int(stored)}" + (f"/{int(planned)}" if planned is not None else "")
        cells.append(
            [
                str(r["run_id"]),
                str(r.get("state") or ""),
                str(r.get("kind") or ""),
                units,
                _scale(r),
                sets.get(key, "") if key is not None else "",
                *([str(r.get("label") or "")] if labelled else []),
            ]
        )
    widths = [max(len(x) for x in col) for col in zip(header, *cells)]
    lines = ["  ".join(x.ljust(w) for x, w in zip(line, widths)).rstrip() for line in [header, *cells]]
    if sets:
        lines.append("")
        for key, letter in sets.items():
            count = keys.count(key)
            scale, workload, requests = key
            text = (
                f"set {letter} ({count} run{'s' if count > 1 else ''}): "
                + (f"time scale {scale}, " if scale else "")
                + f"workload {workload}, requests per level {requests}"
            )
            lines += textwrap.wrap(text, WIDTH, subsequent_indent="  ")
        if len(sets) > 1:
            differ = [
                what
                for i, what in enumerate(("time scale", "workload", "requests per level"))
                if len({k[i] for k in sets}) > 1
            ]
            lines += textwrap.wrap(
                f"note: these runs are of {len(sets)} sets, which differ in {' and '.join(differ)}: "
                "figures of different sets are not like for like; compare runs of one set "
                "(`workbench runs compare` says so too)",
                WIDTH,
            )
    problems = [(r["run_id"], r["problem"]) for r in rows if r.get("problem")]
    if problems:
        lines.append("")
        for run_id, problem in problems:
            lines += textwrap.wrap(f"{run_id}: {problem}", WIDTH, subsequent_indent="  ")
    return lines


@runs_app.command("show")
def show_command(
    run: Annotated[str, typer.Argument(metavar="RUN", help="Run id, unique prefix of one, or run directory.")],
    runs_dir: RunsDirOption = None,
) -> None:
    """What a run is (provenance, state, labels) and its levels: mean [95% CI] (n repeats)."""
    from workbench.sweeps._catalogue import show_run

    for line in show_run(run, runs_dir=runs_dir).lines():
        typer.echo(line)


@runs_app.command("label")
def label_command(
    run: Annotated[str, typer.Argument(metavar="RUN", help="Run id, unique prefix of one, or run directory.")],
    labels: Annotated[list[str], typer.Argument(metavar="LABEL", help="Labels to add (or remove).")],
    remove: Annotated[bool, typer.Option("--remove", help="Remove these labels instead.")] = False,
    runs_dir: RunsDirOption = None,
) -> None:
    """Add labels to a run (kept in its labels.json), or remove them with --remove; prints its labels."""
    from workbench.sweeps._catalogue import label_run

    now = label_run(run, *labels, remove=remove, runs_dir=runs_dir)
    typer.echo(f"labels: {', '.join(now) if now else '(none)'}")


@runs_app.command("compare")
def compare_command(
    runs: Annotated[list[str], typer.Argument(metavar="RUN", help="Two or more runs.")],
    metric: Annotated[
        Optional[list[str]],
        typer.Option(
            "--metric",
            "-m",
            help="Level column to compare (repeatable; default output_throughput_tok_s and mean_per_request_tok_s).",
        ),
    ] = None,
    runs_dir: RunsDirOption = None,
) -> None:
    """Two or more runs' levels side by side: per metric and level, each run's mean [95% CI] (n repeats).

    A --metric none of the runs records is refused (exit 2) with the closest names and the metrics they record.
    """
    from workbench.sweeps._catalogue import COMPARE_METRICS, compare_lines, compare_runs

    metrics = tuple(metric) if metric else COMPARE_METRICS
    if metric and len(runs) > 1:  # one run: compare_runs says two are needed
        _check_metrics(metrics, runs, runs_dir)
    for line in compare_lines(compare_runs(runs, metrics=metrics, runs_dir=runs_dir), metrics):
        typer.echo(line)


#: Numeric level columns that say which level a row is, not what was measured there.
_LEVEL_KEYS = frozenset(
    {
        "level_index",
        "repeat",
        "concurrency",
        "request_rate_req_s",
        "max_new_tokens",
        "time_scale",
        "input_len",
        "temperature",
        "sweep_value",
        "simulated",
    }
)


def _recorded_metrics(runs: list[str], runs_dir: str | Path | None) -> list[str]:
    """The metrics ``runs`` record: numeric level columns of any of them, less :data:`_LEVEL_KEYS`, sorted."""
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    from workbench.store import find_run, load_run

    found: set[str] = set()
    for run in runs:
        levels = load_run(find_run(run, root=runs_dir)).levels
        found |= {
            str(c)
            for c in levels.columns
            if is_numeric_dtype(levels[c]) and not is_bool_dtype(levels[c]) and c not in _LEVEL_KEYS
        }
    return sorted(found)


def _check_metrics(metrics: tuple[str, ...], runs: list[str], runs_dir: str | Path | None) -> None:
    """Refuse a metric none of ``runs`` records (a misspelling, a descriptor such as ``mode``).

    Raises:
        ConfigError: naming each unknown metric, the closest recorded ones and every recorded one.
    """
    import difflib

    from workbench.errors import ConfigError

    known = _recorded_metrics(runs, runs_dir)
    unknown = [m for m in metrics if m not in known]
    if not unknown:
        return
    close = [c for m in unknown for c in difflib.get_close_matches(m, known, n=3, cutoff=0.6)]
    hint = f" Did you mean {' or '.join(dict.fromkeys(close))}?" if close else ""
    raise ConfigError(
        f"--metric {', '.join(unknown)}: no such metric in the levels of {', '.join(runs)}.{hint} "
        f"Metrics these runs record: {', '.join(known) or 'none'}"
    )


@runs_app.command("delete")
def delete_command(
    runs: Annotated[list[str], typer.Argument(metavar="RUN", help="Runs to delete.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking.")] = False,
    runs_dir: RunsDirOption = None,
) -> None:
    """Delete runs (their whole directories). Asks for each unless --yes; refuses a run being written."""
    from workbench.sweeps._catalogue import delete_run

    def ask(description: str) -> bool:
        return yes or typer.confirm(f"delete {description}?", default=False)

    for run in runs:
        gone = delete_run(run, runs_dir=runs_dir, confirm=ask)
        typer.echo(f"deleted {gone}" if gone is not None else f"kept {run}")


@runs_app.command("export")
def export_command(
    runs: Annotated[Optional[list[str]], typer.Argument(metavar="RUN", help="Runs (default: all).")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="CSV file (default: standard output).")] = None,
    csv: Annotated[bool, typer.Option("--csv", help="CSV, the one format: accepted, never needed.")] = False,
    requests: Annotated[
        bool, typer.Option("--requests", help="One row per request instead of one per level and repeat.")
    ] = False,
    runs_dir: RunsDirOption = None,
) -> None:
    """Export runs' level rows (or request rows) as CSV, on standard output or into --out FILE.

    Columns run_id, variant, engine, simulated first. CSV is the only format, so there is
    nothing to choose (--csv is accepted and changes nothing).
    """
    del csv  # CSV is what is written either way
    import warnings

    from workbench.sweeps._catalogue import export_runs

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = export_runs(runs or None, out=out, requests=requests, runs_dir=runs_dir)
    for w in caught:
        typer.echo(f"warning: {w.message}", err=True)
    if out is None:
        sys.stdout.write(table.to_csv(index=False))
    else:
        typer.echo(f"wrote {len(table)} rows to {out}", err=True)
