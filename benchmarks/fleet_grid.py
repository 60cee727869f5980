"""An 8-unit grid on a fleet of 2 hosts x 4 fake GPUs against the same grid one server at a time.

Figures for docs/FLEET.md, all from one run of this script (as root: it makes two network
namespaces joined by a veth pair, 10.231.0.1/30 and 10.231.0.2/30, and starts a Ray 2.60 head
and worker in them with ``--num-gpus=4``, as tests/fleet_cluster.py does for the tests):

1. the grid (4 variants x 2 repeats at ``--tp-size 2``: 8 units of 2 GPUs, so G = 4 slots) on the
   fleet, from a driver in the head's namespace (``benchmark_variants(..., fleet=...)``);
2. the same grid one server after another on this machine (``benchmark_variants`` without a fleet);
3. the wall-time ratio, the mean unit time of each, the finish time against the target
   ``1.25 x ceil(N / G)`` fleet unit times, the prestart (one warm worker per unit slot, before the
   first submission) and the fleet's overhead per unit: submission (or its GPUs coming free) to the
   unit starting on its worker (Ray's scheduling, unpickling), for the first unit on its GPUs (a
   prestarted worker) and the later ones (a reused worker), beside the server's own start (unit start
   to server ready), against the target of at most 2 s; the load average at the start and the end.

The server is the simulated SGLang engine (no GPU, no NCCL, no real SGLang here); both sides run on
the same 2 cores, so the ratio is what this machine gives, not what 8 GPUs would.

    sudo .venv/bin/python benchmarks/fleet_grid.py [--requests 8] [--out /tmp/fleet_grid]
"""

from __future__ import annotations

import argparse
import json
import os
import math
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import fleet_cluster as fc  # noqa: E402

VARIANTS = ["baseline", "eagle3-topk4", "eagle3-topk1-steps3", "eagle3-topk4-steps1"]


def _options(requests: int) -> dict:
    return {
        "tp_size": 2,
        "concurrency_levels": [1, 4],
        "requests_per_level": requests,
        "max_new_tokens": 32,
        "repeats": 2,
        "time_scale": 1.0,
    }


def _overheads(units: list[dict]) -> tuple[list[float], list[float]]:
    """The fleet's overhead per unit, from submission (or its GPUs coming free) to starting on its worker.

    A unit is **first** on its GPUs when no earlier unit held them on its host: it starts on a worker the
    sweep prestarted before the first submission (``fleet_prestart``; without a prestart Ray would start a
    worker process for it, which imports Ray and the workbench), **later** otherwise (the worker the
    previous unit left): its overhead is counted from when the driver saw the previous holder of its GPUs
    finish (so it is an upper bound: the driver sees a finish up to ~1 s late; clamped at 0)."""
    cold, warm = [], []
    for u in units:
        before = [
            v
            for v in units
            if v is not u
            and v["host"] == u["host"]
            and v["started_at"] < u["started_at"]
            and set(v["gpus"].split(",")) & set(u["gpus"].split(","))
        ]
        if before:
            free = max(u["submitted_at"], max(v["finished_at"] for v in before))
            warm.append(max(0.0, u["started_at"] - free))
        else:
            cold.append(u["started_at"] - u["submitted_at"])
    return cold, warm


def _fleet_run(cluster: fc.Cluster, out: Path, requests: int) -> dict:
    spec = {
        "address": cluster.address,
        "variants": VARIANTS,
        "runs_dir": str(out / "fleet-runs"),
        "out": str(out / "fleet.json"),
        "options": _options(requests),
    }
    (out / "fleet.spec.json").write_text(json.dumps(spec))
    start = time.monotonic()
    done = cluster.exec(
        cluster.head_ns,
        [cluster.python, str(REPO / "tests" / "fleet_driver.py"), str(out / "fleet.spec.json")],
        capture_output=True,
        timeout=1200,
    )
    wall = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"fleet driver failed:\n{done.stderr[-4000:]}")
    units = [
        u
        for p in sorted((out / "fleet-runs").glob("*/manifest.json"))
        for u in json.loads(p.read_text())["fleet_units"]
    ]
    first = min(u["submitted_at"] for u in units)
    last = max(u["finished_at"] for u in units)
    prestart = json.loads(next((out / "fleet-runs").glob("*/manifest.json")).read_text()).get("fleet_prestart")
    return {"wall_s": wall, "units_span_s": last - first, "units": units, "prestart": prestart}


def _serial_run(out: Path, requests: int) -> dict:
    import workbench as wb

    start = time.monotonic()
    wb.benchmark_variants(VARIANTS, runs_dir=out / "serial-runs", progress=False, **_options(requests))
    return {"wall_s": time.monotonic() - start}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=8, help="requests per level (default 8)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/fleet_grid"), help="work folder (emptied first)")
    args = parser.parse_args()
    why = fc.namespaces_unavailable()
    if why:
        raise SystemExit(f"cannot make the two-host cluster: {why}")
    import shutil

    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    load_at_start = os.getloadavg()
    started = time.monotonic()
    cluster = fc.start(args.out)
    cluster_start_s = time.monotonic() - started
    try:
        fleet = _fleet_run(cluster, args.out, args.requests)
    finally:
        fc.stop(cluster)
    serial = _serial_run(args.out, args.requests)
    units = fleet["units"]
    n, slots = len(units), 2 * fc.GPUS_PER_NODE // 2
    unit_s = [u["finished_at"] - u["started_at"] for u in units]
    cold, warm = _overheads(units)
    server_start_s = [u["server_ready_at"] - u["started_at"] for u in units]
    serial_unit_s = serial["wall_s"] / n
    target_s = 1.25 * math.ceil(n / slots) * statistics.mean(unit_s)
    result = {
        "units": n,
        "slots": slots,
        "cluster_start_s": round(cluster_start_s, 1),
        "fleet_wall_s": round(fleet["wall_s"], 1),
        "fleet_units_span_s": round(fleet["units_span_s"], 1),
        "serial_wall_s": round(serial["wall_s"], 1),
        "ratio_serial_over_fleet_wall": round(serial["wall_s"] / fleet["wall_s"], 2),
        "ratio_serial_over_fleet_span": round(serial["wall_s"] / fleet["units_span_s"], 2),
        "fleet_unit_s_mean": round(statistics.mean(unit_s), 1),
        "fleet_unit_s_max": round(max(unit_s), 1),
        "serial_unit_s_mean": round(serial_unit_s, 1),
        "span_target_s (1.25 x ceil(N/G) fleet unit times)": round(target_s, 1),
        "span_within_target": fleet["units_span_s"] <= target_s,
        "prestart": {k: v for k, v in (fleet["prestart"] or {}).items() if k != "workers"},
        "overhead_first_on_gpus_s": [round(x, 2) for x in cold],
        "overhead_later_s": [round(x, 2) for x in warm],
        "overhead_within_2s": max(cold + warm) <= 2.0,
        "server_start_s_mean": round(statistics.mean(server_start_s), 2),
        "hosts": sorted({u["host"] for u in units}),
        "load_average_1_5_15_at_start": [round(x, 1) for x in load_at_start],
        "load_average_1_5_15_at_end": [round(x, 1) for x in os.getloadavg()],
    }
    (args.out / "result.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
