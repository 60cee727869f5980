"""Hosts: where commands run and files live (this machine, or a GPU host over SSH)."""

import typing as _typing

from workbench._faces import lazy_face as _lazy_face

#: Public name -> the private module that defines it (imported on first use).
_NAMES = {
    "call_helper": "_helpers",
    "check_host": "_check",
    "CommandResult": "_base",
    "ensure_bundle": "_bundle",
    "ensure_file": "_upload",
    "Forward": "_base",
    "free_port": "_env",
    "get_host": "_resolve",
    "helper_path": "_helpers",
    "Host": "_base",
    "host_python": "_env",
    "is_local": "_resolve",
    "LocalHost": "_local",
    "parse_requirements": "_check",
    "render_check": "_check",
    "require_python": "_upload",
    "servers_dir": "_env",
    "shell_path": "_base",
    "SpawnedProcess": "_base",
    "SSHHost": "_ssh",
}
#: Public name -> a private module exported whole.
_MODULES = {"processes": "_processes"}

if _typing.TYPE_CHECKING:  # what static tools see: the same names from the same modules (tests/test_exports.py)
    from workbench.hosts._helpers import call_helper as call_helper
    from workbench.hosts._check import check_host as check_host
    from workbench.hosts._base import CommandResult as CommandResult
    from workbench.hosts._bundle import ensure_bundle as ensure_bundle
    from workbench.hosts._upload import ensure_file as ensure_file
    from workbench.hosts._base import Forward as Forward
    from workbench.hosts._env import free_port as free_port
    from workbench.hosts._resolve import get_host as get_host
    from workbench.hosts._helpers import helper_path as helper_path
    from workbench.hosts._base import Host as Host
    from workbench.hosts._env import host_python as host_python
    from workbench.hosts._resolve import is_local as is_local
    from workbench.hosts._local import LocalHost as LocalHost
    from workbench.hosts._check import parse_requirements as parse_requirements
    from workbench.hosts._check import render_check as render_check
    from workbench.hosts._upload import require_python as require_python
    from workbench.hosts._env import servers_dir as servers_dir
    from workbench.hosts._base import shell_path as shell_path
    from workbench.hosts._base import SpawnedProcess as SpawnedProcess
    from workbench.hosts._ssh import SSHHost as SSHHost
    from workbench.hosts import _processes as processes
else:
    __all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES, _MODULES)
