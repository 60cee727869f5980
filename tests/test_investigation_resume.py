"""Sweeps that survive faults, against real simulated servers: repeats, resume, kill -9, a full disk,
a server that dies while the sweep goes on with the next variant."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from server_killer import ServerKiller, kill_when_stored

from workbench.errors import ConfigError
from workbench.hosts import LocalHost
from workbench.hosts import _processes as processes
from workbench import benchmark_variant, benchmark_variants
from workbench.store import list_runs, load_run

FAST = dict(max_new_tokens=16, time_scale=20.0, progress=False, requests_per_level=3)


def _runs(root: Path) -> list[Path]:
    return sorted(m.parent for m in root.glob("*/manifest.json"))


def test_repeats_rows_and_resume_skip_finished_work(tmp_path: Path) -> None:
    path = benchmark_variant("baseline", concurrency_levels=[1, 2], repeats=2, runs_dir=tmp_path, **FAST)
    run = load_run(path)
    assert run.manifest["status"] == "complete" and run.plan["repeats"] == 2
    assert sorted(map(tuple, run.manifest["units_completed"])) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    # levels.parquet: one row per (level, repeat); request rows carry their repeat
    assert sorted(zip(run.levels["concurrency"], run.levels["repeat"])) == [(1, 0), (1, 1), (2, 0), (2, 1)]
    assert set(run.requests["repeat"]) == {0, 1} and len(run.requests) == 12
    # each repeat has its own prompt order
    first = run.requests[(run.requests["repeat"] == 0) & (run.requests["concurrency"] == 1)]["prompt_id"]
    second = run.requests[(run.requests["repeat"] == 1) & (run.requests["concurrency"] == 1)]["prompt_id"]
    assert list(first) != list(second)
    before = (path / "requests.parquet").stat().st_mtime_ns

    # the same sweep again: nothing left to measure, no server launched, nothing rewritten
    again = benchmark_variant("baseline", concurrency_levels=[1, 2], repeats=2, runs_dir=tmp_path, **FAST)
    assert again == path and (path / "requests.parquet").stat().st_mtime_ns == before
    # another label is another sweep; fresh starts anew and keeps the old run
    labelled = benchmark_variant("baseline", concurrency_levels=[1], repeats=1, label="b", runs_dir=tmp_path, **FAST)
    assert labelled != path and load_run(labelled).manifest["label"] == "b"
    new = benchmark_variant("baseline", concurrency_levels=[1, 2], repeats=2, fresh=True, runs_dir=tmp_path, **FAST)
    assert new != path and len(_runs(tmp_path)) == 3
    assert load_run(new).manifest["identity"] == run.manifest["identity"]


def test_bad_repeats_and_label_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="repeats must be a whole number >= 1"):
        benchmark_variant("baseline", repeats=0, runs_dir=tmp_path)
    with pytest.raises(ConfigError, match="label ' ' is not allowed: a name is 1 to 60 ASCII"):
        benchmark_variant("baseline", label=" ", runs_dir=tmp_path)
    assert not list(tmp_path.iterdir())


def test_variants_alternate_between_repeats(tmp_path: Path) -> None:
    paths = benchmark_variants(
        ["baseline", "eagle3-topk4"], concurrency_levels=[1], repeats=3, runs_dir=tmp_path, **FAST
    )
    runs = [load_run(p) for p in paths]
    starts = {}
    for run in runs:
        assert run.manifest["status"] == "complete"
        for r in range(3):
            starts[(run.manifest["variant"], r)] = run.requests.loc[run.requests["repeat"] == r, "start_epoch_s"].min()
    # the order of variants in each repeat: baseline first, then eagle3 first, then baseline first
    order = []
    for r in range(3):
        pair = sorted(["baseline", "eagle3-topk4"], key=lambda v: starts[(v, r)])
        order.append(pair[0])
    assert order == ["baseline", "eagle3-topk4", "baseline"]


def test_a_server_dying_is_reported_and_the_sweep_goes_on(tmp_path: Path) -> None:
    # eagle3's server dies at its first level (killed by a watcher); baseline still runs
    killer = ServerKiller(tmp_path, lambda m: m.get("variant") == "eagle3-topk4")
    failures = []
    with pytest.warns(UserWarning, match="eagle3-topk4: server failed"):
        paths = benchmark_variants(
            ["eagle3-topk4", "baseline"],
            concurrency_levels=[1, 2],
            repeats=1,
            runs_dir=tmp_path,
            on_failure=failures.append,
            **FAST,
        )
    killer.join()
    (failure,) = failures
    assert failure.variant == "eagle3-topk4" and failure.kind in {"unknown", "lease_expired", "killed"}
    assert "Server log tail" in failure.message or "log" in failure.message
    assert load_run(paths[0]).manifest["status"] == "failed"
    assert load_run(paths[1]).manifest["status"] == "complete"


KILLABLE = textwrap.dedent("""
    import sys
    from workbench import benchmark_variant
    benchmark_variant("baseline", concurrency_levels=[1, 2, 4], repeats=2, runs_dir=sys.argv[1],
                      max_new_tokens=16, time_scale=4.0, progress=False, requests_per_level=4)
""")


def test_kill_9_loses_at_most_the_level_in_flight_and_resume_stops_the_left_server(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLABLE, str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    killed = kill_when_stored(proc, tmp_path, 2)
    (run_dir,) = _runs(tmp_path)
    assert killed["status"] == "running" and (run_dir / "sweep.lock").is_file()
    stored = [tuple(u) for u in killed["units_completed"]]
    assert len(stored) >= 2
    left = killed["server_process"]
    # its watchdog sees the owner gone and stops the server at once, not at the end of the 10-minute lease
    deadline = time.monotonic() + 20
    while processes.group_members(LocalHost(), left["pgid"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not processes.group_members(LocalHost(), left["pgid"])
    assert list_runs(tmp_path)["status"].tolist() == ["interrupted"]

    path = benchmark_variant(
        "baseline",
        concurrency_levels=[1, 2, 4],
        repeats=2,
        runs_dir=tmp_path,
        max_new_tokens=16,
        time_scale=4.0,
        progress=False,
        requests_per_level=4,
    )
    assert path == run_dir
    run = load_run(path)
    assert run.manifest["status"] == "complete" and not (run_dir / "sweep.lock").exists()
    units = [tuple(u) for u in run.manifest["units_completed"]]
    assert units[: len(stored)] == stored and sorted(units) == sorted((r, i) for r in range(2) for i in range(3))
    # no unit twice, every request row belongs to a stored unit
    assert len(run.levels) == 6 and len(run.requests) == 24
    assert run.levels.groupby(["repeat", "level_index"]).size().max() == 1


def test_a_live_sweep_holds_its_run(tmp_path: Path) -> None:
    from workbench.store import open_run

    opened = open_run("baseline", identity="abc", root=tmp_path, engine="sim")
    with pytest.raises(ConfigError, match="Another sweep .* is writing"):
        open_run("baseline", identity="abc", root=tmp_path, engine="sim")
    opened.writer.finish()
    again = open_run("baseline", identity="abc", root=tmp_path, engine="sim")
    assert again.resumed and again.writer.path == opened.writer.path and again.stale_lock is None
    again.writer.finish()


FULL_DISK = textwrap.dedent("""
    import resource, signal, sys
    from pathlib import Path
    from workbench.bench import SweepPlan
    from workbench.errors import DiskFullError
    from workbench.store import load_run, new_run
    from workbench.bench import run_sweep
    from workbench.servers import ServerHandle
    from workbench.variants import load_variant

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
    plan = SweepPlan.build(concurrency_levels=[1, 2, 4], requests_per_level=6, max_new_tokens=16, time_scale=20.0)
    with ServerHandle.start(load_variant("baseline"), sim_options={"time-scale": 20.0}) as server:
        run = new_run("baseline", engine="sim", root=sys.argv[1], plan=plan)
        def on_level(level):
            run.save_level(level)
            if len(run.units_completed) == 1:  # the disk is full from now on: no file may grow
                size = (run.path / "requests.parquet").stat().st_size
                resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))
        try:
            with run:
                run_sweep(server.url, plan, progress=False, on_level=on_level)
        except DiskFullError as exc:
            resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            print("ERROR", exc)
            stored = load_run(run.path)
            print("STORED", len(stored.levels), len(stored.requests), stored.manifest["status"])
""")


def test_a_full_disk_is_a_clear_error_with_earlier_levels_intact(tmp_path: Path) -> None:
    # A real write failure: RLIMIT_FSIZE caps every file the process writes (no root needed), so
    # the second level's larger requests.parquet cannot be written.
    out = subprocess.run([sys.executable, "-c", FULL_DISK, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert "ERROR" in out.stdout, out.stdout + out.stderr
    error = out.stdout.split("ERROR", 1)[1]
    assert "requests.parquet" in error and "full" in error and "run the same sweep again" in error
    assert "STORED 1 6 failed" in out.stdout  # level 1 intact, its rows readable
