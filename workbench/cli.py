"""The ``workbench`` command.

Each subcommand lives next to the code it drives and is registered here in one
line, so teammates add theirs without touching the others::

    app.command("report", context_settings=REPORT_CONTEXT, options_metavar=REPORT_METAVAR)(report_command)
    app.add_typer(sim_app, name="sim")          # a Typer sub-app from workbench/sim
    app.command("bench")(bench_command)
app.add_typer(runs_app, name="runs")         # a plain function from workbench/bench

A verb's module is imported for every ``workbench`` call, ``--help`` included, so it
imports only typer and light modules at its top and the rest (pandas, nbformat,
papermill, the host machinery) inside its command: ``workbench --help`` starts in
about 0.2 s (docs/PERFORMANCE.md). ``tests/test_cli.py`` checks that neither importing
this module nor any verb's ``--help`` imports those packages.

Errors: a :class:`~workbench.errors.WorkbenchError` raised by any subcommand is
printed as one message on stderr, without a traceback; the exit status is 2 for
:class:`~workbench.errors.ConfigError` (bad input) and 1 for the rest. Ctrl-C ends any
command with one line and status 130 (128 + SIGINT, as shells report it).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from typer.core import TyperGroup

import workbench
from workbench.calibration.cli import calibrate_app
from workbench.errors import ConfigError, WorkbenchError
from workbench.hosts.cli import host_app
from workbench.imports.cli import import_command
from workbench.report.cli import REPORT_CONTEXT, REPORT_METAVAR, report_command
from workbench.servers.cli import servers_command
from workbench.sim.cli import sim_app
from workbench.sweeps.cli import bench_command, fleet_app, runs_app
from workbench.source.cli import inspect_command
from workbench.variants.cli import variants_app

__all__ = ["app"]


def _reflowed(text: str) -> str:
    """``text`` (a command's docstring) with each paragraph's own line breaks joined, so the help screen wraps
    it to the terminal's width instead of breaking where the source did; a paragraph with an indented line (an
    example, a table) or one marked ``\\b`` keeps its lines."""
    paragraphs = text.split("\n\n")
    return "\n\n".join(
        p
        if p.startswith("\b") or any(line[:1].isspace() for line in p.splitlines())
        else " ".join(line.strip() for line in p.splitlines())
        for p in paragraphs
    )


def _tidy_help(command: Any) -> None:
    """Tidy the help of ``command`` and every subcommand below it: docstrings reflowed (:func:`_reflowed`), no
    value placeholder (typer's ``<bool>``) on an on/off flag, which takes no value, and no doubled ``...`` or
    brackets on an argument (:func:`_no_flag_placeholder`)."""
    if command.help:
        command.help = _reflowed(command.help)
    for param in command.params:
        _no_flag_placeholder(param)
    built = command.get_help_option  # --help is made per call, not a param: its flag is tidied as it is made

    def help_option(ctx: Any) -> Any:
        option = built(ctx)
        if option is not None:
            _no_flag_placeholder(option)
        return option

    command.get_help_option = help_option
    for sub in getattr(command, "commands", {}).values():
        _tidy_help(sub)


def _no_flag_placeholder(param: Any) -> None:
    """An on/off flag shows no value placeholder in the help (typer writes ``<bool>`` unless a metavar is set),
    and an argument's metavar says once what typer adds itself: ``...`` for several, ``[ ]`` when optional."""
    if getattr(param, "is_flag", False) and not getattr(param, "count", False) and param.metavar is None:
        param.metavar = ""
    metavar = param.metavar
    if param.param_type_name == "argument" and metavar:
        if param.nargs != 1 and metavar.endswith("..."):
            metavar = metavar[:-3]
        if not param.required and metavar.startswith("[") and metavar.endswith("]"):
            metavar = metavar[1:-1]
        param.metavar = metavar


class _WorkbenchGroup(TyperGroup):
    """Root command group: tidies every command's help (:func:`_tidy_help`), and turns WorkbenchError into a
    message and an exit status."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _tidy_help(self)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except WorkbenchError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(code=2 if isinstance(exc, ConfigError) else 1) from None
        except KeyboardInterrupt:
            typer.echo(
                "interrupted (Ctrl-C): stopped. What was stored is kept: a sweep resumes where it stopped "
                "when run again, and its servers are stopped (`workbench servers` shows any left).",
                err=True,
            )
            raise typer.Exit(code=130) from None


app = typer.Typer(
    cls=_WorkbenchGroup,
    name="workbench",
    help="Workbench for finding when speculative decoding beats plain decoding in SGLang.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"workbench {workbench.__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", help="Show the version and exit.", callback=_version, is_eager=True)
    ] = False,
) -> None:
    """Workbench for finding when speculative decoding beats plain decoding in SGLang."""


# --- subcommands: one line each -------------------------------------------------------------
app.command("report", context_settings=REPORT_CONTEXT, options_metavar=REPORT_METAVAR)(report_command)
app.command("servers")(servers_command)
app.command("inspect")(inspect_command)
app.add_typer(host_app, name="host")
app.add_typer(variants_app, name="variants")
app.add_typer(sim_app, name="sim")
app.add_typer(calibrate_app, name="calibrate")
app.command("bench")(bench_command)
app.add_typer(runs_app, name="runs")
app.add_typer(fleet_app, name="fleet")
app.command("import")(import_command)
