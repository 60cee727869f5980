"""The verbs of :mod:`workbench.sweeps`: ``workbench bench`` (benchmark variants, store their runs)
and ``workbench runs`` (the run catalogue), registered by ``workbench/cli.py`` in one line each."""

from workbench.sweeps._bench_cli import bench_command
from workbench.sweeps._runs_cli import runs_app

__all__ = ["bench_command", "runs_app"]
