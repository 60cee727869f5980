"""What ``workbench fleet up`` started, kept in a small JSON file under the project (git-ignored).

One file per fleet name, ``<project>/.fleet/<name>.json`` (``$WORKBENCH_FLEET_DIR`` instead of
``<project>/.fleet`` when set), plus the fleet's Ray token beside it, ``<name>.token``, mode 0600.
The file records each process ``fleet up`` started (host alias, pid, process-group id, kernel start
time, log path), so ``fleet down`` stops exactly those and nothing else; the jobs submitted to the
fleet; and, per local runs folder and file of the head's runs folder, the size and mtime last pulled
(so a repeated ``fleet attach`` pulls only what changed).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Any

from workbench import paths
from workbench.errors import ConfigError

__all__ = ["FleetState", "fleet_dir", "load_state", "save_state", "write_token"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def fleet_dir() -> Path:
    """The folder of the fleet files: ``$WORKBENCH_FLEET_DIR``, else ``<project>/.fleet``."""
    env = os.environ.get("WORKBENCH_FLEET_DIR")
    return Path(env).expanduser() if env else paths.project_root() / ".fleet"


def check_name(name: str) -> str:
    """``name`` when it can name a fleet file (letters, digits, ``_.-``; at most 64).

    Raises:
        ConfigError: any other name.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"fleet name {name!r} is not usable: use letters, digits, '_', '.' or '-' (at most 64), "
                          "e.g. --name lab")
    return name


@dataclasses.dataclass
class FleetState:
    """A fleet's record.

    Attributes:
        name: the fleet's name (its file's stem).
        head: the ssh alias of the head host (the dashboard is forwarded through it).
        address: the cluster's address, ``ip:port`` (what ``ray start --address`` and ``ray.init`` take).
        dashboard_port: the dashboard's (job API's) port on the head's loopback.
        python: the absolute interpreter on every host (jobs' entrypoints use it).
        remote_dir: the fleet's folder on each host (token, logs).
        runs_dir: the head's runs folder that jobs write into.
        ssh_config: the ssh config the aliases are resolved in (None: the default).
        started: one entry per process started: ``alias``, ``role`` (``head``/``worker``), ``ip``, ``pid``,
            ``pgid``, ``start_time``, ``log_path``, ``command``. Empty for a cluster ``fleet up`` did not start.
        jobs: submission id -> ``{"submitted_at": UTC seconds, "argv": the bench arguments}``.
        pulled: local runs folder -> {path relative to ``runs_dir`` -> ``[size, mtime]`` of the copy last pulled there}.
    """

    name: str
    head: str
    address: str
    dashboard_port: int
    python: str
    remote_dir: str
    runs_dir: str
    ssh_config: str | None = None
    started: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    jobs: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    pulled: dict[str, dict[str, list[float]]] = dataclasses.field(default_factory=dict)

    @property
    def path(self) -> Path:
        return fleet_dir() / f"{self.name}.json"

    @property
    def token_path(self) -> Path:
        """The local copy of the fleet's Ray token (0600; never printed)."""
        return fleet_dir() / f"{self.name}.token"

    def token(self) -> str:
        """The fleet's Ray token (for the job API's ``authorization`` header).

        Raises:
            ConfigError: the token file is missing.
        """
        try:
            return self.token_path.read_text().strip()
        except OSError as exc:
            raise ConfigError(f"fleet {self.name!r} has no token file {self.token_path} ({exc.strerror}); bring it "
                              f"up again with `workbench fleet up`") from exc


def write_token(name: str, token: str) -> Path:
    """Write the local token file of fleet ``name`` with mode 0600 (created so: never readable by others)."""
    folder = fleet_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.token"
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(token)
    return path


def save_state(state: FleetState) -> Path:
    """Write ``state`` atomically (temporary file, then rename)."""
    path = state.path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(dataclasses.asdict(state), indent=1) + "\n")
    os.replace(tmp, path)
    return path


def load_state(name: str) -> FleetState:
    """The record of fleet ``name``.

    Raises:
        ConfigError: no such fleet (the message lists the fleets there are), or its file is unreadable.
    """
    path = fleet_dir() / f"{check_name(name)}.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        known = sorted(p.stem for p in fleet_dir().glob("*.json"))
        raise ConfigError(f"no fleet named {name!r} in {fleet_dir()} (fleets: {', '.join(known) or 'none'}); "
                          "start one with `workbench fleet up HOST...`") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the fleet file {path}: {exc}; remove it and run `workbench fleet up` "
                          "again") from exc
    fields = {f.name for f in dataclasses.fields(FleetState)}
    return FleetState(**{k: v for k, v in data.items() if k in fields})
