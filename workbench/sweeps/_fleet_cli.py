"""``workbench fleet``: bring a Ray cluster up on SSH hosts, look at it, follow and cancel its jobs, bring it down.

Registered in :mod:`workbench.cli` in one line (through :mod:`workbench.sweeps.cli`). Imports only typer at
the top; the SSH and Ray machinery is imported when a command runs (docs/FLEET.md).
"""

from __future__ import annotations

import json
import time
from typing import Annotated, Optional

import typer

from workbench.errors import ConfigError
from workbench.hosts.cli import ConfigOpt, PythonOpt
from workbench.store.cli import RunsDirOption

__all__ = ["fleet_app"]

fleet_app = typer.Typer(help="A Ray cluster on your SSH hosts for sweeps (docs/FLEET.md).", no_args_is_help=True)

NameOpt = Annotated[str, typer.Option("--name", help="The fleet's name (its file under .fleet/).")]
JobArg = Annotated[Optional[str], typer.Argument(metavar="[JOB]", help="A job id (default: the fleet's last job).")]


def _node_ips(pairs: list[str]) -> dict[str, str]:
    found = {}
    for pair in pairs:
        alias, sep, ip = pair.partition("=")
        if not sep or not alias or not ip:
            raise ConfigError(f"--node-ip takes ALIAS=ADDRESS (e.g. --node-ip gpu2=10.0.0.6), got {pair!r}")
        found[alias] = ip
    return found


@fleet_app.command("up")
def up_command(
    hosts: Annotated[list[str], typer.Argument(metavar="HOST...", help="ssh config aliases, the head first.")],
    name: NameOpt = "default",
    config_file: ConfigOpt = None,
    python: PythonOpt = None,
    port: Annotated[int, typer.Option("--port", help="The head's Ray (GCS) port.")] = 6379,
    dashboard_port: Annotated[
        int, typer.Option("--dashboard-port", help="The dashboard's (job API's) port on the head's loopback.")
    ] = 8265,
    num_gpus: Annotated[Optional[int], typer.Option("--num-gpus", help="GPUs per node (default: Ray detects).")] = None,
    num_cpus: Annotated[Optional[int], typer.Option("--num-cpus", help="CPUs per node (default: Ray detects).")] = None,
    ray_arg: Annotated[
        Optional[list[str]], typer.Option("--ray-arg", help="One more `ray start` argument for every node (repeat it).")
    ] = None,
    node_ip: Annotated[
        Optional[list[str]],
        typer.Option(
            "--node-ip", help="ALIAS=ADDRESS: the address the other nodes reach ALIAS at (default: its ssh HostName)."
        ),
    ] = None,
) -> None:
    """Start Ray on HOST... over SSH: the head on the first host, a worker on each other one.

    Token authentication is on (a token made here, 0600 on each host, never printed); the dashboard listens on
    the head's loopback only and is reached through an SSH forward. Prints one line per node, then the address.
    """
    from workbench.sweeps._fleet_up import fleet_up

    started = time.monotonic()
    state = fleet_up(
        hosts,
        name=name,
        python=python,
        ssh_config=config_file,
        port=port,
        dashboard_port=dashboard_port,
        num_gpus=num_gpus,
        num_cpus=num_cpus,
        ray_args=ray_arg or [],
        node_ips=_node_ips(node_ip or []),
    )
    for entry in state.started:
        typer.echo(f"{entry['role']} on {entry['alias']} ({entry['ip']}): pid {entry['pid']}, log {entry['log_path']}")
    typer.echo(
        f"fleet {state.name} up in {time.monotonic() - started:.1f} s: Ray at {state.address}; sweeps: "
        f"`workbench bench VARIANT... --fleet {state.name} --detach`"
    )


@fleet_app.command("status")
def status_command(
    name: NameOpt = "default",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Hosts (alive, GPUs, CPUs), units running on each, and the fleet's jobs."""
    from workbench.sweeps._fleet_up import fleet_status, status_lines

    status = fleet_status(name)
    typer.echo(json.dumps(status, indent=1) if as_json else "\n".join(status_lines(status)))


@fleet_app.command("down")
def down_command(name: NameOpt = "default") -> None:
    """Stop what `fleet up` started (by recorded process group; never `ray stop`) and forget the fleet."""
    from workbench.sweeps._fleet_up import fleet_down

    for line in fleet_down(name):
        typer.echo(line)


@fleet_app.command("attach")
def attach_command(
    job: JobArg = None,
    name: NameOpt = "default",
    runs_dir: RunsDirOption = None,
    wait: Annotated[
        bool,
        typer.Option("--wait/--no-wait", help="Follow the job until it ends (pulling as units finish), or pull once."),
    ] = False,
    every_s: Annotated[float, typer.Option("--every", help="Seconds between pulls with --wait.")] = 5.0,
) -> None:
    """Pull the units the fleet's job finished into the local runs folder (only what is new since the last pull)."""
    from workbench.store import runs_root
    from workbench.sweeps._fleet_job import TERMINAL, job_status, pull_runs

    root = runs_root(runs_dir)
    while True:
        chosen, status = job_status(name, job)
        status = status.split(".")[-1]
        pulled = pull_runs(name, root)
        for run, files in pulled.items():
            typer.echo(f"pulled {run}: {len(files)} files")
        typer.echo(f"job {chosen}: {status}; {sum(map(len, pulled.values()))} files pulled into {root}")
        if not wait or status in TERMINAL:
            break
        time.sleep(every_s)
    if status == "FAILED":
        raise typer.Exit(code=1)


@fleet_app.command("cancel")
def cancel_command(job: JobArg = None, name: NameOpt = "default") -> None:
    """Stop the fleet's job: its sweep is cancelled as by Ctrl-C (each unit's server stopped)."""
    from workbench.sweeps._fleet_job import cancel_job

    chosen, status, seconds, asked_at = cancel_job(name, job)
    typer.echo(
        f"job {chosen}: {status} {seconds:.1f} s after the stop request (sent at {asked_at:.3f} UTC seconds); "
        f"what it finished stays on the head "
        f"(`workbench fleet attach {chosen}` pulls it)"
    )
