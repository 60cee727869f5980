"""The verbs of :mod:`workbench.sweeps`: ``workbench bench`` (benchmark variants, store their runs)
``workbench runs`` (the run catalogue) and ``workbench fleet`` (a Ray cluster on SSH hosts), registered by ``workbench/cli.py`` in one line each."""

from workbench.sweeps._bench_cli import bench_command
from workbench.sweeps._fleet_cli import fleet_app
from workbench.sweeps._runs_cli import runs_app

__all__ = ["bench_command", "fleet_app", "runs_app"]
