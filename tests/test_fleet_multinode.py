"""A server spanning two nodes on the real engine: Ray 2.60, a head and a worker in two network namespaces
(fake GPUs), the simulated SGLang engine's ranks meeting at --dist-init-addr (tests/fleet_cluster.py).

One cluster serves this module (tests/fleet_sweeps.py's module-scoped fixture); each test drives a sweep from the head's
namespace (tests/fleet_driver.py) and checks that no server is left. Skipped, with the reason, where
namespaces cannot be made. The parts without Ray are tests/test_multinode_units.py.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

import fleet_cluster as fc
from fleet_sweeps import cluster  # noqa: F401 - the module-scoped two-namespace cluster (one per module using it)

pytestmark = pytest.mark.e2e

ray = pytest.importorskip("ray", reason="the fleet tests need Ray: pip install -e '.[test,fleet]' (make test does)")

#: Seconds a driver may take to have its servers running (its start, a rank's actor starting: a cold worker).
FIRST_SERVER_S = 300.0
#: Bound for the whole group to be stopped after one rank dies (docs/FLEET.md), on 2 loaded cores.
RANK_DEATH_BOUND_S = 10.0
#: Bound for the ranks to stop together when the unit ends (the last rank gone after the first).
TOGETHER_BOUND_S = 10.0

#: A variant of two nodes x 4 GPUs (tp-size 8 over nnodes 2), the seed's baseline: one unit fills both hosts'
#: fake GPUs, so a sweep's two repeats run one after the other.
VARIANT = """name = "baseline-2nodes"
description = "Plain decoding, TP 8 spread over two nodes (four GPUs each)."
sglang_version = "0.5.9"
model_path = "meta-llama/Llama-3.3-70B-Instruct"

[flags]
tp-size = 8
nnodes = 2
disable-custom-all-reduce = true
"""
#: About 10 s of load per unit at real time (long enough to kill a rank, or Ctrl-C, while it measures).
#: 8 requests a level in real time: a unit measures for about 10 s, long enough to be caught measuring on a loaded
#: machine (with 4, a unit ended before the test's poll found its log in a loaded run)
OPTIONS = {"concurrency_levels": [1, 2], "requests_per_level": 8, "max_new_tokens": 64, "repeats": 3, "time_scale": 1.0}
#: Bound for every rank to be gone after Ctrl-C in the driver (docs/FLEET.md; the one-node bound).
CANCEL_BOUND_S = 5.0


def _variant_file(tmp_path: Path) -> str:
    path = tmp_path / "baseline-2nodes.toml"
    path.write_text(VARIANT)
    return str(path)


def _start(cluster: fc.Cluster, tmp_path: Path, options: dict):
    spec = tmp_path / "sweep.spec.json"
    spec.write_text(
        json.dumps(
            {
                "address": cluster.address,
                "variants": [_variant_file(tmp_path)],
                "runs_dir": str(tmp_path / "runs"),
                "out": str(tmp_path / "sweep.json"),
                "options": options,
            }
        )
    )
    driver = cluster.popen(
        cluster.head_ns,
        [cluster.python, str(Path(__file__).with_name("fleet_driver.py")), str(spec)],
        stdout=open(spec.with_suffix(".out"), "w"),
        stderr=open(spec.with_suffix(".err"), "w"),
    )
    return driver, spec


def _ranks(cluster: fc.Cluster) -> dict[int, tuple[str, int, str]]:
    """The running ranks: rank -> (namespace, pid, command line)."""
    out = {}
    for ns, pid, cmd in cluster.servers():
        words = cmd.split()
        if "--node-rank" in words:
            out[int(words[words.index("--node-rank") + 1])] = (ns, pid, cmd)
    return out


def _wait_for(what, timeout_s: float, *, driver, spec: Path):
    start = time.monotonic()
    while not (found := what()):
        if driver.poll() is not None:
            raise AssertionError(
                f"the driver ended first ({driver.returncode}): {spec.with_suffix('.err').read_text()[-3000:]}"
            )
        assert time.monotonic() - start < timeout_s, "timed out waiting"
        time.sleep(0.1)
    return found


def _log_of(cluster: fc.Cluster, ns: str, pid: int) -> str:
    """The log of a server of ``ns`` (its registry record names it)."""
    for record in cluster.servers_dir(ns).glob("*.json"):
        data = json.loads(record.read_text())
        if data.get("pid") == pid:
            return Path(data["log_path"]).read_text()
    return ""


def _addr(cmd: str) -> str:
    words = cmd.split()
    return words[words.index("--dist-init-addr") + 1]


def _measuring(cluster: fc.Cluster, old: set[int], *, driver, spec: Path) -> dict[int, tuple[str, int, str]]:
    """The two ranks of the next unit (server pids not in ``old``: a later unit may be given the same free port
    for its --dist-init-addr, so the address does not tell units apart), once rank 0 is ready and measuring."""
    ranks = _wait_for(
        lambda: (r := {k: v for k, v in _ranks(cluster).items() if v[1] not in old}) and len(r) == 2 and r,
        FIRST_SERVER_S,
        driver=driver,
        spec=spec,
    )
    _wait_for(lambda: "fired up" in _log_of(cluster, ranks[0][0], ranks[0][1]), 120, driver=driver, spec=spec)
    time.sleep(3)  # measuring its first level
    return ranks


def test_a_two_node_server_spans_both_hosts_serves_load_stops_together_and_a_killed_rank_stops_its_group(
    cluster, tmp_path
):
    """One sweep, three units one after the other: the first serves its load and its ranks stop together; in
    the second, rank 1's server is killed while it measures, and rank 0 is stopped and the unit classified; in
    the third, Ctrl-C in the driver stops both ranks."""
    driver, spec = _start(cluster, tmp_path, OPTIONS)
    try:
        # unit 1: one rank per host (STRICT_SPREAD), rank 0's address for --dist-init-addr
        ranks = _wait_for(
            lambda: (r := _ranks(cluster)) and len(r) == 2 and r, FIRST_SERVER_S, driver=driver, spec=spec
        )
        (ns0, pid0, cmd0), (ns1, pid1, cmd1) = ranks[0], ranks[1]
        assert {ns0, ns1} == {cluster.head_ns, cluster.worker_ns}, "one rank per host"
        ip0 = fc.HEAD_IP if ns0 == cluster.head_ns else fc.WORKER_IP
        first = _addr(cmd0)
        assert first.startswith(f"{ip0}:") and _addr(cmd1) == first and "--nnodes 2" in cmd1
        assert "--node-rank 0" in cmd0 and "--node-rank 1" in cmd1
        for pid in (pid0, pid1):  # each rank got its host's 4 GPUs of its bundle (Ray's CUDA_VISIBLE_DEVICES)
            env = dict(e.split(b"=", 1) for e in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if b"=" in e)
            assert len(env[b"CUDA_VISIBLE_DEVICES"].split(b",")) == 4
        # each rank's last sighting alive: both were, just now (their environ read), so a rank that ends before the
        # first poll below still has one. (The KeyError on rank 0 of 2026-12-03 was a spawning shell taken for rank 0,
        # fixed in fleet_cluster.servers; this start only keeps a unit that ends right then from failing the same way.)
        seen = dict.fromkeys((0, 1), time.monotonic())
        while (now := time.monotonic()) and (
            found := {r: v for r, v in _ranks(cluster).items() if v[1] in (pid0, pid1)}
        ):
            seen.update({r: now for r in found})
            assert driver.poll() is None, spec.with_suffix(".err").read_text()[-3000:]
            time.sleep(0.1)
        apart = abs(seen[1] - seen[0])
        print(f"unit 1: ranks stopped {apart:.2f} s apart (rank 0 on {ns0}, rank 1 on {ns1})")
        assert apart < TOGETHER_BOUND_S
        # unit 2: kill rank 1's server while it measures
        second = _measuring(cluster, {pid0, pid1}, driver=driver, spec=spec)
        (_, pid0b, _), (ns1b, pid1b, _) = second[0], second[1]
        killed = time.monotonic()
        os.killpg(os.getpgid(pid1b), signal.SIGKILL)  # rank 1's server dies (its actor and worker live on)
        while any(v[1] in (pid0b, pid1b) for v in _ranks(cluster).values()):
            assert time.monotonic() - killed < RANK_DEATH_BOUND_S, f"ranks still running: {_ranks(cluster)}"
            time.sleep(0.1)
        print(f"unit 2: rank 1 killed, the whole group was stopped {time.monotonic() - killed:.2f} s later")
        # unit 3: Ctrl-C in the driver while it measures
        _measuring(cluster, {pid0, pid1, pid0b, pid1b}, driver=driver, spec=spec)
        sent = time.monotonic()
        driver.send_signal(signal.SIGINT)
        cluster.wait_no_servers(CANCEL_BOUND_S)  # AssertionError past the bound
        print(f"unit 3: SIGINT to the driver, no rank left after {time.monotonic() - sent:.2f} s")
        assert driver.wait(timeout=60) != 0  # KeyboardInterrupt, re-raised
    finally:
        if driver.poll() is None:
            driver.kill()
    assert cluster.servers() == []
    result = json.loads((tmp_path / "sweep.json").read_text())
    assert result["runs"] is None  # interrupted
    (failure,) = result["failures"]  # unit 2's
    message = failure["message"]
    ip1b = fc.HEAD_IP if ns1b == cluster.head_ns else fc.WORKER_IP
    assert failure["variant"] == "baseline-2nodes" and failure["kind"] == "killed"  # SIGKILL: nothing in its log
    assert f"rank 1 of 2 on {ip1b}" in message and "exited first" in message and "stopped the group" in message
    assert "--- rank 0 of 2 on" in message and "--- rank 1 of 2 on" in message  # each rank's log tail ...
    assert "all 2 ranks joined" in message and "joined its group" in message  # ... with rank 0's and rank 1's lines
    (manifest,) = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/manifest.json")]
    assert manifest["status"] == "incomplete" and "interrupted" in manifest["error"]
    units = sorted(manifest["fleet_units"], key=lambda u: u["started_at"] or float("inf"))
    # a server failure is the unit's own: not retried; the third was cancelled
    assert [u["error"] for u in units if u["error"] != "cancelled"] == [None, None]
    assert units[0]["host"] == ip0  # the unit's task, and its load generator, ran on rank 0's node
    assert manifest["fleet_prestart"]["wanted"] == 0  # no warm-up for units spanning nodes
    import pandas as pd

    repeat = units[0]["repeat"]
    assert {(repeat, 0), (repeat, 1)} <= set(map(tuple, manifest["units_completed"]))
    rows = pd.read_parquet(tmp_path / "runs" / manifest["run_id"] / "requests.parquet")
    done = rows[rows["repeat"] == repeat]  # unit 1: every level stored, measured against rank 0
    assert len(done) == 16 and done["error"].isna().all() and set(done["fleet_host"]) == {ip0}
    (ranks_tag,) = set(done["fleet_ranks"])  # every row says where each rank ran
    assert (
        ranks_tag.startswith(f"rank 0 on {ip0} (GPUs ")
        and f"; rank 1 on {({fc.HEAD_IP, fc.WORKER_IP} - {ip0}).pop()}" in ranks_tag
    )
