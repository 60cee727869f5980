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
from workbench.engines.cli import EngineOpt
from workbench.hosts.cli import HOST_OPTION

__all__ = ["DraftModelPathOption", "GpusOption", "ModelPathOption", "TpSizeOption", "variants_app"]

variants_app = typer.Typer(help="Server variants: check them before launching.", no_args_is_help=True)

# The template parameters as options (workbench/variants/_template.py), shared with `workbench bench`.
ModelPathOption = Annotated[Optional[str], typer.Option(
    "--model-path", help="Target model for every variant, in place of the variant files'.")]
DraftModelPathOption = Annotated[Optional[str], typer.Option(
    "--draft-model-path", help="Draft model for the speculative variants, in place of the files'.")]
TpSizeOption = Annotated[Optional[int], typer.Option("--tp-size", help="Tensor-parallel size, in place of the files'.")]
GpusOption = Annotated[Optional[str], typer.Option("--gpus", help="GPU indices the servers use, e.g. 0,1.")]

_SEVERITY = ("error", "warning", "info")


@variants_app.command("check")
def check_command(
    variants: Annotated[Optional[list[str]], typer.Argument(
        metavar="[VARIANT]...", help="Variant names (data/variants/NAME.toml) or files; default: all shipped.")] = None,
    host: Annotated[Optional[str], HOST_OPTION] = None,
    sglang: Annotated[Optional[str], typer.Option(
        "--sglang", help="Check against this SGLang release instead of each variant's own.")] = None,
    engine: EngineOpt = None,
    baseline: Annotated[Optional[str], typer.Option(
        "--baseline", help="Variant every speculative one is compared with. Default: for each, a plain variant "
        "of the same model and TP size: one being checked before a shipped one, 'baseline' or '*-baseline' by "
        "name first; e.g. llama3-8b-baseline for llama3-8b-eagle3.")] = None,
    min_severity: Annotated[str, typer.Option(
        "--show", help="Lowest severity printed: error, warning or info.")] = "warning",
    as_json: Annotated[bool, typer.Option("--json", help="Print the findings as a JSON list.")] = False,
    model_path: ModelPathOption = None,
    draft_model_path: DraftModelPathOption = None,
    tp_size: TpSizeOption = None,
    gpus: GpusOption = None,
    grid: Annotated[Optional[str], typer.Option(
        "--grid", help="Also check a grid's points (data/grids/NAME.toml or a file): one line per point, "
        "ok or refused with the reason.")] = None,
) -> None:
    """Validate variants against the SGLang they will run, before anything is launched.

    One line per finding (severity, variant, flag, message and fix), then the count. Each
    speculative variant is compared with --baseline, or by default with a plain variant of
    its own model and TP size (see --baseline). Exit status 2 for bad input, as in
    `workbench bench`: a bad option (an --sglang that is not a release version included), an
    unknown variant name (the closest names are suggested), a variant file that cannot be read
    (not TOML, unknown keys, a value of the wrong type: its finding names the file and key) or
    grid points refused by the checks (named above the findings, counted on the last line);
    else 1 when any finding is an error, 0 otherwise.

    --host names the host they would run on: its paths, disk, GPUs and installed SGLang are checked
    (on 'local' only with --engine sglang, since the simulated engine runs there); --engine says what
    would run them, for the resource checks and the target SGLang.

    Examples:

        workbench variants check

        workbench variants check adaptive eagle3-topk4 --sglang 0.5.9

        workbench variants check --host gpu1 --show info

        workbench variants check baseline eagle3-topk4 --model-path meta-llama/Llama-3.1-8B-Instruct --tp-size 1

        workbench variants check baseline --grid eagle3
    """
    if host and sglang:
        raise ConfigError("Give --host or --sglang, not both: --host checks against the SGLang on that host.")
    eng = None if engine is None else get_engine(engine)  # an unknown name: ConfigError listing the known ones
    if sglang is not None:
        from workbench.source import version_key

        try:  # not a release version: bad input (exit 2), refused before any check, not a finding
            version_key(sglang)
        except ConfigError as exc:
            raise ConfigError(f"--sglang: {exc} Give a release, e.g. --sglang 0.5.9.") from None
    if min_severity not in _SEVERITY:
        raise ConfigError(f"--show must be one of {', '.join(_SEVERITY)}, not {min_severity!r}")
    # imported here, not at the top: the checks (pandas, the source and host machinery) cost a second
    from workbench.variants._check import check_variants
    from workbench.variants._findings import count_line, has_errors, sort_findings

    params = {"model_path": model_path, "draft_model_path": draft_model_path, "tp_size": tp_size, "gpus": gpus}
    names: list = list(variants or [])
    refused = ""
    if grid is not None:
        from workbench.variants._grid import expand_grid

        expansion = expand_grid(grid, parameters={k: v for k, v in params.items() if v is not None}, host=host,
                                sglang=sglang, engine=eng)
        for row in expansion.table.itertuples():  # with --json on stderr, so stdout stays one JSON list
            typer.echo(f"grid {expansion.grid.name}: {row.variant}: " +
                       ("ok" if row.status == "ok" else f"refused: {row.reason}"), err=as_json)
        names += expansion.variants
        if len(expansion.refused):
            refused = (f"; grid {expansion.grid.name}: {len(expansion.refused)} of {len(expansion.table)} point(s) "
                       "refused")
    found = check_variants(names or None, host=host, sglang=sglang, engine=eng, baseline=baseline,
                           parameters=params)
    findings = sort_findings(found)
    if as_json:
        typer.echo(json.dumps([f.to_dict() for f in findings], indent=1))
        if refused:
            typer.echo(refused.lstrip("; "), err=True)
    else:
        shown = [f for f in findings if _SEVERITY.index(f.severity) <= _SEVERITY.index(min_severity)]
        for f in shown:
            typer.echo(f.line())
        typer.echo(count_line(findings) + refused + ("" if min_severity == "info" else
                                                     " (--show info lists the notes)"))
    if refused or any(f.check == "load" for f in findings):
        # points `workbench bench --grid` would not launch, or a variant file it would refuse to read
        # (wrong keys or value types): bad input, as there
        raise typer.Exit(code=2)
    if has_errors(findings):
        raise typer.Exit(code=1)
