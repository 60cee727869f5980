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
        raise ConfigError(
            f"fleet name {name!r} is not usable: use letters, digits, '_', '.' or '-' (at most 64), e.g. --name lab"
        )
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
            raise ConfigError(
                f"fleet {self.name!r} has no token file {self.token_path} ({exc.strerror}); bring it "
                f"up again with `workbench fleet up`"
            ) from exc


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
        raise ConfigError(
            f"no fleet named {name!r} in {fleet_dir()} (fleets: {', '.join(known) or 'none'}); "
            "start one with `workbench fleet up HOST...`"
        ) from None
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"cannot read the fleet file {path}: {exc}; remove it and run `workbench fleet up` again"
        ) from exc
    problem = _record_problem(data)
    if problem is None and data["name"] != name:  # `fleet down` removes <name>.json: it must be this file
        problem = f"its name is {data['name']!r}, not {name!r} (the file's own name)"
    if problem is not None:
        raise ConfigError(
            f"the fleet file {path} is not a record `fleet up` wrote: {problem}. Nothing was stopped; "
            f"remove the file (rm {path}) and run `workbench fleet up` again (stop by hand any Ray "
            "process it had started: their logs are ray-*.log in the fleet's folder on each host)"
        )
    fields = {f.name for f in dataclasses.fields(FleetState)}
    return FleetState(**{k: v for k, v in data.items() if k in fields})


#: The fields of a fleet file and the JSON types each holds (``ssh_config`` may also be null).
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "head": (str,),
    "address": (str,),
    "dashboard_port": (int,),
    "python": (str,),
    "remote_dir": (str,),
    "runs_dir": (str,),
    "ssh_config": (str, type(None)),
    "started": (list,),
    "jobs": (dict,),
    "pulled": (dict,),
}
#: What each entry of ``started`` holds (the keys `fleet down` and `fleet status` read).
_STARTED_TYPES: dict[str, tuple[type, ...]] = {
    "alias": (str,),
    "role": (str,),
    "ip": (str,),
    "pid": (int,),
    "pgid": (int,),
    "start_time": (int,),
    "log_path": (str,),
    "command": (str,),
}
_REQUIRED = ("name", "head", "address", "dashboard_port", "python", "remote_dir", "runs_dir")
_WORDS = {
    str: "a string",
    int: "an integer",
    list: "a list",
    dict: "an object",
    type(None): "null",
    float: "a number",
    bool: "true/false",
}


def _typed(value: Any, types: tuple[type, ...]) -> bool:
    """``value`` is of one of ``types`` (a JSON true/false is no integer)."""
    return isinstance(value, types) and not (isinstance(value, bool) and bool not in types)


def _wrong(where: str, value: Any, types: tuple[type, ...]) -> str:
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    return (
        f"{where} is {_WORDS.get(type(value), type(value).__name__)} ({shown}), not "
        f"{' or '.join(_WORDS[t] for t in types)}"
    )


def _record_problem(data: Any) -> str | None:
    """What makes ``data`` (a fleet file's parsed JSON) unusable as a :class:`FleetState`, or None.

    Checks that it is an object with every required field, each field of its type, each ``started``
    entry an object of the keys `fleet down` reads with their types, ``jobs`` an object of objects and
    ``pulled`` an object of objects of ``[size, mtime]`` pairs.
    """
    if not isinstance(data, dict):
        return f"it holds {_WORDS.get(type(data), type(data).__name__)}, not an object"
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        return f"it lacks {', '.join(missing)}"
    for key, types in _FIELD_TYPES.items():
        if key in data and not _typed(data[key], types):
            return _wrong(key, data[key], types)
    for i, entry in enumerate(data.get("started", [])):
        if not isinstance(entry, dict):
            return _wrong(f"started[{i}]", entry, (dict,))
        for key, types in _STARTED_TYPES.items():
            if key not in entry:
                return f"started[{i}] lacks {key}"
            if not _typed(entry[key], types):
                return _wrong(f"started[{i}].{key}", entry[key], types)
    for job, record in data.get("jobs", {}).items():
        if not isinstance(record, dict):
            return _wrong(f"jobs[{job!r}]", record, (dict,))
        if not _typed(record.get("submitted_at"), (int, float)):
            return _wrong(f"jobs[{job!r}].submitted_at", record.get("submitted_at"), (float,))
    for folder, files in data.get("pulled", {}).items():
        if not isinstance(files, dict):
            return _wrong(f"pulled[{folder!r}]", files, (dict,))
        for name, seen in files.items():
            if not (isinstance(seen, list) and len(seen) == 2 and all(_typed(x, (int, float)) for x in seen)):
                return f"pulled[{folder!r}][{name!r}] is {seen!r}, not a [size, mtime] pair of numbers"
    return None
