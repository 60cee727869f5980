"""The fleet's parts that need no cluster: the Fleet value, co-tenants and the per-host summary,
and a unit's writes recorded and replayed into a real local run (the Ray side: tests/test_fleet.py)."""

from __future__ import annotations

import pandas as pd
import pytest

import workbench as wb
from workbench.bench import SweepPlan
from workbench.errors import ConfigError
from workbench.store import load_run, new_run
from workbench.sweeps import Fleet, FleetUnit, Placement, UnitOutcome, host_summary
from workbench.sweeps._fleet_hosts import co_tenants, unit_entry
from workbench.sweeps._fleet_record import UnitRecorder, replay
from workbench.bench._record import RequestRecord
from workbench.bench._frames import records_to_frame
from workbench.bench._sweep import LevelResult


def _outcome(label: str, host: str, gpus: tuple[str, ...], start: float, end: float, error=None) -> UnitOutcome:
    where = Placement(node_id=f"n-{host}", host=host, hostname=host, gpus=gpus, pid=1, started_at=start)
    return UnitOutcome(
        FleetUnit(key=(0, 0), label=label, gpus=len(gpus), payload=None),
        where,
        None,
        end,
        error,
        submitted_at=start - 0.5,
    )


def test_fleet_of_an_address_and_its_refusals():
    assert Fleet.of(" 10.0.0.5:6379 ") == Fleet("10.0.0.5:6379")
    assert Fleet.of("auto").name == "fleet:auto"
    kept = Fleet("h:6379", one_unit_per_host=True)
    assert Fleet.of(kept) is kept
    with pytest.raises(ConfigError, match="Ray cluster address"):
        Fleet.of("")
    with pytest.raises(ConfigError, match="max_retries"):
        Fleet.of(Fleet("h:6379", max_retries=-1))


def test_co_tenants_are_the_units_overlapping_in_time_on_the_same_host():
    a = _outcome("a", "10.0.0.1", ("0",), 0, 10)
    b = _outcome("b", "10.0.0.1", ("1",), 5, 15)  # overlaps a
    c = _outcome("c", "10.0.0.1", ("0",), 10, 20)  # starts as a ends: not beside a, beside b
    d = _outcome("d", "10.0.0.2", ("0",), 0, 20)  # another host
    every = [a, b, c, d]
    assert co_tenants(a, every) == ["b"]
    assert co_tenants(b, every) == ["a", "c"]
    assert co_tenants(d, every) == []
    entry = unit_entry(b, every)
    assert (entry["host"], entry["gpus"], entry["duration_s"], entry["submitted_at"]) == ("10.0.0.1", "1", 10, 4.5)


def test_host_summary_counts_units_failures_gpus_and_busy_seconds():
    rows = host_summary(
        [
            _outcome("a", "10.0.0.1", ("0", "1"), 0, 10),
            _outcome("b", "10.0.0.1", ("2",), 0, 4),
            _outcome("c", "10.0.0.2", ("0",), 0, 3, error="WorkerCrashedError after its retries"),
            UnitOutcome(FleetUnit((1, 0), "d", 1, None), None, None, 9.0, "cancelled"),
        ]
    )
    assert rows == [
        {"host": "10.0.0.1", "units": 2, "failed": 0, "gpus_used": "0,1,2", "busy_s": 14.0},
        {"host": "10.0.0.2", "units": 0, "failed": 1, "gpus_used": "0", "busy_s": 3.0},
        {"host": None, "units": 0, "failed": 1, "gpus_used": "", "busy_s": 0.0},
    ]


def _level(plan: SweepPlan, repeat: int, index: int) -> LevelResult:
    records = [
        RequestRecord(
            request_index=i,
            prompt_id=f"p{i}",
            output_tokens=16,
            prompt_tokens=8,
            ttft_ms=10.0 + i,
            e2e_ms=100.0,
            tpot_ms=6.0,
            itl_ms=[6.0] * 15,
            tokens_per_chunk=[1] * 16,
            start_s=0.01 * i,
            end_s=0.01 * i + 0.1,
            time_scale=1.0,
        )
        for i in range(2)
    ]
    requests = records_to_frame(
        records,
        dict(
            level_index=index,
            mode="closed",
            concurrency=plan.concurrency_levels[index],
            request_rate_req_s=float("inf"),
        ),
    )
    info = pd.DataFrame(
        [
            dict(
                level_index=index,
                flush_ok=True,
                flush_attempts=1,
                flush_error=None,
                server_accept_length=float("nan"),
                server_gen_throughput_tok_s=float("nan"),
                server_info_error=None,
            )
        ]
    )
    return LevelResult(
        requests=requests, info=info, server_info={"version": "sim"}, plan=plan, index=index, repeat=repeat
    )


def test_a_recorded_unit_replays_into_the_local_run_with_its_rows_tagged(tmp_path):
    plan = SweepPlan.build(concurrency_levels=[1, 2], requests_per_level=2, max_new_tokens=16, repeats=2)
    writer = new_run("baseline", engine="sim", plan=plan, root=tmp_path)
    recorder = UnitRecorder(writer.path, [(1, 0), (1, 1)], tags={"fleet_host": "10.0.0.2", "fleet_gpus": "2,3"})
    assert recorder.pending_units(plan) == [(1, 0), (1, 1)]
    with recorder:
        recorder.record_server(
            launch_command=["python", "-m", "workbench.sim"],
            client_location="local",
            server_info={"version": "sim"},
            server_process={"pid": 7},
        )
        recorder.save_level(_level(plan, 1, 0))
        assert recorder.pending_units(plan) == [(1, 1)]
        recorder.save_level(_level(plan, 1, 1))
    assert recorder.status == "complete" and recorder.ready_at is not None
    assert [name for name, _, _ in recorder.calls] == ["record_server", "save_level", "save_level"]
    assert replay(recorder, writer) == 2
    writer.finish(status="incomplete")
    stored = load_run(writer.path)
    assert sorted(map(tuple, stored.manifest["units_completed"])) == [(1, 0), (1, 1)]
    assert stored.manifest["server_process"] == {"pid": 7}
    assert set(stored.requests["fleet_host"]) == {"10.0.0.2"} and set(stored.requests["fleet_gpus"]) == {"2,3"}


def test_a_unit_that_raises_finishes_its_recorder_failed():
    recorder = UnitRecorder(None, [(0, 0)], tags={})
    with pytest.raises(RuntimeError):
        with recorder:
            raise RuntimeError("boom")
    assert (recorder.status, recorder.error) == ("failed", "RuntimeError: boom")


@pytest.mark.parametrize(
    "kwargs, match",
    [({"host": "gpu-box"}, "a fleet replaces host"), ({"client": "host"}, "load generator runs beside the server")],
)
def test_benchmark_variants_refuses_what_a_fleet_replaces(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        wb.benchmark_variants(["baseline"], fleet="10.0.0.5:6379", **kwargs)


def test_a_unit_larger_than_every_node_is_refused_before_submission():
    from workbench.sweeps._fleet import _check_fits

    class _Ray:  # the two calls _check_fits makes of ray: what ray.nodes() answers on 2 x 4 GPUs
        @staticmethod
        def nodes():
            return [{"Alive": True, "Resources": {"GPU": 4.0}}, {"Alive": False, "Resources": {"GPU": 8.0}}]

    _check_fits(_Ray, [FleetUnit((0, 0), "baseline", 4, None)])
    with pytest.raises(ConfigError, match="baseline asks for 8 GPU.*largest node of the fleet has 4"):
        _check_fits(_Ray, [FleetUnit((0, 0), "baseline", 8, None)])


def test_the_warm_up_plan_puts_a_warm_worker_on_every_slot_a_unit_could_take():
    from workbench.sweeps._fleet_prestart import _warm_plan

    nodes = [
        {"Alive": True, "NodeID": "a", "Resources": {"GPU": 4.0, "CPU": 2.0}},
        {"Alive": True, "NodeID": "b", "Resources": {"GPU": 8.0, "CPU": 16.0}},
        {"Alive": False, "NodeID": "dead", "Resources": {"GPU": 8.0}},
    ]
    units = [FleetUnit((0, r), f"u{r}", 2, None) for r in range(8)]
    plan = _warm_plan(nodes, units, one_unit_per_host=False)
    assert (plan.count("a"), plan.count("b"), "dead" in plan) == (2, 4, False)  # 4/2 and 8/2 slots of 2 GPUs
    # never more per node than there are units (Ray may place all of them on one node)
    assert _warm_plan(nodes, units[:3], one_unit_per_host=False).count("b") == 3
    assert _warm_plan(nodes, units, one_unit_per_host=True) == ["a", "b"]
    cpu_only = [FleetUnit((0, r), f"c{r}", 0, None) for r in range(3)]  # the simulator without GPUs: CPU slots
    assert _warm_plan(nodes, cpu_only, one_unit_per_host=False) == ["a", "a", "b", "b", "b"]
    assert _warm_plan(nodes, [], one_unit_per_host=False) == []
    # a node too small for the smallest unit gets none (the unit is refused or waits for another node)
    assert _warm_plan(nodes, [FleetUnit((0, 0), "big", 8, None)], one_unit_per_host=True) == ["b"]


def test_the_report_says_where_each_fleet_unit_ran_and_which_failed():
    from workbench.studies._fleet_view import FLEET_COLUMNS, fleet_host_table, fleet_placement, fleet_placement_line

    entry = {
        "label": "baseline repeat 1/2",
        "repeat": 0,
        "host": "10.0.0.5",
        "hostname": "gpu-a",
        "gpus": "0,1",
        "co_tenants": ["eagle3-topk4 repeat 1/2"],
        "duration_s": 12.5,
        "error": None,
        "outcome": "done",
        "failure_kind": None,
        "failure": None,
    }
    lost = {
        **entry,
        "label": "baseline repeat 2/2",
        "repeat": 1,
        "host": None,
        "hostname": None,
        "gpus": None,
        "co_tenants": [],
        "duration_s": None,
        "error": "NodeDiedError after its retries: node lost",
        "outcome": "failed",
        "failure_kind": "killed",
        "failure": "NodeDiedError after its retries: node lost",
        "moved_from": ["10.0.0.7"],
    }
    # an entry written before outcomes were recorded: its error (Ray's) says it failed, kind unknown
    old = {
        k: v
        for k, v in {
            **entry,
            "host": "10.0.0.6",
            "hostname": "gpu-b",
            "gpus": "2,3",
            "co_tenants": [],
            "duration_s": 3.0,
            "error": "WorkerCrashedError after its retries",
        }.items()
        if k not in ("outcome", "failure_kind", "failure")
    }
    manifests = [
        {"variant": "baseline", "fleet_units": [entry, lost]},
        {"variant": "eagle3-topk4", "fleet_units": [old]},
        {"variant": "one-host"},
    ]
    table = fleet_placement(manifests)
    assert list(table.columns) == list(FLEET_COLUMNS)
    assert table.astype(object).where(table.notna(), None).to_dict("records") == [
        {
            "variant": "baseline",
            "repeat": 1,
            "host": "10.0.0.5",
            "hostname": "gpu-a",
            "gpus": "0,1",
            "co_tenants": "eagle3-topk4 repeat 1/2",
            "duration_s": 12.5,
            "moved_from": None,
            "outcome": "done",
            "failure_kind": None,
            "failure": None,
        },
        {
            "variant": "baseline",
            "repeat": 2,
            "host": None,
            "hostname": None,
            "gpus": None,
            "co_tenants": "none",
            "duration_s": None,
            "moved_from": "10.0.0.7",
            "outcome": "failed",
            "failure_kind": "killed",
            "failure": "NodeDiedError after its retries: node lost",
        },
        {
            "variant": "eagle3-topk4",
            "repeat": 1,
            "host": "10.0.0.6",
            "hostname": "gpu-b",
            "gpus": "2,3",
            "co_tenants": "none",
            "duration_s": 3.0,
            "moved_from": None,
            "outcome": "failed",
            "failure_kind": None,
            "failure": "WorkerCrashedError after its retries",
        },
    ]
    assert fleet_placement_line(manifests) == (
        "3 units ran on a fleet of 2 hosts (10.0.0.5: 1, 10.0.0.6: 1); "
        "2 failed (baseline repeat 2: killed, eagle3-topk4 repeat 1: failed)."
    )
    # the failed unit lost its host and no other took it: it did not move. One that ran elsewhere did:
    moved = {**entry, "moved_from": ["10.0.0.7", "10.0.0.8"]}
    assert fleet_placement_line([{"variant": "baseline", "fleet_units": [moved, {**moved, "repeat": 1}]}]) == (
        "2 units ran on a fleet of 1 host (10.0.0.5: 2); every unit finished. 2 units moved to another host after the "
        "one they were pinned to was lost (baseline repeat 1, lost on 10.0.0.7, 10.0.0.8; baseline repeat 2, lost on "
        "10.0.0.7, 10.0.0.8)."
    )
    hosts = fleet_host_table(manifests)
    assert hosts.astype(object).where(hosts.notna(), None).to_dict("records") == [
        {"host": "10.0.0.5", "units": 1, "failed": 0, "gpus_used": "0,1", "busy_s": 12.5},
        {"host": "10.0.0.6", "units": 0, "failed": 1, "gpus_used": "2,3", "busy_s": 3.0},
        {"host": None, "units": 0, "failed": 1, "gpus_used": "", "busy_s": 0.0},
    ]
    assert fleet_placement_line([{"variant": "baseline", "fleet_units": [entry]}]) == (
        "1 unit ran on a fleet of 1 host (10.0.0.5: 1); every unit finished."
    )
    assert fleet_placement([{"variant": "one-host"}]) is None and fleet_placement_line([]) == ""
    assert fleet_host_table([{"variant": "one-host"}]) is None


def test_the_fleet_section_places_every_value_literally_and_is_empty_for_one_host_runs():
    from workbench.studies._fleet_view import fleet_section

    hostile = "<img src=x onerror=alert(1)>"
    unit = {
        "label": f"{hostile} repeat 1/1",
        "repeat": 0,
        "host": "10.0.0.5",
        "hostname": "[x](javascript:1)",
        "gpus": "0|1",
        "co_tenants": ["*b*"],
        "duration_s": 2.5,
        "error": None,
        "outcome": "failed",
        "failure_kind": "oom",
        "failure": f"BenchmarkError: {hostile}",
    }
    text = fleet_section([{"variant": hostile, "fleet_units": [unit]}])
    assert text.startswith("### Where each unit ran\n")
    import re

    unescaped = re.compile(r"(?<!\\)(<img|\]\(javascript|\*b|\|1)")  # markup not preceded by a backslash
    assert unescaped.findall(text) == []
    assert "\\<img src=x onerror=alert(1)\\>" in text and "\\[x\\](javascript:1)" in text
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(rows) == 4  # the unit table's heading and row, the host table's heading and row
    assert "| 2.5 | - | failed (oom): BenchmarkError: \\<img" in rows[1]
    assert (
        rows[2].startswith("| host | units_done | units_failed |") and rows[3] == "| 10.0.0.5 | 0 | 1 | 0\\|1 | 2.5 |"
    )
    assert fleet_section([{"variant": "one-host"}]) == "" and fleet_section([]) == ""


def test_a_units_entry_records_its_outcome_and_the_failures_kind_in_one_line():
    from workbench.sweeps._fleet_hosts import unit_failure

    from workbench.sweeps._sweep_outcomes import SweepFailure

    recorded = UnitRecorder(None, [(0, 0)], tags={})  # what the task returns: its failure, the server's classified
    recorded.failure = SweepFailure(
        variant="baseline", run=None, kind="oom", message="ServerError: out of memory\ntail"
    )
    where = Placement(node_id="n", host="10.0.0.1", hostname="h", gpus=("0",), pid=1, started_at=0.0)
    failed_server = UnitOutcome(FleetUnit((0, 0), "a", 1, None), where, recorded, 5.0)
    lost = UnitOutcome(
        FleetUnit((0, 1), "b", 1, None), None, None, 6.0, "NodeDiedError after its retries: gone\nmore", lost=True
    )
    raised = UnitOutcome(FleetUnit((0, 2), "c", 1, None), None, None, 6.0, "the unit raised ValueError: x")
    cancelled = UnitOutcome(FleetUnit((0, 3), "d", 1, None), None, None, 6.0, "cancelled")
    done = _outcome("e", "10.0.0.1", ("1",), 0, 4)
    every = [failed_server, lost, raised, cancelled, done]
    assert [unit_failure(o) and unit_failure(o)[0] for o in every] == ["oom", "killed", "unknown", "cancelled", None]
    entries = [unit_entry(o, every) for o in every]
    assert [(e["outcome"], e["failure_kind"], e["failure"]) for e in entries[:2]] == [
        ("failed", "oom", "ServerError: out of memory"),
        ("failed", "killed", "NodeDiedError after its retries: gone"),
    ]
    assert (entries[4]["outcome"], entries[4]["failure_kind"], entries[4]["failure"]) == ("done", None, None)
    assert [(r["host"], r["units"], r["failed"]) for r in host_summary(every)] == [("10.0.0.1", 1, 1), (None, 0, 3)]
