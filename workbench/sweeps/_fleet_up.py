"""``workbench fleet up / status / down``: a Ray cluster on SSH hosts, over the workbench's own connections.

``fleet up HOST...`` starts a Ray head on the first host and a worker on each other one, each as
``ray start --block`` launched detached in a session of its own by :func:`workbench.hosts.processes.spawn`
over the host's SSH connection (:mod:`workbench.hosts`), so the one process ``fleet up`` records per host
(pid, process group, kernel start time) leads every Ray process of that node: ``fleet down`` stops those
groups (SIGTERM to the leader, which stops its node's processes in order, then SIGKILL to the group after a
grace) and nothing else, never ``ray stop`` (which stops every Ray on a
host). With ``--block``, ``ray start`` stays in the foreground and, on SIGTERM, stops the node's processes
itself (Ray 2.60 ``ray/scripts/scripts.py``: ``shutdown_at_exit=block``).

Security (docs/FLEET.md): token authentication on (``RAY_AUTH_MODE=token``) with a token made here
(:func:`secrets.token_hex`, 32 bytes), written mode 0600 in a 0700 folder on each host and read by Ray from
``RAY_AUTH_TOKEN_PATH`` (Ray 2.60's token loader); kept locally beside the fleet file, never printed. The
dashboard (the job API) listens on the head's loopback only (``--dashboard-host 127.0.0.1``) and is reached
through a local forward of the head's SSH connection (:meth:`workbench.hosts.Host.forward`), its requests
carrying the token as ``authorization: Bearer`` (Ray's ``http_token_authentication.py``).

Every Ray import of the workbench stays in the ``_fleet*`` modules; this one needs none (the dashboard's
REST state API, ``/api/v0/nodes`` and ``/api/v0/tasks``, is plain HTTP).
"""

from __future__ import annotations

import contextlib
import json
import posixpath
import secrets
import shlex
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from workbench.errors import ConfigError, HostError
from workbench.sweeps._fleet_state import FleetState, check_name, fleet_dir, load_state, save_state, write_token

__all__ = [
    "DEFAULT_DASHBOARD_PORT",
    "DEFAULT_RAY_PORT",
    "dashboard",
    "dashboard_get",
    "fleet_down",
    "fleet_status",
    "fleet_up",
    "status_lines",
]

DEFAULT_RAY_PORT = 6379
DEFAULT_DASHBOARD_PORT = 8265
#: Seconds a node may take from ``ray start`` to "Ray runtime started." (a loaded machine's start is slow).
NODE_START_S = 240.0
#: Seconds the cluster may take, after the last start, until the dashboard lists every node alive.
NODES_ALIVE_S = 180.0
#: The Ray task of a fleet unit (``workbench.sweeps._fleet._execute``): what ``status`` counts as a unit.
UNIT_TASK = "_execute"
_STARTED = "Ray runtime started"
#: Runs the command after it with SIGINT back at its default. A command started in the background by a
#: non-interactive shell (as :func:`workbench.hosts.processes.spawn` starts it) has SIGINT ignored (POSIX sh),
#: which every Ray process of the node would inherit; a Ray worker whose Python starts with SIGINT ignored
#: installs no KeyboardInterrupt handler, so ``ray.cancel`` (which interrupts the task's main thread) could not
#: stop a unit softly, and the sweep's Ctrl-C and ``fleet cancel`` fell back to killing workers (measured here:
#: no server 6.5-7.5 s after the stop request, against the 5 s bound).
_SIGINT_DEFAULT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
)


def _hosts_of(ssh_config: str | None) -> Any:
    from workbench.hosts import get_host

    return lambda alias: get_host(alias, config_file=ssh_config)


def _absolute(host: Any, program: str) -> str:
    """``program`` as an absolute path on ``host`` (``command -v``).

    Raises:
        ConfigError: not found there.
    """
    if program.startswith("/"):
        found = host.run(["test", "-x", program], check=False, timeout_s=60)
        if found.ok:
            return program
    else:
        found = host.run(["sh", "-c", f"command -v {shlex.quote(program)}"], check=False, timeout_s=60)
        if found.ok and found.stdout.strip().startswith("/"):
            return found.stdout.strip().splitlines()[0]
    raise ConfigError(
        f"no interpreter {program!r} on host {host.name!r}: pass --python with the absolute path of "
        "a Python that has the workbench and its fleet extra installed (the same path on every host)"
    )


def _node_ip(host: Any, given: Mapping[str, str]) -> str:
    """The node IP of ``host``: ``given[alias]``, else the address its SSH connection reaches (``HostName``)."""
    if host.name in given:
        return given[host.name]
    name = getattr(getattr(host, "target", None), "hostname", None)
    if not name:
        raise ConfigError(f"host {host.name!r} is not an SSH host; fleet up starts Ray over SSH (name ssh aliases)")
    try:
        return socket.gethostbyname(name)
    except OSError as exc:
        raise ConfigError(
            f"cannot resolve {name!r} (host {host.name!r}) to a node IP: {exc}; give it with "
            f"--node-ip {host.name}=ADDRESS"
        ) from exc


def _wait_started(host: Any, proc: Any, what: str, timeout_s: float) -> None:
    """Wait until ``proc``'s log says the node started.

    Raises:
        HostError: it exited first, or ``timeout_s`` passed (the log's tail in the message).
    """
    from workbench.hosts import processes

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _STARTED in processes.read_tail(host, proc.log_path, lines=400):
            return
        if not processes.is_alive(host, proc):
            raise HostError(
                f"{what} on host {host.name!r} exited before it started; log {proc.log_path}:\n"
                f"{processes.read_tail(host, proc.log_path, lines=30)}"
            )
        time.sleep(1.0)
    raise HostError(
        f"{what} on host {host.name!r} did not start within {timeout_s:.0f} s; log {proc.log_path}:\n"
        f"{processes.read_tail(host, proc.log_path, lines=30)}"
    )


def fleet_up(
    hosts: Sequence[str],
    *,
    name: str = "default",
    python: str | None = None,
    ssh_config: str | None = None,
    port: int = DEFAULT_RAY_PORT,
    dashboard_port: int = DEFAULT_DASHBOARD_PORT,
    num_gpus: int | None = None,
    num_cpus: int | None = None,
    ray_args: Sequence[str] = (),
    node_ips: Mapping[str, str] | None = None,
    start_timeout_s: float = NODE_START_S,
) -> FleetState:
    """Start a Ray cluster on ``hosts`` (ssh aliases): the head on the first, a worker on each other one.

    Args:
        hosts: ssh config aliases, the head first; each named once.
        name: the fleet's name (its state file under :func:`fleet_dir`).
        python: the interpreter on the hosts (default ``$WORKBENCH_REMOTE_PYTHON`` or ``python3``), made
            absolute on the head; Ray's ``ray`` beside it is what runs.
        ssh_config: the ssh config file (like ``ssh -F``).
        port: the head's GCS port (Ray's default 6379).
        dashboard_port: the dashboard's port on the head's loopback (Ray's default 8265).
        num_gpus, num_cpus: ``ray start --num-gpus/--num-cpus`` on every node (default: Ray detects them).
        ray_args: more ``ray start`` arguments for every node.
        node_ips: alias -> the address the other nodes reach it at (default: its ssh ``HostName``, resolved).
        start_timeout_s: seconds each node may take to start.

    Returns:
        The saved :class:`FleetState`.

    Raises:
        ConfigError: no host, a host named twice, a fleet of that name already up, no such interpreter.
        HostError: a host cannot be reached or a node does not start; what was started is stopped again.
    """
    check_name(name)
    if not hosts:
        raise ConfigError("name the hosts: `workbench fleet up HEAD [WORKER...]` (ssh config aliases, head first)")
    if len(set(hosts)) != len(hosts):
        raise ConfigError(f"a host is named twice in {list(hosts)}; name each host once")
    if (fleet_dir() / f"{name}.json").exists():
        raise ConfigError(
            f"fleet {name!r} is up already ({fleet_dir() / (name + '.json')}); `workbench fleet down "
            f"--name {name}` first, or give another --name"
        )
    from workbench.hosts import host_python, processes

    get = _hosts_of(ssh_config)
    head = get(hosts[0])
    py = _absolute(head, host_python(head, python))
    ray = posixpath.join(posixpath.dirname(py), "ray")
    home = head.run(["sh", "-c", "cd && pwd"], timeout_s=60).stdout.strip()
    remote_dir = posixpath.join(home, ".workbench", "fleet", name)
    ips = {alias: _node_ip(get(alias), node_ips or {}) for alias in hosts}
    state = FleetState(
        name=name,
        head=hosts[0],
        address=f"{ips[hosts[0]]}:{int(port)}",
        dashboard_port=int(dashboard_port),
        python=py,
        remote_dir=remote_dir,
        runs_dir=posixpath.join(remote_dir, "runs"),
        ssh_config=ssh_config,
    )
    token = secrets.token_hex(32)
    token_path = posixpath.join(remote_dir, "auth_token")
    env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": token_path, "RAY_USAGE_STATS_ENABLED": "0"}
    common = [
        "--block",
        "--disable-usage-stats",
        *(["--num-gpus", str(num_gpus)] if num_gpus is not None else []),
        *(["--num-cpus", str(num_cpus)] if num_cpus is not None else []),
        *ray_args,
    ]
    write_token(name, token)
    save_state(state)
    try:
        for alias in hosts:
            host = get(alias)
            host.run(["mkdir", "-p", "-m", "700", remote_dir], timeout_s=60)
            host.run(["chmod", "700", remote_dir], timeout_s=60)
            host.write_bytes(token_path, token.encode(), mode=0o600)
            role = "head" if alias == hosts[0] else "worker"
            argv = [py, "-c", _SIGINT_DEFAULT, ray, "start", "--node-ip-address", ips[alias], *common]
            argv += (
                [
                    "--head",
                    "--port",
                    str(int(port)),
                    "--include-dashboard=true",
                    "--dashboard-host=127.0.0.1",
                    "--dashboard-port",
                    str(int(dashboard_port)),
                ]
                if role == "head"
                else ["--address", state.address]
            )
            log_path = posixpath.join(remote_dir, f"ray-{role}-{alias}.log")
            host.run(["rm", "-f", log_path], timeout_s=60)
            proc = processes.spawn(host, argv, log_path=log_path, env=env, cwd=remote_dir)
            state.started.append(
                {
                    "alias": alias,
                    "role": role,
                    "ip": ips[alias],
                    "pid": proc.pid,
                    "pgid": proc.pgid,
                    "start_time": proc.start_time,
                    "log_path": log_path,
                    "command": proc.command,
                }
            )
            save_state(state)  # recorded at once: a failure later still lets `fleet down` stop it
            _wait_started(host, proc, f"the Ray {role} (ray start)", start_timeout_s)
        _wait_nodes(state, len(hosts))
    except BaseException:
        with contextlib.suppress(Exception):
            fleet_down(name)
        raise
    return state


@contextlib.contextmanager
def dashboard(state: FleetState) -> Iterator[str]:
    """The dashboard's base URL (``http://127.0.0.1:PORT``) through a local forward of the head's SSH connection."""
    head = _hosts_of(state.ssh_config)(state.head)
    with head.forward(state.dashboard_port) as fwd:
        yield fwd.url("").rstrip("/")


def dashboard_get(base: str, path: str, token: str, *, timeout_s: float = 30.0) -> Any:
    """GET ``base + path`` with the token as ``authorization: Bearer``; the JSON answer.

    Raises:
        HostError: no answer, or an HTTP error (401/403: the token is not the cluster's).
    """
    request = urllib.request.Request(base + path, headers={"authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            return json.loads(answer.read().decode())
    except urllib.error.HTTPError as exc:
        hint = " (the fleet's token was refused)" if exc.code in (401, 403) else ""
        raise HostError(f"the Ray dashboard answered {exc.code} to {path}{hint}") from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise HostError(f"the Ray dashboard did not answer {path}: {exc}") from exc


def _listed(answer: Any) -> list[dict[str, Any]]:
    """The rows of a state-API answer (``{"data": {"result": {"result": [...]}}}``, Ray 2.60)."""
    data = answer.get("data", {}).get("result", {}) if isinstance(answer, dict) else {}
    rows = data.get("result", []) if isinstance(data, dict) else data
    return [r for r in rows if isinstance(r, dict)]


def _wait_nodes(state: FleetState, count: int, timeout_s: float = NODES_ALIVE_S) -> None:
    """Wait until the dashboard lists ``count`` nodes alive (through the forward, with the token).

    Raises:
        HostError: not within ``timeout_s`` (what was last seen in the message).
    """
    deadline, seen = time.monotonic() + timeout_s, "no answer"
    with dashboard(state) as base:
        while time.monotonic() < deadline:
            try:
                alive = [
                    n
                    for n in _listed(dashboard_get(base, "/api/v0/nodes?detail=true", state.token()))
                    if n.get("state") == "ALIVE"
                ]
                if len(alive) >= count:
                    return
                seen = f"{len(alive)} of {count} nodes alive"
            except HostError as exc:
                seen = str(exc)
            time.sleep(1.0)
    raise HostError(
        f"the fleet's nodes did not all join within {timeout_s:.0f} s ({seen}); see the logs in "
        f"{state.remote_dir} on each host"
    )


def fleet_status(name: str = "default") -> dict[str, Any]:
    """What fleet ``name`` holds now, from its dashboard (through the SSH forward).

    Returns:
        ``{"name", "address", "nodes": [{"ip", "alias", "alive", "gpus", "cpus", "units_running"}],
        "units_running", "jobs": [{"job", "status"}]}``.

    Raises:
        ConfigError: no such fleet. HostError: the head or its dashboard cannot be reached.
    """
    state = load_state(name)
    aliases = {s["ip"]: s["alias"] for s in state.started}
    token = state.token()
    with dashboard(state) as base:
        nodes = _listed(dashboard_get(base, "/api/v0/nodes?detail=true", token))
        query = urllib.parse.urlencode(
            [
                ("filter_keys", "state"),
                ("filter_predicates", "="),
                ("filter_values", "RUNNING"),
                ("detail", "true"),
                ("limit", "10000"),
            ]
        )
        tasks = [
            t
            for t in _listed(dashboard_get(base, f"/api/v0/tasks?{query}", token))
            if str(t.get("name", "")).split(".")[-1] == UNIT_TASK
        ]
        jobs = _listed(dashboard_get(base, "/api/v0/jobs", token)) if state.jobs else []
    by_node: dict[str, int] = {}
    for task in tasks:
        by_node[str(task.get("node_id"))] = by_node.get(str(task.get("node_id")), 0) + 1
    rows = []
    for node in sorted(nodes, key=lambda n: str(n.get("node_ip"))):
        total = node.get("resources_total") or {}
        rows.append(
            {
                "ip": node.get("node_ip"),
                "alias": aliases.get(node.get("node_ip")),
                "alive": node.get("state") == "ALIVE",
                "gpus": int(float(total.get("GPU", 0))),
                "cpus": int(float(total.get("CPU", 0))),
                "units_running": by_node.get(str(node.get("node_id")), 0),
            }
        )
    ours = [
        {"job": j.get("submission_id"), "status": j.get("status")} for j in jobs if j.get("submission_id") in state.jobs
    ]
    return {"name": state.name, "address": state.address, "nodes": rows, "units_running": len(tasks), "jobs": ours}


def status_lines(status: Mapping[str, Any]) -> list[str]:
    """``fleet status`` as text: one line per host, then the units running and the fleet's jobs."""
    lines = [
        f"fleet {status['name']}: Ray at {status['address']}, {len(status['nodes'])} hosts, "
        f"{sum(n['gpus'] for n in status['nodes'])} GPUs, {status['units_running']} units running"
    ]
    for node in status["nodes"]:
        lines.append(
            f"  {node['ip']} ({node['alias'] or 'not started by fleet up'}): "
            f"{'alive' if node['alive'] else 'DEAD'}, {node['gpus']} GPUs, {node['cpus']} CPUs, "
            f"{node['units_running']} units running"
        )
    for job in status["jobs"]:
        lines.append(f"  job {job['job']}: {job['status']}")
    return lines


def fleet_down(name: str = "default", *, grace_s: float = 15.0) -> list[str]:
    """Stop what ``fleet up`` started for fleet ``name`` (workers first, the head last), by recorded process
    group and start time (never by name, never ``ray stop``); remove the token files and the fleet file.

    Returns:
        One line per process: stopped (with the seconds it took), killed (still running ``grace_s`` seconds
        after SIGTERM, default 15) or found gone already.

    Raises:
        ConfigError: no such fleet. HostError: a process group survived SIGKILL (the fleet file is kept).
    """
    from workbench.hosts import SpawnedProcess, processes

    state = load_state(name)
    get = _hosts_of(state.ssh_config)
    lines = []
    for entry in sorted(state.started, key=lambda s: s["role"] == "head"):
        host = get(entry["alias"])
        proc = SpawnedProcess(
            host=entry["alias"],
            pid=entry["pid"],
            pgid=entry["pgid"],
            start_time=entry["start_time"],
            command=entry["command"],
            log_path=entry["log_path"],
        )
        began = time.monotonic()
        ended = processes.stop(host, proc, grace_s=grace_s, term_leader_only=True)  # ray start --block stops its node
        took = time.monotonic() - began
        how = {"gone": "gone already", "stopped": f"stopped in {took:.1f} s"}.get(
            ended, f"killed: still running {grace_s:.0f} s after SIGTERM, so SIGKILL ended it ({took:.1f} s)"
        )
        lines.append(f"{entry['role']} on {entry['alias']} (pid {entry['pid']}): {how}")
        with contextlib.suppress(HostError):
            host.run(["rm", "-f", posixpath.join(state.remote_dir, "auth_token")], check=False, timeout_s=60)
    state.path.unlink(missing_ok=True)
    state.token_path.unlink(missing_ok=True)
    return lines
