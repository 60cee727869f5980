"""``workbench inspect NAME``: where a definition is, in releases or a tree on a host, and its history.

Command-line layer only: parses options, calls :func:`workbench.source.inspect_name`
(one helper run per release or tree for definitions, references and history),
prints a compact table (or JSON with ``--json``). Registered on the root app in :mod:`workbench.cli`.
Importing this module is cheap: pandas and the search machinery are imported when
the command runs, not for ``--help``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from workbench.errors import ConfigError
from workbench.hosts.cli import ConfigOpt, HostOpt
from workbench.source._defaults import DEFAULT_VERSIONS

if TYPE_CHECKING:
    import pandas as pd

    from workbench.hosts import Host

__all__ = ["format_table", "inspect_command"]

_DEFINITION_VIEW = ["version", "found", "path", "lines", "kind", "qualname", "signature", "sha256"]
_REFERENCE_VIEW = ["version", "path", "line", "kind", "enclosing", "text"]
_HISTORY_VIEW = ["version", "status", "path", "lines", "sha256", "previous_path"]
_MAX_CELL = 60


def inspect_command(
    name: Annotated[str, typer.Argument(metavar="NAME", help="Function, class or method: bare or Class.method.")],
    sglang: Annotated[
        Optional[list[str]],
        typer.Option(
            "--sglang",
            help="SGLang release to search (repeat for several). "
            f"Default: {', '.join(DEFAULT_VERSIONS)} unless --tree is given.",
        ),
    ] = None,
    tree: Annotated[
        Optional[str], typer.Option("--tree", help="A source tree on --host to search too (e.g. python/sglang).")
    ] = None,
    host: HostOpt = "local",
    ssh_config: ConfigOpt = None,
    history: Annotated[
        Optional[str],
        typer.Option("--history", help="Releases to trace, as FROM..TO (0.5.2..0.5.23) or a series (0.5.x)."),
    ] = None,
    pre: Annotated[bool, typer.Option("--pre", help="Let --history include pre-releases.")] = False,
    references: Annotated[bool, typer.Option("--references", help="Also list references and callers.")] = False,
    source: Annotated[bool, typer.Option("--source", help="Print each definition's source with line numbers.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
) -> None:
    """Find where NAME is defined in SGLang releases and/or a tree on a host; optionally its history.

    Examples:

        workbench inspect get_alloc_len_per_decode --sglang 0.5.9 --sglang 0.5.23

        workbench inspect EAGLEWorkerV2.forward_batch_generation --host gpu1 --tree ~/sglang/python/sglang

        workbench inspect get_alloc_len_per_decode --history 0.5.2..0.5.23 --json
    """
    # imported here, not at the top: pandas and the host machinery cost a second that `--help` need not pay
    from workbench.hosts import get_host, is_local
    from workbench.source._inspection import inspect_name

    versions: Sequence[str] = list(sglang) if sglang else (() if tree or history else DEFAULT_VERSIONS)
    where: str | Host = host
    if tree is not None or not is_local(host):
        if tree is None:
            raise ConfigError(f"--host {host} needs --tree: the directory on that host to search.")
        where = get_host(host, config_file=ssh_config)
    report: dict[str, Any] = {"name": name}
    searched = bool(versions) or tree is not None
    # One helper run per release or tree answers all of it (definitions, references, history).
    found = inspect_name(name, versions=versions, host=where, tree=tree, references=references and searched,
                         history=history, include_prereleases=pre, include_source=source)  # fmt: skip
    definitions = found.definitions if searched else None
    report["definitions"] = [] if definitions is None else _records(definitions, drop=() if source else ("source",))
    refs = found.references
    if refs is not None:
        report["references"] = _records(refs)
    traced = found.history
    if traced is not None:
        report["history"] = _records(traced)
    if as_json:
        typer.echo(json.dumps(report, indent=1, default=str))
        return
    if definitions is not None:
        typer.echo(format_table(_view(definitions, _DEFINITION_VIEW), title=f"{name}: definitions") + "\n")
    if source:
        for row in report["definitions"]:
            if row["found"]:
                typer.echo(f"{row['version']} {row['path']}:{row['start_line']}-{row['end_line']}")
                width = len(str(row["end_line"]))
                for offset, line in enumerate(row["source"].splitlines()):
                    typer.echo(f"{row['start_line'] + offset:>{width}}  {line}")
                typer.echo("")
    if refs is not None:
        typer.echo(format_table(_view(refs[refs["found"]], _REFERENCE_VIEW), title=f"{name}: references") + "\n")
    if traced is not None:
        typer.echo(format_table(_view(traced, _HISTORY_VIEW), title=f"{name}: history ({history})"))


def _records(frame: pd.DataFrame, *, drop: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Rows as plain dicts: missing values are None, integers are ints."""
    rows = []
    for record in frame.drop(columns=[c for c in drop if c in frame.columns]).to_dict(orient="records"):
        rows.append({k: _plain(v) for k, v in record.items()})
    return rows


def _plain(value: Any) -> Any:
    import pandas as pd

    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        return value.item()
    return value


def _view(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """The display columns of a result frame: :func:`workbench.source.summary_table` (``lines``, short digests,
    ``<module>`` for a module-level reference) with ``found`` as yes/no."""
    from workbench.source._definitions import summary_table

    view = summary_table(frame)
    if "found" in view.columns:
        view["found"] = view["found"].map(lambda f: "yes" if f else "no")
    return view[[c for c in columns if c in view.columns]]


def format_table(frame: pd.DataFrame, *, title: str = "") -> str:
    """A compact plain-text table (left-aligned columns, cells cut at 60 characters, blanks for missing).

    Args:
        frame: the rows to show.
        title: a line printed above the table.
    """
    columns = list(frame.columns)
    cells = [[_cell(v) for v in row] for row in frame.itertuples(index=False)]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    lines = [title] if title else []
    lines.append("  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip())
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells]
    if not cells:
        lines.append("(none)")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    value = _plain(value)
    text = "" if value is None else str(value)
    return text if len(text) <= _MAX_CELL else text[: _MAX_CELL - 3] + "..."
