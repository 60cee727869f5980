"""``workbench import``: other tools' results into the run catalogue.

Registered in :mod:`workbench.cli` in one line::

    app.command("import")(import_command)

Importing this module is cheap: pandas and the readers are imported when the command runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from workbench.store.cli import RunsDirOption

__all__ = ["import_command"]

#: Level columns of the text summary (our names; missing values print as NaN).
SUMMARY = (
    "variant",
    "workload",
    "level_index",
    "repeat",
    "concurrency",
    "request_rate_req_s",
    "completed",
    "output_throughput_tok_s",
    "mean_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "accept_length",
)


def import_command(
    files: Annotated[
        list[Path],
        typer.Argument(
            metavar="FILE",
            help="Result files or folders: sglang.bench_serving JSONL, vllm bench serve "
            "--save-result JSON (one or several, or a folder of them: a sweep saved one file per rate is one run) or a "
            "vllm bench sweep folder, AIPerf profile_export_aiperf.json or .csv (or its aggregate, or an artifact "
            "folder), GuideLLM benchmarks JSON, InferenceX agg_*.json.",
        ),
    ],
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the imported rows as a JSON array, one object per row (our column names; "
            "quarantined rows carry quarantine_reason).",
        ),
    ] = False,
    variant: Annotated[
        Optional[str],
        typer.Option("--variant", help="Run name for every level (default: the tool's tag/label, else the file name)."),
    ] = None,
    engine: Annotated[
        Optional[str],
        typer.Option(
            "--engine", help="Engine the tool measured, where the file does not say (sglang, sim, vllm, ...)."
        ),
    ] = None,
    simulated: Annotated[
        Optional[bool],
        typer.Option(
            "--simulated/--measured",
            help="Whether the figures come from a simulator, where neither the file nor "
            "--engine says (default: measured).",
        ),
    ] = None,
    label: Annotated[Optional[str], typer.Option("--label", help="A label stored with each run.")] = None,
    runs_dir: RunsDirOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Read and check only; store nothing.")] = False,
    baseline: Annotated[
        Optional[str],
        typer.Option(
            "--baseline",
            help="Variant the others are compared with in the offline workload table (default: the first imported).",
        ),
    ] = None,
) -> None:
    """Import other tools' benchmark results as runs of kind "import", beside the workbench's own.

    Each level becomes a row with our column names and units (ms, tok/s); a metric the tool did
    not record stays missing, and figures whose definition differs from ours keep the tool's
    name (bench_serving_mean_itl_ms, ...). A row that breaks an invariant (TTFT above E2E,
    output throughput above what its request rate and lengths allow, ITL of 0 on a streamed
    run) is stored in the run's quarantine table with the reason, and never charted.
    Importing the same file again reuses its run. A record repeated in a file (or a file given
    twice) is kept once, and one line says how many were dropped; the same figures in two files
    under one run name, or a value no measurement can give (a duration of 0, a concurrency of
    1e300, a number too large for a float), stop the import with the file, record and field
    named (exit 2). Levels that sent every request at once (bench_serving's default offline
    mode) are also printed as a table comparing the workloads side by side, each variant against
    --baseline on the same workload.
    """
    from workbench.imports._importer import import_results

    result = import_results(
        files, variant=variant, engine=engine, simulated=simulated, label=label, runs_dir=runs_dir, store=not dry_run
    )
    for note in result.notes:  # beside --json's array, not in it
        typer.echo(note, err=as_json)
    if as_json:
        typer.echo(json.dumps(result.to_records(), indent=1, allow_nan=False))
        return
    runs = result.runs
    for row in runs.itertuples():
        state = "stored as" if row.created else ("already stored as" if row.path else "read (not stored)")
        where = f" {row.run_id}" if row.run_id else ""
        version = row.tool_version if isinstance(row.tool_version, str) else "version not recorded"
        sim = ", SIMULATED" if row.simulated else ""
        engine = row.engine if isinstance(row.engine, str) else "not recorded (pass --engine)"
        typer.echo(
            f"{row.source_file}: {row.tool} {version}, variant {row.variant!r}, engine {engine}{sim}: "
            f"{row.levels} level rows, {row.quarantined} quarantined, {row.requests} request rows; "
            f"{state}{where}"
        )
    if len(result.levels):
        cols = [c for c in SUMMARY if c in result.levels]
        typer.echo("")
        typer.echo(result.levels[cols].round(2).to_string(index=False))
    from workbench.imports._offline import offline_lines, offline_levels, offline_workloads

    if len(offline_levels(result.levels)):
        typer.echo("\noffline throughput (every request at once), workload by workload:")
        for line in offline_lines(offline_workloads(result.levels, baseline=baseline)):
            typer.echo(line)
    if len(result.quarantine):
        typer.echo("\nquarantined (stored, never charted):")
        for row in result.quarantine.itertuples():
            typer.echo(
                f"  {row.variant} level {row.level_index} repeat {row.repeat} ({row.source_record}): {row.reason}"
            )
