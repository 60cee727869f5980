"""Hosts: where commands run and files live (this machine, or a GPU host over SSH)."""

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
    "LOCAL_NAMES": "_resolve",
    "LocalHost": "_local",
    "parse_requirements": "_check",
    "quote_command": "_base",
    "render_check": "_check",
    "require_python": "_upload",
    "servers_dir": "_env",
    "shell_path": "_base",
    "SpawnedProcess": "_base",
    "SSHHost": "_ssh",
}
#: Public name -> a private module exported whole.
_MODULES = {"processes": "_processes"}

__all__, __getattr__, __dir__ = _lazy_face(__name__, _NAMES, _MODULES)
