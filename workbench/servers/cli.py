"""``workbench servers``: list and stop what the workbench started on a host.

Registered in :mod:`workbench.cli` in one line::

    app.command("servers")(servers_command)

Importing this module is cheap: the host machinery (paramiko) and the registry are
imported when a command runs, not for ``--help``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from workbench.errors import ConfigError
from workbench.hosts.cli import ConfigOpt, HostOpt, PythonOpt

if TYPE_CHECKING:
    from workbench.servers._registry import ServerEntry

__all__ = ["servers_command"]


def servers_command(
    server_ids: Annotated[
        Optional[list[str]],
        typer.Argument(metavar="ID", help="With --stop: the servers to stop (ids, unique id prefixes, or ports)."),
    ] = None,
    host: HostOpt = "local",
    stop: Annotated[bool, typer.Option("--stop", help="Stop the named servers (or all with --all).")] = False,
    all_: Annotated[
        bool, typer.Option("--all", help="With --stop: every server of this checkout on the host.")
    ] = False,
    any_checkout: Annotated[
        bool,
        typer.Option(
            "--any-checkout",
            help="Show (and with --stop, stop) servers started from any checkout or user, not only this checkout's.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    config_file: ConfigOpt = None,
    python: PythonOpt = None,
    state_dir: Annotated[
        Optional[str],
        typer.Option(
            "--state-dir", help="Registry directory on the host (default ~/.cache/specbench-workbench/servers)."
        ),
    ] = None,
) -> None:
    """List the servers this checkout started on a host; --stop ID... or --stop --all stops them.

    Only servers started from this checkout on this machine are shown and stopped (so `--stop --all`
    never stops another checkout's sweep); --any-checkout takes every workbench server on the host,
    and the OWNER column says whose each is. Stopping ends the server's process group (SIGTERM, then
    SIGKILL) and its lease watchdog, checks nothing is left and removes the record; logs stay on the
    host. A stopped or crashed server's record stays listed until it is --stop'ped.
    """
    if (server_ids or all_) and not stop:
        raise ConfigError("Name servers (or --all) only together with --stop, e.g. `workbench servers --stop ID`.")
    if stop and not server_ids and not all_:
        raise ConfigError("--stop needs server ids (or ports), or --all.")
    from workbench.hosts import get_host, host_python, servers_dir
    from workbench.servers import _registry as registry

    h = get_host(host, config_file=config_file)
    py = host_python(h, python)
    every = registry.list_servers(h, servers_dir(h, state_dir), python=py)
    entries = every if any_checkout else [e for e in every if registry.is_ours(e.record)]
    hidden = len(every) - len(entries)
    if stop:
        targets = (
            entries
            if all_
            else [_ours(registry.find_server(every, s, host_name=h.name), any_checkout) for s in server_ids or []]
        )
        for entry in targets:
            was = entry.state
            registry.stop_entry(h, entry)
            typer.echo(
                f"stopped {entry.record.id} (pgid {entry.record.pgid}, was {was}): nothing left"
                if was == "running"
                else f"removed the record of {entry.record.id} ({was})"
            )
        if not targets:
            typer.echo(f"no workbench servers on host {h.name}" + _hidden_note(hidden))
        return
    if as_json:
        typer.echo(json.dumps([_entry_json(e) for e in entries], indent=1))
        return
    if not entries:
        typer.echo(f"no workbench servers on host {h.name}" + _hidden_note(hidden))
        return
    typer.echo(_table(entries) + ("\n" + _hidden_note(hidden).strip() if hidden else ""))


def _hidden_note(hidden: int) -> str:
    """`` (N of other checkouts not shown: --any-checkout)`` when some are hidden, else ''."""
    return f" ({hidden} of other checkouts not shown: --any-checkout lists them)" if hidden else ""


def _ours(entry: ServerEntry, any_checkout: bool) -> ServerEntry:
    """``entry`` when this checkout may stop it; else the ConfigError naming its owner."""
    from workbench.servers import _registry as registry

    if any_checkout or registry.is_ours(entry.record):
        return entry
    raise ConfigError(
        f"server {entry.record.id} belongs to {registry.owner_text(entry.record)}, not this checkout; "
        "add --any-checkout to stop it anyway"
    )


def _entry_json(entry: ServerEntry) -> dict:
    out = entry.record.to_json()
    from workbench.servers import _registry as registry

    out.update(
        state=entry.state,
        owner=registry.owner_text(entry.record),
        members=entry.status.members,
        ports=entry.status.ports,
        heartbeat_age_s=entry.status.heartbeat_age_s,
        watchdog_alive=entry.watchdog.alive if entry.watchdog else None,
        path=entry.record.path,
    )
    return out


def _table(entries: list[ServerEntry]) -> str:
    from workbench.servers import _registry as registry

    rows = [("ID", "VARIANT", "ENGINE", "PORT", "PGID", "STATE", "GPUS", "AGE", "HEARTBEAT", "GUARD", "OWNER", "LOG")]
    for e in entries:
        r = e.record
        if r.detached:
            guard = "detached"
        elif e.watchdog is not None and e.watchdog.alive:
            guard = f"lease {registry.age_text(r.lease_s)}"
        else:
            guard = "no watchdog"
        rows.append(
            (
                r.id,
                r.variant.get("name", "?"),
                r.engine,
                str(r.port),
                str(r.pgid),
                e.state,
                ",".join(map(str, r.gpus)) if r.gpus else "-",
                registry.age_text(registry.started_ago(r)),
                registry.age_text(e.status.heartbeat_age_s) if not r.detached else "-",
                guard,
                registry.owner_text(r),
                r.log_path,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[-1] for row in rows)
