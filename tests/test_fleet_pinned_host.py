"""``one_unit_per_host`` when a host is lost: the unit pinned to it is run again on another host, by the driver.

A unit of a ``one_unit_per_host`` sweep is pinned to its host (Ray's ``NodeAffinitySchedulingStrategy``,
``soft=False``), so Ray's own retry cannot move it: measured here, the retry fails 1.2 s after the node is gone
with ``TaskUnschedulableError`` although retries remain. :func:`workbench.sweeps._fleet.run_units` then pins it
to a free alive host itself. Real Ray: a head and a second node of ``ray.cluster_utils.Cluster`` on this
machine, the second with an address of its own (127.0.0.2) so that the two count as two hosts, one fake GPU
each; the second node is removed (its raylet killed) while its unit runs. The fleet tests that need two
network namespaces are tests/test_fleet.py (the lost host of a shared sweep, rerun by Ray itself).
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the fleet tests need Ray: pip install -e '.[test,fleet]' (make test does)")
from ray.cluster_utils import Cluster  # noqa: E402

from workbench.sweeps._fleet import run_units  # noqa: E402
from workbench.sweeps._fleet_connect import Fleet  # noqa: E402
from workbench.sweeps._fleet_units import FleetUnit, Placement  # noqa: E402

SECOND_IP = "127.0.0.2"
#: Ray declares a node dead after ``health_check_failure_threshold`` failed checks, one per ``health_check_period_ms``
#: (Ray's defaults take about 15-30 s; here 2 s, so the test waits seconds, not half a minute).
HEALTH = {"health_check_period_ms": 500, "health_check_failure_threshold": 4, "health_check_initial_delay_ms": 0}


def hold(payload: dict, placement: Placement) -> str:
    """The unit: note where and when it started, then run (long on the second host, which is lost meanwhile)."""
    (Path(payload["marks"]) / f"{payload['name']}@{placement.host}@{time.time():.3f}").write_text("")
    time.sleep(payload["seconds"] if placement.host == SECOND_IP else 1.0)
    return placement.host


# the workers cannot import this test module: Ray sends ``hold`` by value instead (cloudpickle's own switch)
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def starts(marks: Path, name: str) -> list[str]:
    """The hosts unit ``name`` started on, in time order."""
    seen = [p.name.split("@") for p in marks.iterdir() if p.name.startswith(f"{name}@")]
    return [host for _, host, _ in sorted(seen, key=lambda m: float(m[2]))]


@pytest.fixture
def cluster(request):
    """A head with ``request.param`` fake GPUs (default 1) and a second host with one; both 2 CPUs."""
    made, second = None, None
    for attempt in range(3):  # Ray 2.60 gives a raylet a hard-coded 30 s to register: a loaded machine misses it
        if ray.is_initialized():
            ray.shutdown()
        try:
            made = Cluster(
                initialize_head=True,
                head_node_args={"num_cpus": 2, "num_gpus": getattr(request, "param", 1), "_system_config": HEALTH},
            )
            second = made.add_node(num_cpus=2, num_gpus=1, node_ip_address=SECOND_IP)
            made.wait_for_nodes()
            break
        except Exception as exc:  # Ray raises a bare Exception for this
            if made is not None:
                made.shutdown()
            made = None
            if "timed out during startup" not in str(exc) or attempt == 2:
                raise
    assert made is not None and second is not None
    try:
        yield made, second
    finally:
        ray.shutdown()
        made.shutdown()


def lose_when_started(made: Cluster, second, marks: Path) -> threading.Thread:
    """A thread that removes the second node (its raylet killed) once a unit has started on it."""

    def lose() -> None:
        deadline = time.monotonic() + 120
        while not list(marks.glob(f"*@{SECOND_IP}@*")):
            if time.monotonic() > deadline:
                return  # the test's own assertions say that no unit started there
            time.sleep(0.1)
        made.remove_node(second, allow_graceful=False)

    thread = threading.Thread(target=lose, daemon=True)
    thread.start()
    return thread


def test_a_unit_pinned_to_a_lost_host_runs_again_on_a_free_host(cluster, tmp_path):
    made, second = cluster
    units = [
        FleetUnit(
            key=(i, 1), label=f"unit {i}", gpus=1, payload={"marks": str(tmp_path), "name": f"u{i}", "seconds": 60.0}
        )
        for i in range(2)
    ]
    seen: list = []
    killer = lose_when_started(made, second, tmp_path)
    result = run_units(
        units,
        hold,
        fleet=Fleet(address=made.address, one_unit_per_host=True, max_retries=2),
        on_done=seen.append,
        prestart=False,
    )
    killer.join(timeout=5)
    assert [o.ok for o in result] == [True, True], [o.error for o in result]
    assert seen == result
    moved = [o for o in result if o.moved_from]
    assert [o.moved_from for o in moved] == [(SECOND_IP,)], [(o.unit.label, o.moved_from) for o in result]
    head_ip = moved[0].placement.host
    assert head_ip != SECOND_IP and moved[0].result == head_ip
    # it started on the lost host, then again on the head once the head's own unit was done (one per host)
    assert starts(tmp_path, moved[0].unit.payload["name"]) == [SECOND_IP, head_ip]
    from workbench.sweeps._fleet_hosts import unit_entry

    assert unit_entry(moved[0], result)["moved_from"] == [SECOND_IP]
    assert unit_entry(next(o for o in result if not o.moved_from), result)["moved_from"] == []


@pytest.mark.parametrize("cluster", [0], indirect=True)
def test_a_unit_whose_host_is_lost_with_no_host_left_for_it_is_reported_not_dropped(cluster, tmp_path):
    """The head has no GPU, so when the second host is lost no host can take its unit: the unit ends as a lost
    one that names the host, instead of being left out of the outcomes."""
    made, second = cluster
    unit = FleetUnit(
        key=(0, 1), label="unit 0", gpus=1, payload={"marks": str(tmp_path), "name": "u0", "seconds": 60.0}
    )
    seen: list = []
    killer = lose_when_started(made, second, tmp_path)
    result = run_units(
        [unit],
        hold,
        fleet=Fleet(address=made.address, one_unit_per_host=True, max_retries=2),
        on_done=seen.append,
        prestart=False,
    )
    killer.join(timeout=5)
    assert len(result) == 1 and not result[0].ok and result[0].lost, result
    assert result[0].moved_from == (SECOND_IP,) and SECOND_IP in result[0].error, result[0].error
    assert seen == result and starts(tmp_path, "u0") == [SECOND_IP]
