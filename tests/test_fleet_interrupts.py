"""Interrupted fleet sweeps with the real engine (Ray 2.60, two network namespaces, fake GPUs, the simulated
SGLang engine): a server killed mid-unit, a killed driver and Ctrl-C, each leaving no server within its bound.

Its own cluster (tests/fleet_sweeps.py), so that it runs beside tests/test_fleet.py on another pytest worker.
"""

from __future__ import annotations

import json
import re
import signal
import time

import pytest

import fleet_sweeps as fs
from fleet_sweeps import cluster  # noqa: F401 - this module's own two-namespace cluster

pytestmark = pytest.mark.e2e

ray = pytest.importorskip("ray", reason="the fleet tests need Ray: pip install -e '.[test,fleet]' (make test does)")


def test_a_server_killed_mid_unit_is_classified_with_its_log_tail_and_not_retried(cluster, tmp_path):
    spec = fs.spec_file(cluster, tmp_path, {**fs.SLOW, "repeats": 1}, variants=["baseline"])
    driver = fs.start_driver(cluster, spec)
    try:
        fs.wait_for(lambda: fs.watchdogs(cluster), fs.FIRST_SERVER_S, proc=driver, spec=spec)
        time.sleep(8)  # ready (about 4 s here) and measuring its first level (about 10 s)
        for ns, pid, cmd in cluster.processes("server_watchdog.py"):
            group = int(re.search(r"--pgid (\d+)", cmd).group(1))
            import os

            os.killpg(group, signal.SIGKILL)  # the server dies; its worker lives on
        assert driver.wait(timeout=120) == 0, spec.with_suffix(".err").read_text()[-3000:]
    finally:
        if driver.poll() is None:
            driver.kill()
    result = json.loads((tmp_path / "sweep.json").read_text())
    (failure,) = result["failures"]
    assert failure["variant"] == "baseline" and failure["kind"] == "killed" and "Server log tail" in failure["message"]
    (manifest,) = fs.manifests(tmp_path / "runs")
    assert manifest["status"] == "failed" and len(manifest["units_completed"]) < 2
    assert [f["kind"] for f in manifest["failed_levels"]] == ["killed"]  # the level it cut, kept apart
    (unit,) = manifest["fleet_units"]  # one attempt: a server failure is the unit's own, never retried by Ray
    assert unit["error"] is None
    assert cluster.servers() == []


def test_a_killed_driver_leaves_no_server_and_a_rerun_submits_exactly_the_missing_units(cluster, tmp_path):
    assert fs.signal_mid_sweep(cluster, tmp_path, signal.SIGKILL, fs.KILLED_DRIVER_BOUND_S) == -signal.SIGKILL
    before = fs.manifests(tmp_path / "runs")
    missing = {
        (m["variant"], r)
        for m in before
        for r in range(2)
        if {(r, 0), (r, 1)} - {tuple(u) for u in m["units_completed"]}
    }
    assert missing, "the driver was killed before every unit finished"
    result = fs.drive(cluster, fs.spec_file(cluster, tmp_path, fs.SLOW, name="rerun"), timeout_s=420)
    after = fs.manifests(tmp_path / "runs")
    assert [m["status"] for m in after] == ["complete", "complete"]
    done_before = {m["variant"]: len(m.get("fleet_units") or []) for m in before}
    submitted = {(m["variant"], u["repeat"]) for m in after for u in m["fleet_units"][done_before[m["variant"]] :]}
    assert submitted == missing  # the rerun's entries follow the killed run's, which it kept
    assert sorted(r["variant"] for r in result["resumed"]) == ["baseline", "eagle3-topk4"]
    assert cluster.servers() == []


def test_ctrl_c_cancels_every_unit_and_stops_their_servers_within_the_bound(cluster, tmp_path):
    assert fs.signal_mid_sweep(cluster, tmp_path, signal.SIGINT, fs.CANCEL_BOUND_S) != 0  # KeyboardInterrupt, re-raised
    manifests = fs.manifests(tmp_path / "runs")
    assert {m["status"] for m in manifests} == {"incomplete"}
    assert all("interrupted" in (m["error"] or "") for m in manifests)


#: Bound on the lost host's servers being gone after its processes are killed (seconds; docs/FLEET.md).
