"""``workbench report``: regenerate reports from the parameterized notebooks.

Command-line layer only: parses arguments, calls :func:`run_notebook` per notebook,
prints where each report went. Registered on the root app in :mod:`workbench.cli`.
Importing this module is cheap: the report machinery (papermill, nbformat) is
imported when the command runs, not for ``--help``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from workbench.errors import ConfigError, ReportError
from workbench.report._discovery import DEFAULT_OUT_DIR, default_notebooks, find_notebooks_dir
from workbench.report._from_runs import UNLIKE_ARMS, UNLIKE_ARMS_FLAG
from workbench.store.cli import RunsDirOption

__all__ = ["FROM_RUNS_PARAMETER", "REPORT_CONTEXT", "REPORT_METAVAR", "report_command", "split_report_args"]

#: Click context settings the command needs: NOTEBOOK and ``-p NAME VALUE`` are
#: parsed by :func:`split_report_args` (typer has no repeatable two-value option).
REPORT_CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True}

#: Usage-line placeholder for the words :func:`split_report_args` parses.
REPORT_METAVAR = "[NOTEBOOK]... [-p NAME VALUE]... [--from-runs RUN...] [--unlike-arms] [OPTIONS]"

_PARAM_FLAGS = ("-p", "--param")
#: ``--from-runs RUN...``: the ``from_runs`` parameter (stored runs to report on, nothing measured).
_FROM_RUNS = "--from-runs"
FROM_RUNS_PARAMETER = "from_runs"

#: What a from-runs report uses (the ``from_runs`` branch of spec_vs_baseline's sweep cell and what
#: follows it); any other parameter would only change a measurement that does not happen.
FROM_RUNS_APPLIES = frozenset(
    {
        FROM_RUNS_PARAMETER,
        "runs_dir",
        "baseline",
        "seed_pair",
        "workload",
        "ttft_target_ms",
        "tpot_target_ms",
        "report_dir",
        "progress",
        UNLIKE_ARMS,
    }
)


def check_from_runs(given: Mapping[str, Any]) -> list[Path]:
    """Refuse what a from-runs report cannot honour, before a kernel starts; return the runs' directories.

    Raises:
        ConfigError: a parameter that only changes a measurement (``repeats``, ``concurrency_levels``,
            ...: nothing is measured), or a run :func:`workbench.store.stored_runs` cannot read (checked
            before a kernel starts; the store is imported only then).
    """
    from workbench.report._params import did_you_mean

    ignored = sorted(set(given) - FROM_RUNS_APPLIES)
    if ignored:
        guesses = did_you_mean(ignored, FROM_RUNS_APPLIES - {FROM_RUNS_PARAMETER})
        raise ConfigError(
            (f"{guesses} " if guesses else "")
            + f"--from-runs renders stored runs and measures nothing, so {', '.join(ignored)} would be ignored. "
            f"Leave {'it' if len(ignored) == 1 else 'them'} out, or measure anew without --from-runs (e.g. "
            "`make report P='repeats=3'`, or `workbench bench VARIANT... --repeats 3` and then "
            "`workbench report --from-runs` on the runs it prints). With --from-runs only "
            f"{', '.join(sorted(FROM_RUNS_APPLIES - {FROM_RUNS_PARAMETER}))} apply."
        )
    from workbench.store import stored_runs

    return stored_runs(list(given[FROM_RUNS_PARAMETER]), runs_dir=given.get("runs_dir"))


def split_report_args(args: Sequence[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """Split leftover command-line words into notebook paths and ``-p NAME VALUE`` pairs.

    ``--from-runs RUN...`` (the words up to the next option or ``.ipynb`` path) becomes the pair
    ``("from_runs", "[RUN, ...]")`` (a YAML list; an existing directory is made absolute, since the
    notebook runs elsewhere); ``--unlike-arms`` becomes ``("unlike_arms", "true")``.

    Raises:
        ConfigError: ``-p`` without both NAME and VALUE, ``--from-runs`` without a run, or an
            unknown option.
    """
    notebooks: list[str] = []
    pairs: list[tuple[str, str]] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word == _FROM_RUNS:
            runs = []
            while i + 1 < len(args) and not args[i + 1].startswith("-") and not args[i + 1].endswith(".ipynb"):
                i += 1
                runs.append(str(Path(args[i]).resolve()) if Path(args[i]).is_dir() else args[i])
            if not runs:
                raise ConfigError(
                    "--from-runs needs one or more run ids or run directories, e.g. --from-runs "
                    "20260601T090000Z-baseline-3fa91c 20260601T091500Z-eagle3-topk4-0b12cd "
                    "(`workbench runs list` shows them)"
                )
            pairs.append((FROM_RUNS_PARAMETER, json.dumps(runs)))
            i += 1
        elif word == UNLIKE_ARMS_FLAG:
            pairs.append((UNLIKE_ARMS, "true"))
            i += 1
        elif word in _PARAM_FLAGS:
            if i + 2 >= len(args):
                raise ConfigError(f"{word} needs a NAME and a VALUE, e.g. {word} requests_per_level 8")
            pairs.append((args[i + 1], args[i + 2]))
            i += 3
        elif word.startswith("-") and word != "-":
            raise ConfigError(f"unknown option {word!r} for `workbench report`; see `workbench report --help`")
        else:
            notebooks.append(word)
            i += 1
    return notebooks, pairs


def with_runs_dir(given: dict[str, Any], runs_dir: Path | None) -> dict[str, Any]:
    """``{"runs_dir": ...}`` for the notebooks that declare it, from ``--runs-dir`` (taken out of
    ``given``, so a notebook set without it is not refused) or ``-p runs_dir``; empty when neither.

    Raises:
        ConfigError: ``--runs-dir`` and ``-p runs_dir`` name different folders.
    """
    if runs_dir is None:
        return {}
    if given.get("runs_dir") is not None and str(given["runs_dir"]) != str(runs_dir):
        raise ConfigError(
            f"--runs-dir {runs_dir} and -p runs_dir {given['runs_dir']} name different runs folders; give one of them"
        )
    given.pop("runs_dir", None)
    return {"runs_dir": str(runs_dir)}


def reuse_lines(runs_dir: str | Path | None, started: datetime, finished: datetime) -> list[str]:
    """One line per run under the runs folder that a notebook's sweep resumed between ``started`` and ``finished``
    (the notebook's run) with levels stored before it began: its variant, run, how many (level, repeat) units it
    reused and since when they were stored, and how many it measured then. A line is written once per run, however
    often the sweep reopened it (each repeat's pass reopens the run, and a later pass finds the units an earlier
    one of the same notebook stored: those were measured now, not reused). Read from each manifest's ``resumed``
    record (:func:`workbench.store.open_run`) and ``units_completed``; a folder or manifest that cannot be read
    gives no line.

    Args:
        runs_dir: the runs folder as the notebook was given it (None: ``$WORKBENCH_RUNS_DIR`` or data/runs).
        started, finished: the notebook's run (timezone-aware).
    """
    from workbench.store import runs_root

    root = runs_root(runs_dir)
    lines = []
    for path in sorted(root.glob("*/manifest.json")) if root.is_dir() else []:
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(manifest, dict):
            continue
        created = _stamp(manifest.get("started_at"))
        if created is None or created >= started:  # a run this notebook created: nothing in it is older
            continue
        reopened = [
            entry
            for entry in manifest.get("resumed") or []
            if isinstance(entry, dict) and (at := _stamp(entry.get("at"))) is not None and started <= at <= finished
        ]
        if not reopened:
            continue
        # the first reopening in the window holds what was stored before the notebook began; later ones hold
        # this notebook's own units too
        reused = {tuple(u) for u in reopened[0].get("units_reused") or []}
        if not reused:
            continue
        stored = {tuple(u) for u in manifest.get("units_completed") or []}
        since = str(manifest.get("started_at") or "")[:16].replace("T", " ")
        lines.append(
            f"reused: {manifest.get('variant')}: {len(reused)} stored unit(s) (level x repeat) from run "
            f"{manifest.get('run_id', path.parent.name)}"
            + (f", stored since {since} UTC" if since else "")
            + f"; measured now: {len(stored - reused)}"
        )
    return lines


def _stamp(value: object) -> datetime | None:
    """A manifest's UTC time (``2026-12-06T08:09:55.536Z``) as an aware datetime; None when it is not one."""
    try:
        at = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=timezone.utc)


def _runs_dir_of(parameters: Mapping[str, Any], declared: Mapping[str, Any]) -> Any:
    """The runs folder a notebook used: its injected ``runs_dir``, else the default its parameters cell wrote
    (a literal; None, the default folder, when it is not one)."""
    import ast

    if "runs_dir" in parameters:
        return parameters["runs_dir"]
    written = declared.get("runs_dir")
    try:
        value = ast.literal_eval(written.default) if written is not None else None
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None


def _shown(params: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v!r}" for k, v in params.items()) or "(defaults)"


def _run_one(
    nb: Path,
    *,
    plan: Mapping[Path, dict[str, Any]],
    out: Path,
    kernel: str | None,
    cell_timeout: float | None,
    label: bool = False,
) -> Any:
    """:func:`run_notebook` for one notebook of the plan, progress on (lines labelled with its name when
    ``label``: it runs beside others). Module level, so a child process can be given it by name."""
    from workbench.report._runner import run_notebook

    return run_notebook(
        nb,
        out_dir=out,
        parameters=plan[nb],
        kernel_name=kernel,
        cell_timeout_s=cell_timeout,
        progress=True,
        progress_label=nb.stem if label else None,
    )


def report_command(
    ctx: typer.Context,
    params_file: Annotated[
        Optional[Path],
        typer.Option("--params-file", help="YAML file of parameters (name: value); -p overrides it."),
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory for the reports.")] = DEFAULT_OUT_DIR,
    kernel: Annotated[
        Optional[str],
        typer.Option("--kernel", help="Jupyter kernel to run with (default: python3 of this environment)."),
    ] = None,
    cell_timeout: Annotated[
        Optional[float],
        typer.Option("--cell-timeout", help="Fail a cell that runs longer than this many seconds."),
    ] = None,
    runs_dir: RunsDirOption = None,
) -> None:
    """Run notebooks with papermill and write offline HTML reports.

    With no NOTEBOOK, runs every notebook in notebooks/: inspect_source.ipynb,
    spec_vs_baseline.ipynb, then the others alphabetically; the notebooks that measure
    nothing (metadata workbench_report.measures false) run side by side in processes
    of their own on spare CPU only (SCHED_IDLE), while the others run one at a time.
    Each -p NAME VALUE
    (repeatable; VALUE is YAML, e.g. -p concurrency_levels "[1,2,4]") goes to the
    notebooks whose parameters cell declares NAME; a NAME no notebook declares is
    an error. Writes OUT/<name>.html, OUT/<name>.ipynb and charts in OUT/<name>/, then
    OUT/index.html listing every report in OUT.

    --from-runs RUN... renders from stored runs (ids, prefixes or run directories) without
    measuring anything: only the notebooks that declare from_runs run, chosen by what the runs
    hold: spec_vs_baseline for levels at concurrencies or request rates, workloads for offline
    levels (every request at once) or runs of several workloads. --unlike-arms (with
    --from-runs) compares arms measured on different workloads or endpoints, under a NOT
    LIKE-FOR-LIKE caveat naming each difference; without it they are not compared.

    --runs-dir DIR is the runs folder, as for bench, runs and import: it reaches every notebook
    that declares runs_dir (the same as -p runs_dir DIR, which it may not contradict).
    """
    # imported here, not at the top: papermill, nbformat and yaml cost seconds that `--help` need not pay
    from workbench.report._params import distribute_parameters, load_params_file, notebook_parameters, parse_param_pairs
    from workbench.report._schedule import run_beside, split_by_measuring

    names, pairs = split_report_args(ctx.args)
    given: dict[str, Any] = load_params_file(params_file) if params_file is not None else {}
    given.update(parse_param_pairs(pairs))
    given_runs_dir = with_runs_dir(given, runs_dir)

    if names:
        notebooks = [Path(n) for n in names]
        missing = [str(n) for n in notebooks if not n.is_file()]
        if missing:
            raise ConfigError(f"notebook(s) not found: {', '.join(missing)}")
    else:
        notebooks = default_notebooks(find_notebooks_dir(), with_runs=bool(given.get(FROM_RUNS_PARAMETER)))
    declared = {nb: notebook_parameters(nb) for nb in notebooks}
    if given.get(FROM_RUNS_PARAMETER) and not names:  # stored runs only: skip the notebooks that would measure
        declared = {nb: ps for nb, ps in declared.items() if FROM_RUNS_PARAMETER in ps}
    if given.get(FROM_RUNS_PARAMETER):
        runs = check_from_runs({**given, **given_runs_dir})
        if not names:  # the notebooks that can render what the runs hold
            from workbench.report._from_runs import notebooks_for_runs

            chosen, why = notebooks_for_runs(list(declared), runs, given)
            declared = {nb: declared[nb] for nb in chosen}
            for line in why:
                typer.echo(line)
    plan = distribute_parameters(declared, given)
    for nb, params in plan.items():  # --runs-dir: to the notebooks that declare runs_dir, never an error elsewhere
        params.update({k: v for k, v in given_runs_dir.items() if k in declared[nb]})

    failures: list[str] = []
    bad_input = 0
    started = time.monotonic()

    def finished(nb: Path, result: Any, exc: BaseException | None) -> None:
        nonlocal bad_input
        if isinstance(exc, ReportError):
            failures.append(str(nb))
            bad_input += bool(getattr(exc, "bad_input", False))
            typer.echo(f"FAILED {nb}: {exc}", err=True)
            return
        if exc is not None:
            raise exc
        typer.echo(f"  report:   {result.html}")
        typer.echo(f"  notebook: {result.executed}")
        if result.charts:
            typer.echo(f"  charts:   {result.report_dir} ({len(result.charts)} files)")
        typer.echo(f"  took {result.duration_s:.0f} s")
        for note in result.notes:  # what the report's first screen says a reader must not miss: one line each
            typer.echo(f"  {note}")
        reused = reuse_lines(
            _runs_dir_of(result.parameters, declared.get(nb, {})), result.started_at, result.finished_at
        )
        for line in reused:  # a re-run that measured little or nothing says so, by run
            typer.echo(f"  {line}")
        if reused and "fresh" in declared.get(nb, {}):
            typer.echo("  (stored levels are reused when the same sweep runs again; -p fresh true measures anew)")

    # the notebooks that measure nothing start first, side by side on spare CPU only, each in its own process;
    # the others run here meanwhile, one at a time
    beside, alone = split_by_measuring(list(plan))
    run = functools.partial(_run_one, plan=plan, out=out, kernel=kernel, cell_timeout=cell_timeout)
    if beside:
        import papermill  # noqa: F401  (imported once here, shared by the forked children)

        typer.echo(
            f"running {len(beside)} notebooks that measure nothing at once, on spare CPU only"
            + (" (beside the others)" if alone else "")
            + ": "
            + ", ".join(nb.name for nb in beside)
        )
        for nb in beside:
            typer.echo(f"running {nb} with {_shown(plan[nb])}")
    started_beside: contextlib.AbstractContextManager[Any] = (
        run_beside(beside, functools.partial(run, label=True)) if beside else contextlib.nullcontext(lambda: iter(()))
    )
    with started_beside as beside_finished:
        for nb in alone:
            typer.echo(f"running {nb} with {_shown(plan[nb])}")
            try:
                result, exc = run(nb), None
            except ReportError as error:
                result, exc = None, error
            finished(nb, result, exc)
        for nb, result, exc in beside_finished():
            finished(nb, result, exc)
    if out.is_dir():  # one page listing every report in the folder, linked relatively
        from workbench.report._index import write_index

        typer.echo(f"  index:    {write_index(out)}")  # in reading order: the answer first
    minutes, seconds = divmod(round(time.monotonic() - started), 60)
    typer.echo(
        f"{len(plan) - len(failures)} of {len(plan)} report(s) written to {out} in "
        f"{f'{minutes} min ' if minutes else ''}{seconds} s"
    )
    if failures:
        typer.echo(f"{len(failures)} of {len(plan)} notebook(s) failed: {', '.join(failures)}", err=True)
        # 2 when every failure was the notebook refusing its parameters (bad input), as for any command
        raise typer.Exit(code=2 if bad_input == len(failures) else 1)
