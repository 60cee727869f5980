"""``workbench bench``: run a sweep from a terminal, into the runs folder, and print its summary.

The same call the notebooks make (:func:`workbench.benchmark_variants`: the same plan,
defaults, identity and resume rules; the load options are its ``load=``), then one line
per (variant, level; with ``--sweep``, per swept value too): n repeats and the mean with
its 95% interval of output tok/s, per-request tok/s and accept length (those lines are
:mod:`workbench.sweeps._bench_summary`'s).
Registered in :mod:`workbench.cli` in one line (through :mod:`workbench.sweeps.cli`). It lives in
``sweeps/``, not in ``workbench/bench/``, because it drives variants, servers, store and
analysis, which the bench package may not import (docs/ARCHITECTURE.md, rule 4).

Importing this module is cheap (typer only); the sweep machinery is imported when the
command runs, so ``workbench --help`` stays fast.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from workbench.errors import ConfigError
from workbench.engines import DEFAULT_SIM_TIME_SCALE
from workbench.engines.cli import EngineOpt
from workbench.hosts.cli import HostOpt
from workbench.store.cli import RunsDirOption
from workbench.sweeps._bench_summary import (
    _crossovers,
    _means,
    _resume_line,
    _tally,
    _units,
    _warning_lines,
    schedule_lines,
    summary_lines,
)
from workbench.variants.cli import DraftModelPathOption, GpusOption, ModelPathOption, TpSizeOption, grid_lines
from workbench.variants.cli import grid_option

__all__ = ["bench_command", "load_options", "parse_levels", "parse_rates"]


def parse_levels(text: str) -> list[int]:
    """``"1,2,4"`` -> ``[1, 2, 4]``.

    Raises:
        ConfigError: an empty part (``"1,,2"``) or one that is not a whole number (the plan checks the
            range and refuses a level named twice).
    """
    from workbench.bench import parse_number_list

    return parse_number_list("--levels", text, int, "whole numbers (requests in flight)", "1,2,4")


def parse_rates(text: str) -> list[float]:
    """``"0.5,2,8"`` -> ``[0.5, 2.0, 8.0]``.

    Raises:
        ConfigError: a part that is not a number, or one too large for a float (``1e400``); the plan checks
            the range (a rate too low for a level to end in a day) and the sweep refuses ``inf``.
    """
    from workbench.bench import parse_number_list

    return parse_number_list("--request-rates", text, float, "numbers (requests per second)", "0.5,2,8")


def load_options(
    *,
    backend: str | None = None,
    temperature: float | None = None,
    ignore_eos: bool | None = None,
    input_len: int | None = None,
    sweep: str | None = None,
    sweep_values: str | None = None,
) -> dict[str, Any]:
    """The ``load=`` of :func:`workbench.benchmark_variants` from the command's load options.

    Only the options given are set, so a command without them plans the sweep the
    notebooks' defaults plan (:data:`workbench.bench.LOAD_DEFAULTS`), with the same
    identity. ``sweep_values`` is parsed like ``--levels``: whole numbers of tokens for
    ``input_len`` and ``output_len``, numbers for ``temperature`` (the plan checks the range).

    Raises:
        ConfigError: an unknown ``--backend`` or ``--sweep``, ``--sweep-values`` that do not
            parse, or one of ``--sweep`` and ``--sweep-values`` without the other; each
            message names the option.
    """
    from workbench.bench import ROUTES, SWEEP_DIMENSIONS, parse_number_list

    if backend is not None and backend not in ROUTES:
        raise ConfigError(
            f"--backend must be one of {', '.join(ROUTES)} (SGLang's native /generate, or the "
            f"OpenAI-compatible /v1/completions and /v1/chat/completions), got {backend!r}"
        )
    if sweep is not None and sweep not in SWEEP_DIMENSIONS:
        raise ConfigError(
            f"--sweep must be one of {', '.join(SWEEP_DIMENSIONS)} (varied besides the concurrency), got {sweep!r}"
        )
    if (sweep is None) != (sweep_values is None):
        raise ConfigError("--sweep and --sweep-values go together, e.g. --sweep output_len --sweep-values 128,2048")
    values = None
    if sweep_values is not None:
        values = (
            parse_number_list("--sweep-values", sweep_values, float, "numbers (temperatures)", "0,0.7,1")
            if sweep == "temperature"
            else parse_number_list(
                "--sweep-values", sweep_values, int, f"whole numbers of tokens ({sweep})", "128,2048"
            )
        )
    given = {
        "backend": backend,
        "temperature": temperature,
        "ignore_eos": ignore_eos,
        "input_len": input_len,
        "sweep": sweep,
        "sweep_values": values,
    }
    return {k: v for k, v in given.items() if v is not None}


def bench_command(
    ctx: typer.Context,
    variants: Annotated[
        Optional[list[str]],
        typer.Argument(metavar="VARIANT", help="Variant names (data/variants/) or files (or --grid)."),
    ] = None,
    host: HostOpt = "local",
    engine: EngineOpt = None,
    levels: Annotated[
        Optional[str], typer.Option("--levels", help="Concurrency levels, e.g. 1,2,4 (default 1..64).")
    ] = None,
    request_rates: Annotated[
        Optional[str],
        typer.Option(
            "--request-rates",
            help="Open loop instead of --levels: request rates in req/s (Poisson arrivals), e.g. "
            "0.5,2,8; the summary and crossovers are then per rate.",
        ),
    ] = None,
    requests: Annotated[
        Optional[int], typer.Option("--requests", help="Requests per level (default max(16, 2c)).")
    ] = None,
    repeats: Annotated[
        Optional[int],
        typer.Option(
            "--repeats", help="Times each level is measured (default: 3 on a real engine, 1 on the simulator)."
        ),
    ] = None,
    label: Annotated[Optional[str], typer.Option("--label", help="Name of the sweep (part of its identity).")] = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="Start new runs instead of resuming this sweep's.")] = False,
    runs_dir: RunsDirOption = None,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", help="Output tokens per request.")] = 256,
    backend: Annotated[
        Optional[str],
        typer.Option(
            "--backend",
            help="Route: generate (SGLang's /generate, default), completions (/v1/completions) or chat "
            "(/v1/chat/completions).",
        ),
    ] = None,
    temperature: Annotated[
        Optional[float], typer.Option("--temperature", help="Sampling temperature (default 0.0: greedy).")
    ] = None,
    ignore_eos: Annotated[
        Optional[bool],
        typer.Option(
            "--ignore-eos/--no-ignore-eos",
            help="Generate past EOS, so every request has --max-new-tokens (default: on).",
        ),
    ] = None,
    input_len: Annotated[
        Optional[int],
        typer.Option("--input-len", help="Send random token ids of this many prompt tokens instead of the prompt set."),
    ] = None,
    prompt_set: Annotated[
        Optional[str],
        typer.Option(
            "--prompt-set",
            help="Prompt set: a name (data/prompts/NAME.jsonl), a JSONL file, or sharegpt:PATH "
            "(ShareGPT-style JSON/JSONL); default: default.",
        ),
    ] = None,
    sweep: Annotated[
        Optional[str],
        typer.Option(
            "--sweep",
            help="Also vary input_len, output_len (= max new tokens) or temperature: every concurrency "
            "level is measured at each of --sweep-values.",
        ),
    ] = None,
    sweep_values: Annotated[
        Optional[str],
        typer.Option("--sweep-values", help="Values of --sweep, e.g. 128,2048 (tokens) or 0,1 (temperature)."),
    ] = None,
    time_scale: Annotated[
        Optional[float],
        typer.Option(
            "--time-scale",
            help="Simulator only: simulated seconds per wall second (default "
            f"{DEFAULT_SIM_TIME_SCALE:g}, as in the notebooks: workbench.engines.DEFAULT_SIM_TIME_SCALE, whose "
            "docstring gives its measured fidelity).",
        ),
    ] = None,
    sim_profile: Annotated[
        Optional[str],
        typer.Option(
            "--sim-profile",
            help="Simulator only: the hardware and model it models, a name in data/profiles/ or a "
            "TOML file (default seed-pcie-8gpu; e.g. h200-llama3-8b beside real runs on an H200).",
        ),
    ] = None,
    progress: Annotated[
        Optional[bool],
        typer.Option(
            "--progress/--no-progress",
            help="Progress bars (default: when stderr is a terminal; otherwise one line per level on stderr, no bars).",
        ),
    ] = None,
    model_path: ModelPathOption = None,
    draft_model_path: DraftModelPathOption = None,
    tp_size: TpSizeOption = None,
    gpus: GpusOption = None,
    baseline: Annotated[
        Optional[str],
        typer.Option("--baseline", help="The variant the crossovers are against (default: the first VARIANT)."),
    ] = None,
    grid: Annotated[
        Optional[str],
        typer.Option(
            "--grid",
            help="A grid of topk x num_steps x num_draft_tokens on a template variant (data/grids/NAME.toml, "
            'a file, or its keys inline: \'template = "eagle3-topk4", topk = [1, 4], num_steps = [2], '
            "num_draft_tokens = [4, 8]'): its points are measured after VARIANT..., each checked first; refused points "
            "are named and nothing is launched (exit 2) unless --skip-refused.",
        ),
    ] = None,
    skip_refused: Annotated[
        bool,
        typer.Option(
            "--skip-refused",
            help="With --grid: measure the accepted points when some are refused (each is still named, with why).",
        ),
    ] = False,
    fleet: Annotated[
        Optional[str],
        typer.Option(
            "--fleet",
            help="Run the (variant, repeat) units as Ray tasks on this Ray cluster (host:6379, or auto), as "
            "many at once as its GPU slots allow; replaces --host (docs/FLEET.md; needs the fleet extra).",
        ),
    ] = None,
    one_unit_per_host: Annotated[
        bool,
        typer.Option(
            "--one-unit-per-host",
            help="With --fleet: at most one unit at a time on each host (no neighbours sharing "
            "its CPU, PCIe and memory bandwidth).",
        ),
    ] = False,
    detach: Annotated[
        bool,
        typer.Option(
            "--detach",
            help="With --fleet NAME (a fleet of `workbench fleet up`): submit the sweep as a Ray job on it "
            "and return; it goes on without this command, `workbench fleet attach` pulls its units.",
        ),
    ] = False,
) -> None:
    """Benchmark VARIANT... at each concurrency level, repeat by repeat, and print a summary.

    Runs the sweep into the runs folder exactly as the notebooks do (the load options are
    benchmark_variants' load=); running the same command again resumes it (finished
    levels are skipped, and a line per variant names the levels reused, the run they are from,
    and the levels measured now), --fresh starts anew. Prints, per variant and level (and swept value, with --sweep),
    n repeats and the mean with its 95% interval, then how many levels were measured now and
    how many reused. Progress: bars on a terminal, else one line per level on stderr (per unit,
    with the host it ran on, with --fleet). Exit
    status 1 when a server failed (the others are still measured), 2 for bad input.
    """
    if not variants and grid is None:
        raise ConfigError("name the variants to measure (e.g. `workbench bench baseline eagle3-topk4`) or a --grid")
    if skip_refused and grid is None:
        raise ConfigError("--skip-refused is about a grid's refused points; give --grid too")
    if detach:
        return _submit(ctx, fleet, host, runs_dir)
    from workbench.sweeps._fleet import Fleet
    from workbench.sweeps._investigation import benchmark_variants

    if levels is not None and request_rates is not None:
        raise ConfigError(
            "give --levels (closed loop: requests in flight) or --request-rates (open loop: requests "
            "per second), not both"
        )
    points = (
        _grid_points(
            grid,
            skip_refused=skip_refused,
            host=host,
            engine=engine,
            parameters={
                "model_path": model_path,
                "draft_model_path": draft_model_path,
                "tp_size": tp_size,
                "gpus": gpus,
            },
        )
        if grid is not None
        else []
    )
    names = [*(Path(v).stem for v in variants or []), *(p.name for p in points)]
    if baseline is not None and baseline not in names:
        raise ConfigError(
            f"--baseline {baseline!r} is not one of the variants measured ({', '.join(names)}); "
            f"name one of them, e.g. --baseline {names[0]}"
        )
    load = load_options(
        backend=backend,
        temperature=temperature,
        ignore_eos=ignore_eos,
        input_len=input_len,
        sweep=sweep,
        sweep_values=sweep_values,
    )
    optional: dict[str, Any] = {"prompt_set": prompt_set} if prompt_set is not None else {}
    if sim_profile is not None:
        optional["sim_profile"] = sim_profile
    if request_rates is not None:
        optional["request_rates"] = parse_rates(request_rates)
    if fleet is not None:
        optional["fleet"] = Fleet.of(Fleet(fleet, one_unit_per_host=one_unit_per_host))
    elif one_unit_per_host:
        raise ConfigError("--one-unit-per-host is a rule of a fleet; give --fleet ADDRESS too")
    failures: list[Any] = []
    opened: dict[str, Any] = {}

    def on_resume(resume: Any) -> None:  # before the variant's first server: what its run already holds
        opened[resume.variant] = resume
        if resume.stored:
            typer.echo(_resume_line(resume.variant, resume.run), err=True)

    with _level_lines(progress), warnings.catch_warnings(record=True) as caught:  # shown below, one line each
        paths = benchmark_variants(
            [*(variants or []), *points],
            model_path=model_path,
            draft_model_path=draft_model_path,
            tp_size=tp_size,
            gpus=gpus,
            host=host,
            engine=engine,
            concurrency_levels=parse_levels(levels) if levels is not None else None,
            requests_per_level=requests,
            repeats=repeats,
            label=label,
            fresh=fresh,
            runs_dir=runs_dir,
            max_new_tokens=max_new_tokens,
            time_scale=time_scale,
            progress=progress,
            on_failure=failures.append,
            on_resume=on_resume,
            load=load,
            **optional,
        )
    for line in _warning_lines(caught, failed={f.variant for f in failures}):
        typer.echo(line, err=True)
    measured = [p for p, n in zip(paths, _units(paths)) if n]
    if measured:
        for line in summary_lines(_means(measured, sweep), sweep):
            typer.echo(line)
        for note in _crossovers(measured, names, sweep, baseline):
            typer.echo(note)
        for note in schedule_lines(measured):
            typer.echo(note, err=True)
    typer.echo("runs: " + ", ".join(str(p) for p in paths))
    typer.echo(_tally(paths, opened.values()))
    for failure in failures:  # one line each: the kind, what to do, what the run keeps; then the server's log
        typer.echo(f"error: {failure.line()}", err=True)
        for line in failure.log_lines():
            typer.echo(line, err=True)
    if failures:
        raise typer.Exit(code=1)


#: Options of ``bench`` that a detached sweep's job sets itself (``--fleet auto``, the head's runs folder, no bars).
_JOB_SETS = frozenset({"fleet", "detach", "runs_dir", "progress", "host"})


def job_arguments(ctx: Any) -> list[str]:
    """The ``bench`` arguments given on this command line (those left at their defaults left out, so the job
    plans the sweep as this command would), less those the job sets itself (:data:`_JOB_SETS`)."""
    argv: list[str] = []
    for param in ctx.command.params:  # typer's own click: compared by names, not classes
        source = ctx.get_parameter_source(param.name)
        if param.name in _JOB_SETS or source is None or source.name == "DEFAULT":
            continue
        value = ctx.params[param.name]
        if param.param_type_name == "argument":
            argv += [str(v) for v in (value or [])]
            continue
        opt = next(o for o in param.opts if o.startswith("--"))
        if param.is_flag:
            no = next((o for o in param.secondary_opts if o.startswith("--")), None)
            argv += [opt] if value else ([no] if no else [])
        elif value is not None:
            argv += [opt, str(value)]
    return argv


def _submit(ctx: Any, fleet: str | None, host: str, runs_dir: Any) -> None:
    """``bench --detach``: submit the sweep as a Ray job on fleet ``fleet`` and say how to follow it."""
    from workbench.sweeps._fleet_job import submit_sweep

    if fleet is None:
        raise ConfigError(
            "--detach submits the sweep as a job on a fleet: give --fleet NAME (a fleet brought up by "
            "`workbench fleet up`)"
        )
    if host != "local" or runs_dir is not None:
        raise ConfigError(
            "--detach runs the sweep on the fleet's head into its runs folder: leave out --host and "
            "--runs-dir (`workbench fleet attach --runs-dir DIR` chooses where its units are pulled)"
        )
    job = submit_sweep(fleet, job_arguments(ctx))
    typer.echo(
        f"job: {job} on fleet {fleet}; it goes on without this command. Pull its finished units with "
        f"`workbench fleet attach {job} --name {fleet}`, stop it with `workbench fleet cancel {job} --name {fleet}`"
    )


def _grid_points(
    grid: str, *, skip_refused: bool, host: str, engine: str | None, parameters: dict[str, Any]
) -> list[Any]:
    """The accepted points of ``--grid`` (as :class:`~workbench.variants.Variant` values), each point named on
    stderr with ``ok`` or why it is refused, before anything is launched.

    Raises:
        ConfigError: a bad grid; every point refused; or some refused without ``--skip-refused`` (exit 2, as
            ``workbench variants check --grid``), saying how many and how to measure the rest.
    """
    from workbench.variants import expand_grid

    expansion = expand_grid(
        grid_option(grid), parameters={k: v for k, v in parameters.items() if v is not None}, host=host, engine=engine
    )
    for line in grid_lines(expansion):
        typer.echo(line, err=True)
    refused, total = len(expansion.refused), len(expansion.table)
    if refused and not skip_refused:
        raise ConfigError(
            f"grid {expansion.grid.name}: {refused} of {total} point(s) refused by the pre-flight checks "
            "(named above, each with why), so nothing was launched; fix the grid, or pass --skip-refused "
            f"to measure the other {total - refused}"
        )
    if refused:
        typer.echo(
            f"grid {expansion.grid.name}: {refused} of {total} point(s) refused (named above); measuring the "
            f"other {total - refused} (--skip-refused)",
            err=True,
        )
    return list(expansion.variants)


def _level_lines(progress: bool | None) -> Any:
    """Where the default draws no bars (stderr is not a terminal: :func:`workbench.report.progress_bars`),
    one line per level on stderr instead (:func:`workbench.report.progress_lines`); else nothing to do."""
    import contextlib
    import sys
    import tempfile

    from workbench.report import progress_bars, progress_lines, reporting_progress

    if progress is not None or progress_bars(None) or reporting_progress():
        return contextlib.nullcontext()  # bars, --no-progress, or already inside `workbench report`'s lines
    stack = contextlib.ExitStack()
    folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="workbench-bench-"))
    stack.enter_context(progress_lines(Path(folder) / "progress", stream=sys.stderr))
    return stack
