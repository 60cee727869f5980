"""A real two-host Ray cluster on this machine, for the fleet tests (docs/FLEET.md).

Two network namespaces joined by a veth pair (10.231.0.1/30 and 10.231.0.2/30, nothing
else is ever a target) stand for two hosts: Ray rewrites a 127.0.0.1 node address to the
machine's routable one, so two nodes on one machine need namespaces (Ray 2.60). A head
runs in the first, a worker joins it from the second, each with ``--num-gpus=4`` fake GPUs
and its own servers registry (``WORKBENCH_SERVERS_DIR``). Everything is stopped by the
namespaces' own process ids (never ``ray stop``, which would stop every Ray on the machine)
and the namespaces are deleted, also when a start fails.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAD_IP, WORKER_IP = "10.231.0.1", "10.231.0.2"
GPUS_PER_NODE = 4
RAY_PORT = 6379
#: Fixed ports for each node's agents (each namespace has its own network stack, so both nodes use the same):
#: with port 0 (Ray's default) the raylet waits for each agent to write the port it bound into a file and
#: aborts after about 15 s, which a dashboard agent starting on 2 loaded cores misses (Ray 2.60's
#: ``node_manager.cc``: "Timed out waiting for file .../metrics_agent_port_..."); given ports, it does not wait.
AGENT_PORTS = (
    "--dashboard-agent-listen-port",
    "52365",
    "--dashboard-agent-grpc-port",
    "52366",
    "--runtime-env-agent-port",
    "52367",
    "--metrics-export-port",
    "52368",
)


#: The niceness of a ``ray start`` (root may lower it): only while the node starts (Cluster.start_node).
START_NICENESS = -10


def _set_group_niceness(pid: int, niceness: int) -> None:
    """Set the niceness of ``pid``'s scheduling group (``/proc/PID/autogroup``; with autogroups on) and of ``pid``."""
    try:
        Path(f"/proc/{pid}/autogroup").write_text(str(niceness))
    except OSError:
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, pid, niceness)
    except OSError:
        pass


def namespaces_unavailable() -> str | None:
    """Why the cluster cannot be made here (None: it can)."""
    if sys.platform != "linux":
        return "network namespaces are Linux only"
    if os.geteuid() != 0:
        return "network namespaces need root (CI runs the tests as root)"
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is missing"
    probe = f"wbprobe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@dataclasses.dataclass
class Cluster:
    """The running cluster: its namespaces, addresses and folders."""

    head_ns: str
    worker_ns: str
    root: Path
    python: str
    #: Ray's session folder: short (its socket paths must stay under 108 bytes), removed by :func:`stop`.
    ray_temp: Path

    @property
    def address(self) -> str:
        return f"{HEAD_IP}:{RAY_PORT}"

    def servers_dir(self, ns: str) -> Path:
        return self.root / ns / "servers"

    def env(self, ns: str) -> dict[str, str]:
        return {
            **os.environ,
            "WORKBENCH_SERVERS_DIR": str(self.servers_dir(ns)),
            "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_DISABLE_DOCKER_CPU_WARNING": "1",
            "PYTHONUNBUFFERED": "1",
            # explicit: with the mode unset, Ray 2.60's `ray start --head` turns token authentication on
            # whenever ~/.ray/auth_token exists (any local ray.init() on this machine writes one), and the
            # worker node, started the same way, was then refused by the head ("InvalidAuthToken")
            "RAY_AUTH_MODE": "disabled",
            # a raylet waits this long for its dashboard agent (a Python process) to come up: on 2 loaded
            # cores it can take longer than the default, and the node start then fails
            "RAY_agent_register_timeout_ms": "120000",
            # and waits this long for each agent's port file (about 15 s by default)
            "RAY_raylet_start_wait_time_s": "120",
        }

    def start_node(self, ns: str, argv: list[str], **kwargs) -> subprocess.CompletedProcess:
        """Run ``ray start`` in ``ns`` in a session of its own whose scheduling group runs at niceness
        :data:`START_NICENESS` while the node starts, then at 0 (the node's workers and servers, started
        later in that group, share the machine as every other session does).

        Ray 2.60 gives a node a hard-coded 30 s to register (``ray/_private/node.py``) and its raylet about
        15 s for its Python agents to write their ports, which a start on 2 loaded cores misses: with the
        kernel's autogroup scheduling each session gets an equal share, so a plain ``nice`` does not help.
        """

        def boosted() -> None:
            os.setsid()
            _set_group_niceness(os.getpid(), START_NICENESS)

        try:
            return subprocess.run(
                ["ip", "netns", "exec", ns, *argv], env=self.env(ns), text=True, preexec_fn=boosted, **kwargs
            )
        finally:
            for pid in self.pids(ns):
                _set_group_niceness(pid, 0)

    def exec(self, ns: str, argv: list[str], **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run(["ip", "netns", "exec", ns, *argv], env=self.env(ns), text=True, **kwargs)

    def popen(self, ns: str, argv: list[str], **kwargs) -> subprocess.Popen:
        return subprocess.Popen(["ip", "netns", "exec", ns, *argv], env=self.env(ns), text=True, **kwargs)

    def pids(self, ns: str) -> list[int]:
        out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]

    def processes(self, needle: str) -> list[tuple[str, int, str]]:
        """``(namespace, pid, cmdline)`` of the namespaces' processes whose command line contains ``needle``."""
        found = []
        for ns in (self.head_ns, self.worker_ns):
            for pid in self.pids(ns):
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    continue
                if needle in cmd:
                    found.append((ns, pid, cmd))
        return found

    def servers(self) -> list[tuple[str, int, str]]:
        """The simulated SGLang servers running in either namespace: Python processes, not the shell that is spawning
        one (its command line holds the server's whole command for up to a second: `workbench.hosts.processes.spawn`;
        a rank taken for that shell's pid had no registry record, 2026-12-03)."""
        return [
            (ns, pid, cmd)
            for ns, pid, cmd in self.processes("-m workbench.sim")
            if Path(cmd.split()[0]).name.startswith("python")
        ]

    def registered_servers(self) -> list[Path]:
        """The registry records of both namespaces: a server gets one once its watchdog runs."""
        return [p for ns in (self.head_ns, self.worker_ns) for p in self.servers_dir(ns).glob("*.json")]

    def wait_no_servers(self, timeout_s: float) -> float:
        """Seconds until no server runs in either namespace; raises AssertionError past ``timeout_s``."""
        start = time.monotonic()
        while self.servers():
            if time.monotonic() - start > timeout_s:
                raise AssertionError(f"servers still running after {timeout_s} s: {self.servers()}")
            time.sleep(0.2)
        return time.monotonic() - start


def _ray_start(cluster: Cluster, ns: str, *extra: str) -> None:
    ray = str(Path(cluster.python).with_name("ray"))
    argv = [
        ray,
        "start",
        "--num-gpus",
        str(GPUS_PER_NODE),
        "--num-cpus",
        "2",
        "--object-store-memory",
        str(150 * 2**20),
        "--disable-usage-stats",
        *AGENT_PORTS,
        *extra,
    ]
    for attempt in range(3):  # a raylet that has not registered within Ray's 30 s (a loaded machine): again
        done = cluster.start_node(ns, argv, capture_output=True, timeout=180)
        if done.returncode == 0:
            return
        kill_namespace(cluster, ns)
        if "timed out during startup" not in done.stderr + done.stdout:
            break
    raise RuntimeError(f"ray start in {ns} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def start(root: Path) -> Cluster:
    """Make the namespaces (:func:`make_namespaces`) and start Ray in them (about 20-60 s on 2 loaded cores)."""
    cluster = make_namespaces(root, "wbfleet")
    try:
        _ray_start(
            cluster,
            cluster.head_ns,
            "--head",
            "--include-dashboard=false",
            "--node-ip-address",
            HEAD_IP,
            "--port",
            str(RAY_PORT),
            "--temp-dir",
            str(cluster.ray_temp),
        )
        _ray_start(cluster, cluster.worker_ns, "--address", cluster.address, "--node-ip-address", WORKER_IP)
    except BaseException:
        stop(cluster)
        raise
    return cluster


def kill_namespace(cluster: Cluster, ns: str) -> None:
    """SIGKILL every process of ``ns`` (its Ray node, workers and servers), until none is left."""
    for _ in range(50):
        pids = cluster.pids(ns)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)


def stop(cluster: Cluster) -> None:
    """Stop every process in the namespaces, then delete them (which removes the veth pair)."""
    for ns in (cluster.worker_ns, cluster.head_ns):
        if subprocess.run(["ip", "netns", "pids", ns], capture_output=True).returncode == 0:
            kill_namespace(cluster, ns)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    if not os.environ.get("FLEET_KEEP_RAY_LOGS"):
        shutil.rmtree(cluster.ray_temp, ignore_errors=True)


def make_namespaces(root: Path, prefix: str = "wbssh") -> Cluster:
    """Only the two namespaces and their veth pair (no Ray): for tests that start Ray themselves, such as
    ``workbench fleet up`` over SSH (tests/fleet_sshd.py). Stop with :func:`stop`, which also deletes them."""
    tag = f"{os.getpid() % 100000}"
    cluster = Cluster(
        head_ns=f"{prefix}A{tag}",
        worker_ns=f"{prefix}B{tag}",
        root=root,
        python=sys.executable,
        ray_temp=Path(tempfile.mkdtemp(prefix="wbray", dir="/tmp")),
    )
    veth_a, veth_b = f"{prefix[:3]}a{tag}", f"{prefix[:3]}b{tag}"
    try:
        _ip("netns", "add", cluster.head_ns)
        _ip("netns", "add", cluster.worker_ns)
        _ip("link", "add", veth_a, "type", "veth", "peer", "name", veth_b)
        for ns, dev, addr in ((cluster.head_ns, veth_a, HEAD_IP), (cluster.worker_ns, veth_b, WORKER_IP)):
            _ip("link", "set", dev, "netns", ns)
            _ip("-n", ns, "addr", "add", f"{addr}/30", "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            cluster.servers_dir(ns).mkdir(parents=True, exist_ok=True)
    except BaseException:
        stop(cluster)
        raise
    return cluster
