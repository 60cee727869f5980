"""``workbench variants check``: pre-flight validation of server variants from the command line.

Registered in :mod:`workbench.cli` in one line::

    app.add_typer(variants_app, name="variants")

Importing this module is cheap: the checks are imported when the command runs, not for ``--help``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from workbench.engines import get_engine
from workbench.errors import ConfigError
from workbench.engines.cli import EngineOpt
from workbench.hosts.cli import HOST_OPTION

if TYPE_CHECKING:
    from workbench.variants._grid import Grid, GridExpansion

__all__ = [
    "DraftModelPathOption",
    "GpusOption",
    "ModelPathOption",
    "TpSizeOption",
    "grid_lines",
    "grid_option",
    "variants_app",
]

variants_app = typer.Typer(help="Server variants: check them before launching.", no_args_is_help=True)

# The template parameters as options (workbench/variants/_template.py), shared with `workbench bench`.
ModelPathOption = Annotated[
    Optional[str], typer.Option("--model-path", help="Target model for every variant, in place of the variant files'.")
]
DraftModelPathOption = Annotated[
    Optional[str],
    typer.Option("--draft-model-path", help="Draft model for the speculative variants, in place of the files'."),
]
TpSizeOption = Annotated[Optional[int], typer.Option("--tp-size", help="Tensor-parallel size, in place of the files'.")]
GpusOption = Annotated[Optional[str], typer.Option("--gpus", help="GPU indices the servers use, e.g. 0,1.")]

_SEVERITY = ("error", "warning", "info")

#: What ``workbench variants check`` checks when neither VARIANT nor --grid is named: the variants report's own
#: defaults, its ``variants`` and the ``baseline`` they are compared with (notebooks/variants.ipynb's parameters;
#: tests/test_variants_check_cli.py checks that the two agree), so the command and the report say the same.
REPORT_VARIANTS = (
    "baseline",
    "baseline-cap48",
    "eagle3-topk4",
    "eagle3-topk1-v2",
    "adaptive",
    "eagle3-topk4-off-above-8",
)
REPORT_BASELINE = "baseline-cap48"

#: A grid written inline on the command line: a grid file's keys as one TOML inline table's contents.
GRID_EXAMPLE = "'template = \"eagle3-topk4\", topk = [1, 4], num_steps = [2, 3], num_draft_tokens = [4, 8]'"


def _inline_grid(text: str) -> dict[str, Any] | None:
    """The mapping ``--grid`` was given inline, or None when ``text`` names a grid (a shipped name or a file).

    Inline is a grid file's keys (``template``, ``topk``, ``num_steps``, ``num_draft_tokens``, optional ``name``)
    written as TOML (``key = value`` pairs separated by commas or new lines, braces optional) or as a JSON
    object. Text with ``=`` or a leading ``{`` is inline, unless it is the path of a file.

    Raises:
        ConfigError: inline text that is neither, with an example.
    """
    import tomllib

    body = text.strip()
    if Path(body).expanduser().is_file() or not (body.startswith("{") or "=" in body):
        return None
    if body.startswith("{"):
        try:
            data = json.loads(body)
        except ValueError:
            body = body[1:-1] if body.endswith("}") else body[1:]
        else:
            if not isinstance(data, dict):
                raise ConfigError(
                    f"--grid {text!r}: a JSON grid is an object of a grid file's keys, e.g. "
                    '{"template": "eagle3-topk4", "topk": [1, 4], "num_steps": [2], '
                    '"num_draft_tokens": [4, 8]}'
                )
            return data
    try:
        if "\n" in body:
            return tomllib.loads(body)
        return dict(tomllib.loads(f"grid = {{{body}}}")["grid"])
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"--grid {text!r} is neither a grid's name or file nor its keys written inline ({exc}); "
            f"write the keys of a grid file as TOML, e.g. --grid {GRID_EXAMPLE}"
        ) from None


def grid_option(text: str) -> Grid:
    """``--grid``'s grid: a name in data/grids/, a grid file, or a grid file's keys written inline
    (:data:`GRID_EXAMPLE`; :func:`_inline_grid`), loaded by :func:`workbench.variants.load_grid`.

    Raises:
        ConfigError: no such grid (the message shows the inline form too), inline text that does not parse,
            or a grid the loader refuses (its message).
    """
    from workbench.variants import load_grid

    inline = _inline_grid(text)
    try:
        return load_grid(inline if inline is not None else text)
    except ConfigError as exc:
        if inline is not None or Path(text).expanduser().is_file():
            raise
        raise ConfigError(
            f"--grid: {exc} (on the command line, the mapping written inline: --grid {GRID_EXAMPLE})"
        ) from None


def grid_lines(expansion: GridExpansion) -> list[str]:
    """One line per point of a checked grid: ``grid NAME: POINT: ok`` or ``... refused: why``."""
    return [
        f"grid {expansion.grid.name}: {row.variant}: " + ("ok" if row.status == "ok" else f"refused: {row.reason}")
        for row in expansion.table.itertuples()
    ]


@variants_app.command("check")
def check_command(
    variants: Annotated[
        Optional[list[str]],
        typer.Argument(
            metavar="VARIANT",
            help="Variant names (data/variants/NAME.toml) or files; default: the variants "
            f"report's ({', '.join(REPORT_VARIANTS)}) against {REPORT_BASELINE}.",
        ),
    ] = None,
    host: Annotated[Optional[str], HOST_OPTION] = None,
    sglang: Annotated[
        Optional[str], typer.Option("--sglang", help="Check against this SGLang release instead of each variant's own.")
    ] = None,
    engine: EngineOpt = None,
    baseline: Annotated[
        Optional[str],
        typer.Option(
            "--baseline",
            help=f"Variant every speculative one is compared with. Default: {REPORT_BASELINE} for the "
            "variants report's variants; else, for each, a plain variant of the same model and TP size: one being "
            "checked before a shipped one, 'baseline' or '*-baseline' by name first; e.g. llama3-8b-baseline for "
            "llama3-8b-eagle3.",
        ),
    ] = None,
    every: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Check every shipped variant (each against --baseline, or a plain variant of its own model "
            "and TP size).",
        ),
    ] = False,
    min_severity: Annotated[
        str, typer.Option("--show", help="Lowest severity printed: error, warning or info.")
    ] = "warning",
    as_json: Annotated[bool, typer.Option("--json", help="Print the findings as a JSON list.")] = False,
    model_path: ModelPathOption = None,
    draft_model_path: DraftModelPathOption = None,
    tp_size: TpSizeOption = None,
    gpus: GpusOption = None,
    grid: Annotated[
        Optional[str],
        typer.Option(
            "--grid",
            help="Also check a grid's points (data/grids/NAME.toml, a file, or its keys inline: "
            "'template = \"eagle3-topk4\", topk = [1, 4], num_steps = [2], num_draft_tokens = [4, 8]'): one line per "
            "point, ok or refused with the reason.",
        ),
    ] = None,
) -> None:
    """Validate variants against the SGLang they will run, before anything is launched.

    With no VARIANT (and no --grid) it checks what the variants report checks: its variants against
    its baseline (a line on stderr names them); --all checks every shipped variant.

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

        workbench variants check --all

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
    if every and variants:
        raise ConfigError("--all checks every shipped variant; name variants or give --all, not both")
    names: list = list(variants or [])
    if not names and grid is None and not every:  # what the variants report checks, said so
        names, baseline = list(REPORT_VARIANTS), baseline or REPORT_BASELINE
        typer.echo(
            f"checking the variants report's {len(names)} variants ({', '.join(names)}) against {baseline}, "
            "as notebooks/variants.ipynb does; name variants, or --all for every shipped one",
            err=True,
        )
    refused = ""
    if grid is not None:
        from workbench.variants._grid import expand_grid

        expansion = expand_grid(
            grid_option(grid),
            parameters={k: v for k, v in params.items() if v is not None},
            host=host,
            sglang=sglang,
            engine=eng,
        )
        for line in grid_lines(expansion):  # with --json on stderr, so stdout stays one JSON list
            typer.echo(line, err=as_json)
        names += expansion.variants
        if len(expansion.refused):
            refused = (
                f"; grid {expansion.grid.name}: {len(expansion.refused)} of {len(expansion.table)} point(s) refused"
            )
    found = check_variants(names or None, host=host, sglang=sglang, engine=eng, baseline=baseline, parameters=params)
    findings = sort_findings(found)
    if as_json:
        typer.echo(json.dumps([f.to_dict() for f in findings], indent=1))
        if refused:
            typer.echo(refused.lstrip("; "), err=True)
    else:
        shown = [f for f in findings if _SEVERITY.index(f.severity) <= _SEVERITY.index(min_severity)]
        for f in shown:
            typer.echo(f.line())
        typer.echo(
            count_line(findings) + refused + ("" if min_severity == "info" else " (--show info lists the notes)")
        )
    if refused or any(f.check == "load" for f in findings):
        # points `workbench bench --grid` would not launch, or a variant file it would refuse to read
        # (wrong keys or value types): bad input, as there
        raise typer.Exit(code=2)
    if has_errors(findings):
        raise typer.Exit(code=1)
