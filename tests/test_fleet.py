"""Sweeps on a fleet with the real engine: Ray 2.60, a head and a worker in two network namespaces
(fake GPUs, ``--num-gpus=4`` each), the simulated SGLang engine as the server (tests/fleet_cluster.py).

One cluster serves every test of this module (it takes about 20-60 s and 1.9 GB to start); each
test drives a sweep from inside the head's namespace (tests/fleet_driver.py) and checks that no
server is left in either namespace. Skipped, with the reason, where namespaces cannot be made.
"""

from __future__ import annotations

import json
import re
import signal
import time
from pathlib import Path

import pytest

import fleet_cluster as fc
import fleet_sweeps as fs
from fleet_sweeps import cluster  # noqa: F401 - this module's own two-namespace cluster

# under `make test` one worker runs this module's tests, one at a time (pytest-xdist's --dist loadfile):
# they share the module's cluster
pytestmark = pytest.mark.e2e

ray = pytest.importorskip("ray", reason="the fleet tests need Ray: pip install -e '.[test,fleet]' (make test does)")


def _notebook_on_the_fleet(cluster: fc.Cluster, tmp_path: Path) -> Path:
    """Run notebooks/spec_vs_baseline.ipynb with ``fleet=`` from the head's namespace (a kernel there, as JupyterLab on
    the head would be), sweeping :data:`fleet_sweeps.FAST`; returns its HTML report."""
    root = Path(__file__).resolve().parents[1]
    options = {
        "fleet": cluster.address,
        "variants": ["baseline", "eagle3-topk4"],
        "seed_pair": None,
        "concurrency_levels": fs.FAST["concurrency_levels"],
        "requests_per_level": fs.FAST["requests_per_level"],
        "max_new_tokens": fs.FAST["max_new_tokens"],
        "repeats": fs.FAST["repeats"],
        "tp_size": fs.FAST["tp_size"],
        "time_scale": 8.0,
        "stream_interval": 1,  # the plan `workbench bench --time-scale 8` sweeps
        "runs_dir": str(tmp_path / "runs"),
        "report_dir": str(tmp_path / "charts"),
    }
    cli = Path(cluster.python).with_name("workbench")
    argv = [str(cli), "report", str(root / "notebooks" / "spec_vs_baseline.ipynb"), "--out", str(tmp_path / "notebook")]
    for name, value in options.items():
        argv += ["-p", name, json.dumps(value)]
    done = cluster.exec(cluster.head_ns, argv, capture_output=True, timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    return tmp_path / "notebook" / "spec_vs_baseline.html"


def test_a_grid_from_the_notebook_runs_in_parallel_on_both_hosts_with_disjoint_gpus_and_bench_fleet_resumes_it(
    cluster, tmp_path
):
    page = _notebook_on_the_fleet(cluster, tmp_path).read_text()
    assert "Where each unit ran" in page and "4 units ran on a fleet of 2 hosts" in page
    manifests = fs.manifests(tmp_path / "runs")
    assert [m["status"] for m in manifests] == ["complete", "complete"]
    assert not [f for m in manifests for f in m.get("failed_levels") or []]
    result = {"runs": [str(tmp_path / "runs" / m["run_id"]) for m in manifests]}
    units = [u for m in manifests for u in m["fleet_units"]]
    assert len(units) == 4 and all(u["error"] is None for u in units)
    assert {u["host"] for u in units} == {fc.HEAD_IP, fc.WORKER_IP}
    for u in units:  # units that overlapped on a host had disjoint GPUs (Ray's CUDA_VISIBLE_DEVICES)
        assert len(u["gpus"].split(",")) == 2
        for other in units:
            if other is not u and other["host"] == u["host"] and other["label"] in u["co_tenants"]:
                assert not set(u["gpus"].split(",")) & set(other["gpus"].split(","))
    assert any(u["co_tenants"] for u in units), "some units ran at the same time"
    # Prestarted workers: one per unit slot (2 hosts x 4 GPUs / 2 per unit), warmed before the first submission,
    # and every unit ran on one of them, starting within the 2 s of its submission (no cold worker).
    (prestart,) = {json.dumps(m["fleet_prestart"], sort_keys=True) for m in manifests}
    prestart = json.loads(prestart)
    assert (prestart["wanted"], prestart["warmed"]) == (4, 4)
    warm = {tuple(w) for w in prestart["workers"]}
    assert {(u["host"], u["worker_pid"]) for u in units} <= warm
    overheads = [u["started_at"] - u["submitted_at"] for u in units]
    print(
        f"prestart {prestart['seconds']:.1f} s; overhead per unit (submission to start): "
        + ", ".join(f"{x:.2f}" for x in overheads)
        + " s"
    )
    assert max(overheads) <= fs.OVERHEAD_TARGET_S
    import pandas as pd

    for m in manifests:  # today's layout: one run per variant, every unit stored, rows tagged
        rows = pd.read_parquet(tmp_path / "runs" / m["run_id"] / "requests.parquet")
        assert sorted(map(tuple, m["units_completed"])) == [(0, 0), (0, 1), (1, 0), (1, 1)]
        by_repeat = rows.groupby("repeat")[["fleet_host", "fleet_gpus"]].first().to_dict("index")
        placed = {u["repeat"]: {"fleet_host": u["host"], "fleet_gpus": u["gpus"]} for u in m["fleet_units"]}
        assert by_repeat == placed
        assert m["host"] == f"fleet:{cluster.address}"
    assert cluster.servers() == []
    # The same sweep from the terminal (`workbench bench --fleet`): same plan, same identity, nothing left to submit.
    cli = Path(cluster.python).with_name("workbench")
    again = cluster.exec(
        cluster.head_ns,
        [
            str(cli),
            "bench",
            "baseline",
            "eagle3-topk4",
            "--fleet",
            cluster.address,
            "--tp-size",
            "2",
            "--levels",
            "1,2",
            "--requests",
            "4",
            "--max-new-tokens",
            "16",
            "--repeats",
            "2",
            "--time-scale",
            "8",
            "--runs-dir",
            str(tmp_path / "runs"),
            "--no-progress",
        ],
        capture_output=True,
        timeout=180,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stderr.count("reusing 4 of 4 levels x repeats from run ") == 2, again.stderr[-3000:]
    assert all(run in again.stdout for run in result["runs"]), again.stdout
    assert [m["fleet_units"] for m in fs.manifests(tmp_path / "runs")] == [m["fleet_units"] for m in manifests]
    # The two-host runs render as today's report (`workbench report --from-runs`), which says where each unit ran.
    from typer.testing import CliRunner

    from workbench.cli import app

    out = tmp_path / "reports"
    shown = CliRunner().invoke(
        app,
        [
            "report",
            "--from-runs",
            *[Path(r).name for r in result["runs"]],
            "--runs-dir",
            str(tmp_path / "runs"),
            "--out",
            str(out),
        ],
        env={"WORKBENCH_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert shown.exit_code == 0, shown.output[-3000:]
    html = (out / "spec_vs_baseline.html").read_text()
    assert "FAILED" not in html and "Where each unit ran" in html
    assert "4 units ran on a fleet of 2 hosts" in html and "every unit finished" in html
    for u in units:
        assert u["host"] in html and u["gpus"] in html
    assert all(u["outcome"] == "done" and u["failure_kind"] is None for u in units)
    assert "Per host" in html and html.count("<td>done</td>") == 4  # one row per unit; one row per host below
    for host in (fc.HEAD_IP, fc.WORKER_IP):
        assert re.search(rf"<td>{re.escape(host)}</td>\s*<td>\d</td>\s*<td>0</td>", html), host


def test_an_injected_unit_exception_is_reported_and_an_injected_worker_crash_is_retried(cluster, tmp_path):
    spec = tmp_path / "inject.spec.json"
    spec.write_text(
        json.dumps({"address": cluster.address, "inject": str(tmp_path), "out": str(tmp_path / "inject.json")})
    )
    outcomes = {o["label"]: o for o in fs.drive(cluster, spec, timeout_s=180)["outcomes"]}
    raised, crashed = outcomes["raises"], outcomes["crashes"]
    assert not raised["ok"] and not raised["lost"] and "ValueError: injected unit exception" in raised["error"]
    assert (tmp_path / "raises.attempts").read_text().count("attempt") == 1  # an exception is not retried
    assert crashed["ok"] and crashed["result"].endswith("at attempt 2")  # the crashed worker's unit ran again
    assert (tmp_path / "crashes.attempts").read_text().count("attempt") == 2


def test_a_killed_worker_leaves_no_server_and_its_unit_is_retried(cluster, tmp_path):
    spec = fs.spec_file(cluster, tmp_path, fs.SLOW, variants=["baseline"])
    driver = fs.start_driver(cluster, spec)
    try:
        server, worker = fs.wait_for(lambda: fs.watchdogs(cluster), fs.FIRST_SERVER_S, proc=driver, spec=spec)[0]
        time.sleep(2)  # measuring now
        killed = time.monotonic()
        import os

        os.kill(worker, signal.SIGKILL)
        while not fs.gone(server):
            assert time.monotonic() - killed < fs.KILLED_WORKER_BOUND_S, "the killed worker's server still runs"
            time.sleep(0.1)
        print(f"killed worker: its server was gone after {time.monotonic() - killed:.1f} s")
        assert driver.wait(timeout=420) == 0, spec.with_suffix(".err").read_text()[-3000:]
    finally:
        if driver.poll() is None:
            driver.kill()
    (manifest,) = fs.manifests(tmp_path / "runs")
    assert manifest["status"] == "complete"  # Ray ran the crashed unit again (max_retries)
    assert len(manifest["units_completed"]) == 4
    assert cluster.servers() == []


LOST_HOST_BOUND_S = 10.0


# Keep this test LAST in the module: it kills the worker node for good (the cluster has only its head afterwards;
# the module's fixture then stops what is left), which saves restarting a node (20-60 s on 2 loaded cores).
def test_a_lost_host_has_its_units_run_again_on_the_surviving_node_and_leaves_no_server(cluster, tmp_path):
    # 4 units of 2 GPUs on 2 hosts of 4: two on each; half fs.SLOW's requests (a unit is still measuring at the kill)
    spec = fs.spec_file(cluster, tmp_path, {**fs.SLOW, "requests_per_level": 4}, variants=["baseline", "eagle3-topk4"])
    driver = fs.start_driver(cluster, spec)
    try:
        fs.wait_for(
            lambda: [s for s in cluster.servers() if s[0] == cluster.worker_ns],
            fs.FIRST_SERVER_S,
            proc=driver,
            spec=spec,
        )
        time.sleep(2)  # measuring now
        on_worker = {pid for ns, pid, _ in cluster.servers() if ns == cluster.worker_ns}
        lost, lost_at = time.monotonic(), time.time()
        fc.kill_namespace(cluster, cluster.worker_ns)  # the host is gone: its raylet, workers and servers
        while any(not fs.gone(pid) for pid in on_worker) or cluster.pids(cluster.worker_ns):
            assert time.monotonic() - lost < LOST_HOST_BOUND_S, "the lost host still runs processes"
            time.sleep(0.1)
        gone_s = time.monotonic() - lost
        # Ray marks the node dead (its health checks fail) and runs its units again on the head
        assert driver.wait(timeout=420) == 0, spec.with_suffix(".err").read_text()[-3000:]
        ended_s = time.monotonic() - lost
    finally:
        if driver.poll() is None:
            driver.kill()
    assert cluster.servers() == []
    manifests = fs.manifests(tmp_path / "runs")
    units = [u for m in manifests for u in m["fleet_units"]]
    again = [u for u in units if u["started_at"] and u["started_at"] > lost_at]  # the lost host's units, run again
    print(
        f"lost host: its {len(on_worker)} server(s) gone {gone_s:.1f} s after the kill; the sweep ended "
        f"{ended_s:.1f} s after it; units: "
        + "; ".join(
            f"{u['label']} {u['outcome']} on {u['host']} (started {u['started_at'] - lost_at:+.1f} s after the kill)"
            if u["started_at"]
            else f"{u['label']} {u['outcome']} ({u['failure_kind']}: {u['failure']})"
            for u in units
        )
    )
    assert len(units) == 4 and on_worker
    assert again or any(u["outcome"] == "failed" for u in units), "the lost host's units were neither run nor reported"
    for u in units:  # every unit ran again on the head, or is reported failed as Ray reported it
        assert (
            (u["outcome"], u["host"]) == ("done", fc.HEAD_IP)
            or (u["outcome"], u["failure_kind"]) == ("failed", "killed")
            and "Error" in u["failure"]
        ), u
    import pandas as pd

    for m in manifests:  # the units that finished are on disk, each level of each repeat
        done = {u["repeat"] for u in m["fleet_units"] if u["outcome"] == "done"}
        assert {r for r, _ in m["units_completed"]} == done
        rows = pd.read_parquet(tmp_path / "runs" / m["run_id"] / "requests.parquet")
        assert set(rows["fleet_host"]) <= {fc.HEAD_IP}
        assert m["status"] == ("complete" if len(done) == 2 else "failed")
    from workbench.studies._fleet_view import fleet_section

    assert fc.WORKER_IP not in fleet_section(manifests)  # the report: every unit where it ended, on the head
