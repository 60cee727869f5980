"""``workbench fleet up / status / attach / cancel / down`` and ``bench --detach`` over real SSH: an OpenSSH
server in each of two network namespaces (tests/fleet_sshd.py), Ray 2.60 started in them by ``fleet up``
through the workbench's own SSH connections (host keys pinned in a known_hosts file), token authentication
on, the dashboard on the head's loopback reached through the product's SSH forward, the simulated engine as
the server. The ``workbench`` commands run inside the head's namespace (the namespaces reach each other,
not this machine's). One fleet serves the module; its tests run in order (up, a detached sweep pulled by
attach, a cancelled one, down). Skipped, with the reason, where namespaces or sshd cannot be made.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import fleet_cluster as fc
import fleet_sshd

pytestmark = pytest.mark.e2e

ray = pytest.importorskip("ray", reason="the fleet tests need Ray: pip install -e '.[test,fleet]' (make test does)")

#: The issue's target: `fleet cancel` -> no server left within 5 s of the stop request.
CANCEL_TARGET_S = 5.0
#: The bound asserted (seconds from the stop request): at a load average of 13-16 on 2 cores the servers' own
#: stop took most of 4.5-6.7 s (docs/FLEET.md), and 10.02 s with two whole suites running side by side (load
#: 11-12, 2026-12-06), so the target is reported and this bound is what fails the test: a server the cancel
#: missed stays up until its lease runs out (600 s), far past it.
CANCEL_BOUND_S = 15.0
WORKBENCH = str(Path(sys.executable).with_name("workbench"))
NAME = f"t{os.getpid() % 100000}"
SMALL = ["baseline", "--tp-size", "2", "--levels", "1,2", "--requests", "4", "--max-new-tokens", "16", "--repeats", "1"]
#: About 40 s of load per unit at time scale 1: long enough to be cancelled while measuring.
SLOW = [
    "baseline",
    "--tp-size",
    "2",
    "--levels",
    "1,2",
    "--requests",
    "16",
    "--max-new-tokens",
    "128",
    "--repeats",
    "1",
    "--time-scale",
    "1",
    "--label",
    "slow",
]


class Fleet:
    def __init__(self, cluster: fc.Cluster, ssh: fleet_sshd.FleetSSH, work: Path) -> None:
        self.cluster, self.ssh, self.work = cluster, ssh, work
        self.env = {**cluster.env(cluster.head_ns), "WORKBENCH_FLEET_DIR": str(work / "fleet")}
        self.runs = work / "local-runs"
        self.remote_dir = Path.home() / ".workbench" / "fleet" / NAME

    def cli(self, *args: str, timeout_s: float = 300, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run(
            ["ip", "netns", "exec", self.cluster.head_ns, WORKBENCH, *args],
            env=self.env,
            text=True,
            capture_output=True,
            timeout=timeout_s,
        )
        if check:
            assert done.returncode == 0, f"{args} -> {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done

    def ours(self) -> list[tuple[str, int, str]]:
        """Processes of either namespace other than the sshds (Ray's, the workbench's, servers)."""
        sshd = {p.pid for p in self.ssh.procs.values()}
        left = []
        for ns, pid, cmd in self.cluster.processes(""):
            if pid in sshd or "sshd" in cmd.split(" ")[0]:
                continue
            left.append((ns, pid, cmd[:120]))
        return left


def _boost_while(cluster: fc.Cluster, done: threading.Event) -> None:
    """Run the namespaces' processes' scheduling groups at fleet_cluster's start niceness until ``done``, then
    at 0 (as tests/fleet_cluster.py does for its own `ray start`: Ray's start deadlines on 2 loaded cores)."""
    while not done.wait(0.3):
        for ns in (cluster.head_ns, cluster.worker_ns):
            for pid in cluster.pids(ns):
                fc._set_group_niceness(pid, fc.START_NICENESS)
    for ns in (cluster.head_ns, cluster.worker_ns):
        for pid in cluster.pids(ns):
            fc._set_group_niceness(pid, 0)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    why = fc.namespaces_unavailable() or fleet_sshd.sshd_unavailable()
    if why:
        pytest.skip(f"no two SSH hosts here: {why}")
    work = tmp_path_factory.mktemp("fleetssh")
    cluster = fc.make_namespaces(work)
    ssh = None
    try:
        ssh = fleet_sshd.start(cluster, work / "ssh")
        made = Fleet(cluster, ssh, work)
        made.up_s = _up(made)
        yield made
    finally:
        if ssh is not None and (work / "fleet" / f"{NAME}.json").exists():
            subprocess.run(
                ["ip", "netns", "exec", cluster.head_ns, WORKBENCH, "fleet", "down", "--name", NAME],
                env={**cluster.env(cluster.head_ns), "WORKBENCH_FLEET_DIR": str(work / "fleet")},
                capture_output=True,
                timeout=120,
            )
        if ssh is not None:
            fleet_sshd.stop(ssh)
        fc.stop(cluster)
        shutil.rmtree(Path.home() / ".workbench" / "fleet" / NAME, ignore_errors=True)


def _up(fleet: Fleet) -> float:
    ray_args = ["--object-store-memory", str(150 * 2**20), *fc.AGENT_PORTS, "--temp-dir", str(fleet.cluster.ray_temp)]
    done = threading.Event()
    booster = threading.Thread(target=_boost_while, args=(fleet.cluster, done), daemon=True)
    booster.start()
    start = time.monotonic()
    try:
        up = fleet.cli(
            "fleet",
            "up",
            "fleethead",
            "fleetworker",
            "--name",
            NAME,
            "-F",
            str(fleet.ssh.config_file),
            "--python",
            sys.executable,
            "--num-gpus",
            str(fc.GPUS_PER_NODE),
            "--num-cpus",
            "2",
            *[f"--ray-arg={a}" for a in ray_args],
            timeout_s=420,
            check=False,
        )
    finally:
        done.set()
        booster.join(10)
    assert up.returncode == 0, f"fleet up failed:\n{up.stdout[-3000:]}\n{up.stderr[-3000:]}\n{fleet.ssh.log_tail()}"
    fleet.up_output = up.stdout + up.stderr
    return time.monotonic() - start


def _wait(what, timeout_s: float, poll_s: float = 0.5):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = what()
        if found:
            return found
        time.sleep(poll_s)
    raise AssertionError(f"not within {timeout_s} s: {what.__doc__ or what}")


def test_up_status_token_and_loopback_dashboard(fleet):
    print(f"fleet up took {fleet.up_s:.1f} s")
    token = (fleet.work / "fleet" / f"{NAME}.token").read_text().strip()
    assert len(token) == 64 and token not in fleet.up_output
    assert (fleet.work / "fleet" / f"{NAME}.token").stat().st_mode & 0o777 == 0o600
    assert (fleet.remote_dir / "auth_token").stat().st_mode & 0o777 == 0o600
    assert (fleet.remote_dir / "auth_token").read_text() == token
    status = json.loads(fleet.cli("fleet", "status", "--name", NAME, "--json").stdout)
    assert [(n["ip"], n["alias"], n["alive"], n["gpus"]) for n in status["nodes"]] == [
        (fc.HEAD_IP, "fleethead", True, 4),
        (fc.WORKER_IP, "fleetworker", True, 4),
    ]
    assert status["units_running"] == 0
    text = fleet.cli("fleet", "status", "--name", NAME).stdout
    assert "2 hosts, 8 GPUs, 0 units running" in text and token not in text
    # the dashboard listens on the head's loopback only, and refuses a request without the token
    listening = fleet.cluster.exec(fleet.cluster.head_ns, ["ss", "-ltnH"], capture_output=True).stdout
    assert "127.0.0.1:8265" in listening and "0.0.0.0:8265" not in listening and f"{fc.HEAD_IP}:8265" not in listening
    probe = (
        "import urllib.request, urllib.error\ntry:\n urllib.request.urlopen('http://127.0.0.1:8265/api/v0/nodes')"
        "\n print('open')\nexcept urllib.error.HTTPError as e:\n print(e.code)"
    )
    refused = fleet.cluster.exec(fleet.cluster.head_ns, [sys.executable, "-c", probe], capture_output=True)
    assert refused.stdout.strip() == "401", refused.stdout + refused.stderr
    # no Ray process inherited SIGINT ignored from the shell that spawned `ray start` (ray.cancel needs it)
    ignoring = [
        (ns, pid, cmd[:80])
        for ns, pid, cmd in fleet.cluster.processes("")
        if ("raylet" in cmd or "default_worker" in cmd or cmd.startswith("ray::")) and _sigint_ignored(pid)
    ]
    assert not ignoring, ignoring


def _sigint_ignored(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    ignored = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigIgn:")), 16)
    return bool(ignored & (1 << 1))  # bit 1: signal 2, SIGINT


def _runs(fleet: Fleet) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(fleet.runs.glob("*/manifest.json"))]


def test_detached_sweep_attach_pulls_only_new(fleet):
    out = fleet.cli("bench", *SMALL, "--fleet", NAME, "--detach").stdout
    job = out.split("job: ", 1)[1].split()[0]
    pulls = []

    def finished() -> bool:
        """the job has ended (each poll an attach, pulling what is new)"""
        text = fleet.cli("fleet", "attach", job, "--name", NAME, "--runs-dir", str(fleet.runs), "--no-wait").stdout
        pulls.append(text)
        return "SUCCEEDED" in text or "FAILED" in text or "STOPPED" in text

    _wait(finished, 420, poll_s=5)
    assert "SUCCEEDED" in pulls[-1], pulls[-1]
    again = fleet.cli("fleet", "attach", job, "--name", NAME, "--runs-dir", str(fleet.runs)).stdout
    assert "0 files pulled" in again, again  # a repeated attach pulls nothing already here
    (manifest,) = _runs(fleet)
    assert manifest["status"] == "complete", manifest["status"]
    assert {u["host"] for u in manifest["fleet_units"]} <= {fc.HEAD_IP, fc.WORKER_IP}
    assert len(manifest["fleet_units"]) == 1 and all(u["error"] is None for u in manifest["fleet_units"])
    listed = fleet.cli("runs", "list", "--runs-dir", str(fleet.runs)).stdout
    assert manifest["run_id"] in listed
    assert not list(fleet.runs.glob(".pull-*")), "a temporary pull folder was left"


def test_cancel_stops_every_server_within_bound(fleet):
    out = fleet.cli("bench", *SLOW, "--fleet", NAME, "--detach").stdout
    job = out.split("job: ", 1)[1].split()[0]
    _wait(lambda: fleet.cluster.servers(), 420)
    time.sleep(3)  # the servers are measuring
    assert fleet.cluster.servers()
    start = time.monotonic()
    cancelled = fleet.cli("fleet", "cancel", job, "--name", NAME, timeout_s=120)
    fleet.cluster.wait_no_servers(30)
    gone_at, command_s = time.time(), time.monotonic() - start
    asked_at = float(cancelled.stdout.split("sent at ", 1)[1].split()[0])
    gone_s = gone_at - asked_at
    print(
        f"fleet cancel: no server {gone_s:.2f} s after the stop request ({command_s:.2f} s after the command "
        f"started; target {CANCEL_TARGET_S} s {'met' if gone_s <= CANCEL_TARGET_S else 'MISSED'}; load "
        f"{os.getloadavg()[0]:.1f}); {cancelled.stdout.strip()}"
    )
    fleet.cli("fleet", "attach", job, "--name", NAME, "--runs-dir", str(fleet.work / "cancelled-runs"))
    pulled = [json.loads(p.read_text()) for p in (fleet.work / "cancelled-runs").glob("*/manifest.json")]
    print(
        "runs pulled after the cancel:",
        [(m["label"], m["status"], len(m.get("units_completed") or [])) for m in pulled],
    )
    assert "STOPPED" in cancelled.stdout
    # into a new local folder: the earlier sweep's run and the cancelled one, as far as it got (its label: "slow")
    assert sorted((m["label"] or "", m["status"]) for m in pulled) == [("", "complete"), ("slow", "incomplete")]
    assert gone_s <= CANCEL_BOUND_S, f"servers left {gone_s:.2f} s after the stop request"
    status = json.loads(fleet.cli("fleet", "status", "--name", NAME, "--json").stdout)
    assert status["units_running"] == 0


def test_down_leaves_no_process_of_ours(fleet):
    assert fleet.ours(), "the fleet's processes should be running before down"
    start = time.monotonic()
    down = fleet.cli("fleet", "down", "--name", NAME, timeout_s=120).stdout
    print(f"fleet down took {time.monotonic() - start:.1f} s:\n{down}")
    # each node stopped by its own `ray start --block` on SIGTERM, none left to the SIGKILL after the grace (a
    # SIGTERM to the whole group kept a head's raylet and GCS server waiting on each other for 30 s)
    assert down.count("stopped in") == 2 and "killed" not in down, down
    left = _wait(lambda: not fleet.ours() or None, 20)
    assert left, fleet.ours()
    assert not (fleet.work / "fleet" / f"{NAME}.json").exists()
    assert not (fleet.remote_dir / "auth_token").exists()
    assert fleet.cli("fleet", "status", "--name", NAME, check=False).returncode == 2
