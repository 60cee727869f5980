"""``workbench variants check``: pre-flight validation of server variants from the command line.

Registered in :mod:`workbench.cli` in one line::

    app.add_typer(variants_app, name="variants")

Importing this module is cheap: the checks are imported when the command runs, not for ``--help``.
"""

from __future__ import annotations

import json
from typing import Annotated, Optional

import typer

from workbench.engines import get_engine
from workbench.errors import ConfigError

__all__ = ["variants_app"]

variants_app = typer.Typer(help="Server variants: check them before launching.", no_args_is_help=True)

_SEVERITY = ("error", "warning", "info")


@variants_app.command("check")
def check_command(
    variants: Annotated[Optional[list[str]], typer.Argument(
        metavar="[VARIANT]...", help="Variant names (data/variants/NAME.toml) or files; default: all shipped.")] = None,
    host: Annotated[Optional[str], typer.Option(
        "--host", help="Host they would run on ('local' or an ssh alias): paths, disk, GPUs, and the SGLang "
        "installed there (on 'local' only with --engine sglang: the simulated engine runs there).")] = None,
    sglang: Annotated[Optional[str], typer.Option(
        "--sglang", help="Check against this SGLang release instead of each variant's own.")] = None,
    engine: Annotated[Optional[str], typer.Option(
        "--engine", help="'sim' or 'sglang': what would run them, for the resource checks and the target SGLang "
        "(default: sim locally, sglang elsewhere).")] = None,
    baseline: Annotated[str, typer.Option(
        "--baseline", help="Variant the speculative ones are compared with.")] = "baseline",
    min_severity: Annotated[str, typer.Option(
        "--show", help="Lowest severity printed: error, warning or info.")] = "warning",
    as_json: Annotated[bool, typer.Option("--json", help="Print the findings as a JSON list.")] = False,
) -> None:
    """Validate variants against the SGLang they will run, before anything is launched.

    One line per finding (severity, variant, flag, message and fix). Exit status 1
    when any finding is an error, 0 otherwise (2 for bad options).

    Examples:

        workbench variants check

        workbench variants check adaptive eagle3-topk4 --sglang 0.5.9

        workbench variants check --host gpu1 --show info
    """
    if host and sglang:
        raise ConfigError("Give --host or --sglang, not both: --host checks against the SGLang on that host.")
    eng = None if engine is None else get_engine(engine)  # an unknown name: ConfigError listing the known ones
    if min_severity not in _SEVERITY:
        raise ConfigError(f"--show must be one of {', '.join(_SEVERITY)}, not {min_severity!r}")
    # imported here, not at the top: the checks (pandas, the source and host machinery) cost a second
    from workbench.variants._check import check_variants
    from workbench.variants._findings import count_line, has_errors, sort_findings

    found = check_variants(variants or None, host=host, sglang=sglang, engine=eng, baseline=baseline)
    findings = sort_findings(found)
    if as_json:
        typer.echo(json.dumps([f.to_dict() for f in findings], indent=1))
    else:
        shown = [f for f in findings if _SEVERITY.index(f.severity) <= _SEVERITY.index(min_severity)]
        for f in shown:
            typer.echo(f.line())
        typer.echo(count_line(findings) + ("" if min_severity == "info" else " (--show info lists the notes)"))
    if has_errors(findings):
        raise typer.Exit(code=1)
