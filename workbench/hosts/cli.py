"""``workbench host check``: what the workbench learns of a host before using it.

Registered in :mod:`workbench.cli` in one line::

    app.add_typer(host_app, name="host")
"""

from __future__ import annotations

import json
from typing import Annotated, Optional

import typer


__all__ = ["ConfigOpt", "HOST_OPTION", "HostOpt", "PythonOpt", "host_app"]

#: The ``--host`` option, declared once for every command that runs on or reads from a host (each
#: command gives its default: ``Annotated[str, HOST_OPTION] = "local"``, or ``Optional[str]`` with None
#: where no host means something else, as in ``variants check``).
HOST_OPTION = typer.Option("--host", "-H", help="'local' or an ssh config alias.")
HostOpt = Annotated[str, HOST_OPTION]
ConfigOpt = Annotated[Optional[str], typer.Option("-F", "--ssh-config", help="ssh config file (like ssh -F).")]
PythonOpt = Annotated[
    Optional[str],
    typer.Option("--python", help="Interpreter on the host (default: python3, or $WORKBENCH_REMOTE_PYTHON)."),
]

host_app = typer.Typer(help="Look at a GPU host before using it.", no_args_is_help=True)


@host_app.command("check")
def host_check_command(
    host: Annotated[str, typer.Argument(metavar="HOST", help="'local' or an ssh config alias.")],
    config_file: ConfigOpt = None,
    require: Annotated[
        Optional[str], typer.Option("--require", help="Comma-separated: sglang, gpu. Missing ones make the check fail.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    sglang_path: Annotated[
        Optional[str], typer.Option("--sglang-path", help="An SGLang checkout on the host to inspect too.")
    ] = None,
    python: PythonOpt = None,
) -> None:
    """Print what the workbench learns of HOST: reachable, Python, SGLang version and commit, GPUs and links.

    Exits 1 with what to do when the host cannot be used (unreachable, authentication,
    host key, no Python 3.8+), or when a --require'd part is missing.
    """
    # imported here, not at the top: the host machinery (paramiko) costs what `--help` need not pay
    from workbench.hosts import check_host, parse_requirements, render_check

    report = check_host(
        host, config_file=config_file, python=python, sglang_path=sglang_path, require=parse_requirements(require)
    )
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=1))
    else:
        text = render_check(report)
        typer.echo(text, err=not report.usable)
    if not report.ok:
        raise typer.Exit(code=1)
