"""An OpenSSH server in each of the fleet tests' two network namespaces (tests/fleet_cluster.py), for
``workbench fleet up`` over the workbench's own SSH connections (tests/test_fleet_ssh.py).

Each namespace gets ``/usr/sbin/sshd -D -e`` listening on its own address (10.231.0.1 and 10.231.0.2, port
:data:`PORT`) with a host key made for the test session; one user key, made too, is the only one authorised.
The client side is an ssh config with the aliases ``fleethead`` and ``fleetworker`` and a known_hosts file
holding both host keys (``[10.231.0.1]:2222 ssh-ed25519 ...``), so the product's known-hosts logic checks
them (``StrictHostKeyChecking`` stays at its default, yes). Sessions get the per-namespace environment through
sshd's ``SetEnv`` (each host's servers registry, Ray's start timeouts for a loaded machine). The client (the
``workbench`` command under test) runs inside the head's namespace: the namespaces reach each other, not the
machine's own.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import time
from pathlib import Path

import fleet_cluster as fc
from sshd_fixture import (
    SSHD_BINARY,
    _keygen,
    client_options,
    config_text,
    prepare_workdir,
    sshd_config_text,
    stop_process,
)

PORT = 2222
ALIASES = {"fleethead": fc.HEAD_IP, "fleetworker": fc.WORKER_IP}
#: Environment every session gets (besides each host's servers registry): Ray's waits for its agents,
#: longer than the defaults for a start on 2 loaded cores (as tests/fleet_cluster.py sets them).
SESSION_ENV = {
    "RAY_agent_register_timeout_ms": "120000",
    "RAY_raylet_start_wait_time_s": "120",
    "RAY_DISABLE_DOCKER_CPU_WARNING": "1",
    "PYTHONUNBUFFERED": "1",
}


def sshd_unavailable() -> str | None:
    """Why the sshds cannot be made here (None: they can)."""
    if not os.access(SSHD_BINARY, os.X_OK) or shutil.which("ssh-keygen") is None:
        return f"{SSHD_BINARY} or ssh-keygen missing (apt-get install -y openssh-server)"
    return None


@dataclasses.dataclass
class FleetSSH:
    """The two sshds and the client files that reach them."""

    config_file: Path
    known_hosts: Path
    procs: dict[str, subprocess.Popen]
    logs: dict[str, Path]

    def log_tail(self, chars: int = 2000) -> str:
        return "\n".join(f"--- {ns}:\n{p.read_text(errors='replace')[-chars:]}" for ns, p in self.logs.items())


def _wait_listening(proc: subprocess.Popen, log: Path, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if "Server listening" in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    raise RuntimeError(f"sshd did not start (status {proc.poll()}):\n{log.read_text(errors='replace')[-3000:]}")


def start(cluster: fc.Cluster, work: Path) -> FleetSSH:
    """Start an sshd in each namespace of ``cluster``, keys and configs in ``work``; stop with :func:`stop`."""
    identity = prepare_workdir(work)
    procs, logs, known, hosts = {}, {}, [], {}
    try:
        for (alias, ip), ns in zip(ALIASES.items(), (cluster.head_ns, cluster.worker_ns)):
            host_key = work / f"host_{alias}"
            known.append(f"[{ip}]:{PORT} {_keygen(host_key)}")
            env = {"WORKBENCH_SERVERS_DIR": str(cluster.servers_dir(ns)), **SESSION_ENV}
            sshd_config = work / f"sshd_{alias}"
            sshd_config.write_text(
                sshd_config_text(
                    work,
                    port=PORT,
                    address=ip,
                    host_key=host_key,
                    pid_file=work / f"{alias}.pid",
                    extra=("SetEnv " + " ".join(f"{k}={v}" for k, v in env.items()),),
                )
            )
            logs[ns] = work / f"sshd_{alias}.log"
            with open(logs[ns], "wb") as log:
                procs[ns] = subprocess.Popen(
                    ["ip", "netns", "exec", ns, SSHD_BINARY, "-D", "-e", "-f", str(sshd_config)],
                    stdout=log,
                    stderr=log,
                    stdin=subprocess.DEVNULL,
                )
            _wait_listening(procs[ns], logs[ns])
            hosts[alias] = client_options(ip, PORT, identity, work / "known_hosts")
    except BaseException:
        stop(FleetSSH(work / "ssh_config", work / "known_hosts", procs, logs))
        raise
    (work / "known_hosts").write_text("\n".join(known) + "\n")
    (work / "ssh_config").write_text(config_text(hosts))
    return FleetSSH(work / "ssh_config", work / "known_hosts", procs, logs)


def stop(ssh: FleetSSH) -> None:
    """Stop both sshds (by their own process ids)."""
    for proc in ssh.procs.values():
        stop_process(proc)
