"""What the fleet test modules share: the module-scoped two-host cluster, the sweep specs and drivers, the bounds.

tests/test_fleet.py (placement, retries, a killed worker, a lost host) and tests/test_fleet_interrupts.py (a killed
server, a killed driver, Ctrl-C) each start one cluster of their own (tests/fleet_cluster.py), so that pytest-xdist's
``--dist loadfile`` can run the two modules on two workers at once; a module's tests share its cluster.
"""

from __future__ import annotations

import json
import re
import signal
import time
from pathlib import Path

import pytest

import fleet_cluster as fc

#: Bounds stated in docs/FLEET.md for a server to be gone after each fault (seconds), on 2 loaded cores.
KILLED_WORKER_BOUND_S = 10.0
KILLED_DRIVER_BOUND_S = 10.0
CANCEL_BOUND_S = 5.0
#: Seconds a driver may take to have its first server running: its own start, the prestart of one warm worker
#: per unit slot (89-124 s at a load average of 12-17 on 2 cores; docs/FLEET.md) and the server's start.
FIRST_SERVER_S = 300.0
#: The issue's target for the fleet's overhead per unit, submission to the unit starting on its (warm) worker.
OVERHEAD_TARGET_S = 2.0

FAST = {"tp_size": 2, "concurrency_levels": [1, 2], "requests_per_level": 4, "max_new_tokens": 16, "repeats": 2}
#: Units long enough to be interrupted while they measure (about 10 s of load each).
SLOW = {
    "tp_size": 2,
    "concurrency_levels": [1, 2],
    "requests_per_level": 8,
    "max_new_tokens": 64,
    "repeats": 2,
    "time_scale": 1.0,
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    why = fc.namespaces_unavailable()
    if why:
        pytest.skip(f"no two-host Ray cluster here: {why}")
    made = fc.start(tmp_path_factory.mktemp("fleet"))
    try:
        yield made
    finally:
        fc.stop(made)


def spec_file(
    cluster: fc.Cluster,
    tmp_path: Path,
    options: dict,
    *,
    variants=("baseline", "eagle3-topk4"),
    runs_dir: Path | None = None,
    name: str = "sweep",
) -> Path:
    spec = {
        "address": cluster.address,
        "variants": list(variants),
        "runs_dir": str(runs_dir or tmp_path / "runs"),
        "out": str(tmp_path / f"{name}.json"),
        "options": options,
    }
    path = tmp_path / f"{name}.spec.json"
    path.write_text(json.dumps(spec))
    return path


def drive(cluster: fc.Cluster, spec: Path, timeout_s: float = 420) -> dict:
    done = cluster.exec(
        cluster.head_ns,
        [cluster.python, str(Path(__file__).with_name("fleet_driver.py")), str(spec)],
        capture_output=True,
        timeout=timeout_s,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(Path(json.loads(spec.read_text())["out"]).read_text())


def start_driver(cluster: fc.Cluster, spec: Path):
    return cluster.popen(
        cluster.head_ns,
        [cluster.python, str(Path(__file__).with_name("fleet_driver.py")), str(spec)],
        stdout=open(spec.with_suffix(".out"), "w"),
        stderr=open(spec.with_suffix(".err"), "w"),
    )


def manifests(runs_dir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(runs_dir.glob("*/manifest.json"))]


def wait_for(what, timeout_s: float, *, proc=None, spec: Path | None = None):
    start = time.monotonic()
    while not (found := what()):
        if proc is not None and proc.poll() is not None:
            raise AssertionError(
                f"the driver ended first ({proc.returncode}): {spec.with_suffix('.err').read_text()[-3000:]}"
            )
        assert time.monotonic() - start < timeout_s, "timed out waiting"
        time.sleep(0.2)
    return found


def signal_mid_sweep(cluster: fc.Cluster, tmp_path: Path, sig: int, bound_s: float) -> int:
    """Start a two-variant sweep, send its driver ``sig`` once two servers run, check that no server is left
    within ``bound_s``; the driver's exit status."""
    spec = spec_file(cluster, tmp_path, SLOW, variants=["baseline", "eagle3-topk4"])
    driver = start_driver(cluster, spec)
    try:
        # two servers with their watchdogs armed (a record is written after the watchdog starts): a driver killed
        # between a server's spawn and its watchdog's leaves that server running unwatched and unrecorded (seen once,
        # 2026-12-03; docs/FLEET.md, Not done yet), a window this test does not aim at
        wait_for(
            lambda: len(cluster.registered_servers()) >= 2 and len(cluster.servers()) >= 2,
            FIRST_SERVER_S,
            proc=driver,
            spec=spec,
        )
        time.sleep(1)
        sent = time.monotonic()
        driver.send_signal(sig)
        cluster.wait_no_servers(bound_s)  # AssertionError past the bound
        print(f"{signal.Signals(sig).name} to the driver: no server left after {time.monotonic() - sent:.1f} s")
        return driver.wait(timeout=30)
    finally:
        if driver.poll() is None:
            driver.kill()


def watchdogs(cluster: fc.Cluster) -> list[tuple[int, int]]:
    """``(server pid, owner pid)`` of each server's watchdog (the owner is the Ray worker running the unit)."""
    out = []
    for _, _, cmd in cluster.processes("server_watchdog.py"):
        server, owner = re.search(r"--pid (\d+)", cmd), re.search(r"--owner-pid (\d+)", cmd)
        if server and owner:
            out.append((int(server.group(1)), int(owner.group(1))))
    return out


def gone(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
