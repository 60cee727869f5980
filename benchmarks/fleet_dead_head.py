"""A fleet whose head dies mid-sweep: how long the worker's servers outlive it, and what the driver says.

Figures for docs/FLEET.md's faults table (as root: it makes the two network namespaces of
tests/fleet_cluster.py, 10.231.0.1/30 and 10.231.0.2/30, and starts a Ray 2.60 head and worker in
them with ``--num-gpus=4`` fake GPUs). Each run:

1. starts the cluster and a sweep of 2 variants x 2 repeats at ``--tp-size 2`` (4 units of 2 GPUs,
   2 per host) whose units each measure for minutes (concurrency 1, ``--requests`` requests of 256
   tokens at time scale 1), so a unit cannot end on its own within the wait below;
2. once a server runs on the worker, SIGKILLs every process of the head's namespace (its GCS,
   raylet, workers and servers; with ``--driver head`` the driver too, as when the notebook runs on
   the head);
3. polls the worker's namespace every 0.2 s and records when its last server, its raylet and its
   Ray workers are gone, which watchdog note stopped each server (``owner process ... is gone``: the
   Ray worker exited; ``lease expired``: no heartbeat), and, with ``--driver worker`` (a driver on the
   surviving node, as a notebook on another machine would be), when the driver exited, its exit
   status and the last lines it wrote.

The server is the simulated SGLang engine (no GPU, no NCCL, no real SGLang here).

``--gcs-reconnect-timeout-s S`` starts both nodes with ``RAY_gcs_rpc_server_reconnect_timeout_s=S``
(Ray's config: how long a raylet and its workers wait for a lost GCS before they exit; 60 s by default
in Ray 2.60, ``ray/_private/ray_constants.py`` and ``src/ray/common/ray_config_def.h``).

    sudo .venv/bin/python benchmarks/fleet_dead_head.py [--runs 1] [--driver head|worker] \
        [--gcs-reconnect-timeout-s S] [--out /tmp/fleet_dead_head]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import fleet_cluster as fc  # noqa: E402

#: Seconds the worker's namespace is watched after the head is killed (Ray 2.60's own bound is 60-65 s).
WATCH_S = 150.0
#: Seconds a driver may take to have a server running on the worker (its start, the prestart, the server's).
FIRST_SERVER_S = 420.0


def _options(requests: int) -> dict:
    return {
        "tp_size": 2,
        "concurrency_levels": [1],
        "requests_per_level": requests,
        "max_new_tokens": 256,
        "repeats": 2,
        "time_scale": 1.0,
    }


def _worker_servers(cluster: fc.Cluster) -> list[int]:
    return [pid for ns, pid, _ in cluster.servers() if ns == cluster.worker_ns]


def _worker_has(cluster: fc.Cluster, needle: str) -> bool:
    return any(ns == cluster.worker_ns for ns, _, _ in cluster.processes(needle))


def _watchdog_notes(cluster: fc.Cluster) -> list[str]:
    """The watchdogs' lines in the worker's server logs: which check stopped each server."""
    notes = []
    for log in sorted(cluster.servers_dir(cluster.worker_ns).rglob("*.log")):
        notes += [
            line.strip()
            for line in log.read_text(errors="replace").splitlines()
            if "owner process" in line or "lease expired" in line
        ]
    return notes


def one_run(out: Path, *, driver_ns: str, requests: int) -> dict:
    load_at_start = os.getloadavg()
    cluster = fc.start(out)
    try:
        ns = cluster.head_ns if driver_ns == "head" else cluster.worker_ns
        spec = {
            "address": cluster.address,
            "variants": ["baseline", "eagle3-topk4"],
            "runs_dir": str(out / "runs"),
            "out": str(out / "sweep.json"),
            "options": _options(requests),
        }
        (out / "sweep.spec.json").write_text(json.dumps(spec))
        stderr = out / "driver.err"
        driver = cluster.popen(
            ns,
            [cluster.python, str(REPO / "tests" / "fleet_driver.py"), str(out / "sweep.spec.json")],
            stdout=open(out / "driver.out", "w"),
            stderr=open(stderr, "w"),
        )
        start = time.monotonic()
        while not _worker_servers(cluster):
            if driver.poll() is not None or time.monotonic() - start > FIRST_SERVER_S:
                raise SystemExit(f"no server on the worker (driver {driver.poll()}):\n{stderr.read_text()[-3000:]}")
            time.sleep(0.2)
        time.sleep(3)  # measuring now
        servers_before = len(_worker_servers(cluster))
        killed = time.monotonic()
        fc.kill_namespace(cluster, cluster.head_ns)
        seen: dict[str, float | None] = {
            "servers_gone_s": None,
            "raylet_gone_s": None,
            "ray_workers_gone_s": None,
            "driver_exit_s": None,
        }
        while time.monotonic() - killed < WATCH_S:
            now = round(time.monotonic() - killed, 1)
            if seen["servers_gone_s"] is None and not _worker_servers(cluster):
                seen["servers_gone_s"] = now
            if seen["raylet_gone_s"] is None and not _worker_has(cluster, "raylet"):
                seen["raylet_gone_s"] = now
            if seen["ray_workers_gone_s"] is None and not _worker_has(cluster, "ray::"):
                seen["ray_workers_gone_s"] = now
            if seen["driver_exit_s"] is None and driver.poll() is not None:
                seen["driver_exit_s"] = now
            if all(v is not None for v in seen.values()):
                break
            time.sleep(0.2)
        if driver.poll() is None:
            driver.kill()
        result_file = out / "sweep.json"
        return {
            "driver_in": driver_ns,
            "gcs_reconnect_timeout_s": os.environ.get("RAY_gcs_rpc_server_reconnect_timeout_s", "Ray's default"),
            "servers_on_worker_at_kill": servers_before,
            **seen,
            "servers_left_at_end": len(_worker_servers(cluster)),
            "driver_returncode": driver.poll(),
            "driver_result": json.loads(result_file.read_text()) if result_file.exists() else None,
            "driver_stderr_tail": stderr.read_text(errors="replace").strip().splitlines()[-6:],
            "watchdog_notes": _watchdog_notes(cluster),
            "load_average_1_5_15_at_start": [round(x, 1) for x in load_at_start],
            "load_average_1_5_15_at_end": [round(x, 1) for x in os.getloadavg()],
        }
    finally:
        fc.stop(cluster)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1, help="runs, each with a fresh cluster (default 1)")
    parser.add_argument(
        "--driver",
        choices=("head", "worker"),
        default="head",
        help="the namespace the driver runs in (default head, the usual place; worker: it survives)",
    )
    parser.add_argument(
        "--gcs-reconnect-timeout-s",
        type=int,
        default=None,
        help="RAY_gcs_rpc_server_reconnect_timeout_s for both nodes (default: Ray's own, 60 s)",
    )
    parser.add_argument("--requests", type=int, default=40, help="requests of the one level (default 40: minutes)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/fleet_dead_head"), help="work folder (emptied first)")
    args = parser.parse_args()
    why = fc.namespaces_unavailable()
    if why:
        raise SystemExit(f"cannot make the two-host cluster: {why}")
    if args.gcs_reconnect_timeout_s is not None:  # the nodes' environment is this process's (fleet_cluster.Cluster.env)
        os.environ["RAY_gcs_rpc_server_reconnect_timeout_s"] = str(args.gcs_reconnect_timeout_s)
    results = []
    for run in range(args.runs):
        folder = args.out / f"run{run + 1}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        results.append(one_run(folder, driver_ns=args.driver, requests=args.requests))
        print(json.dumps(results[-1], indent=1), flush=True)
    (args.out / "result.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
