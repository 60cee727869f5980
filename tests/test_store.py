"""Tests for workbench.store: run directories written level by level and read back."""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone

import pandas as pd
import pytest

from workbench.bench._frames import records_to_frame
from workbench.bench._plan import SweepPlan
from workbench.bench._prompts import Prompt
from workbench.bench._record import RequestRecord
from workbench.bench._sweep import LevelResult
from workbench.errors import ConfigError
from workbench.store import finish_run, list_runs, load_run, load_runs, new_run, save_level
from workbench.store._runs import STANDARD_KEYS

T0 = datetime(2026, 5, 29, 10, 15, 0, tzinfo=timezone.utc)
PLAN = SweepPlan.build(
    concurrency_levels=[1, 4],
    requests_per_level=4,
    max_new_tokens=8,
    seed=3,
    prompt_set=[Prompt(f"p{i}", "coding", f"prompt {i}") for i in range(5)],
)


def fixed_clock(start: datetime = T0):
    ticks = iter(start + timedelta(seconds=i) for i in range(1000))
    return lambda: next(ticks)


def level(index: int, concurrency: int, n: int, *, spec: bool = True) -> LevelResult:
    records = [
        RequestRecord(
            request_index=i,
            prompt_id=f"p{i}",
            output_tokens=8,
            prompt_tokens=20,
            ttft_ms=10.0 + i,
            e2e_ms=100.0,
            tpot_ms=90 / 7,
            itl_ms=[30.0, 60.0],
            tokens_per_chunk=[1, 3, 4],
            spec_verify_ct=4 if spec else None,
            accept_length=2.0 if spec else float("nan"),
            start_s=index + 0.01 * i,
            end_s=index + 0.01 * i + 0.1,
            time_scale=1.0,
        )
        for i in range(n)
    ]
    records.append(
        RequestRecord(request_index=n, error_type="TimeoutError", error="slow", start_s=index, end_s=index + 0.5)
    )
    requests = records_to_frame(
        records, dict(level_index=index, mode="closed", concurrency=concurrency, request_rate_req_s=float("inf"))
    )
    info = pd.DataFrame(
        [
            dict(
                level_index=index,
                flush_ok=True,
                flush_attempts=1,
                flush_error=None,
                server_accept_length=2.1 if spec else float("nan"),
                server_gen_throughput_tok_s=float("nan"),
                server_info_error=None,
            )
        ]
    )
    server_info = {"version": "0.5.9", "internal_states": [{"avg_spec_accept_length": 2.1}], "x": float("inf")}
    return LevelResult(requests=requests, info=info, server_info=server_info, plan=PLAN)


def test_round_trip(tmp_path):
    run = new_run(
        "eagle3 topk4/steps2",
        engine="sim",
        root=tmp_path,
        now=fixed_clock(),
        rng=random.Random(0),
        launch_command=["python", "-m", "sglang.launch_server", "--tp", "8"],
        host="gpu1",
        client_location="host",
    )
    assert run.run_id.startswith("20260529T101500Z-eagle3-topk4-steps2-") and len(run.run_id.split("-")[-1]) == 6
    manifest = json.loads((run.path / "manifest.json").read_text())
    assert manifest["status"] == "running" and manifest["simulated"] is True and manifest["engine"] == "sim"
    assert manifest["started_at"] == "2026-05-29T10:15:00.000Z"
    assert set(manifest["workbench"]) == {"version", "commit", "dirty"}

    run.save_level(level(0, 1, 3))
    # measured rows reach disk after each level
    first = load_run(run.path)
    assert len(first.requests) == 4 and len(first.levels) == 1 and first.manifest["levels_completed"] == 1

    save_level(run, level(1, 4, 5))
    path = finish_run(run)
    assert path == run.path
    stored = load_run(run.run_id, root=tmp_path)
    m = stored.manifest
    assert m["status"] == "complete" and m["finished_at"] == "2026-05-29T10:15:01.000Z"
    assert m["sglang_version"] == "0.5.9" and m["server_info"]["x"] == float("inf")
    assert m["launch_command"][-1] == "8" and m["host"] == "gpu1" and m["client_location"] == "host"
    # the first level's plan fills in the one new_run was not given, under one key, prompt ids for texts
    assert m["plan"] == PLAN.to_json(prompt_texts=False) == stored.plan and "parameters" not in m
    assert m["plan"]["prompt_ids"] == ["p0", "p1", "p2", "p3", "p4"] and "prompts" not in m["plan"]
    assert m["levels_completed"] == 2 and m["num_requests"] == 10 and m["time_scale"] == 1.0

    req = stored.requests
    assert len(req) == 10
    assert set(req["run_id"]) == {run.run_id} and set(req["variant"]) == {"eagle3 topk4/steps2"}
    assert req["simulated"].dtype == bool and req["simulated"].all() and set(req["engine"]) == {"sim"}
    assert req["itl_ms"].iloc[0] == [30.0, 60.0] and req["tokens_per_chunk"].iloc[0] == [1, 3, 4]
    assert req["itl_ms"].iloc[3] == []
    assert str(req["output_tokens"].dtype) == "Int64" and req["output_tokens"].isna().sum() == 2
    assert req["error"].notna().sum() == 2
    pd.testing.assert_frame_equal(
        req.drop(columns=["itl_ms", "tokens_per_chunk"]),
        run.requests.drop(columns=["itl_ms", "tokens_per_chunk"]),
        check_dtype=False,
    )

    lev = stored.levels
    assert list(lev["concurrency"]) == [1, 4] and list(lev["completed"]) == [3, 5]
    assert list(lev["failed"]) == [1, 1] and list(lev["accept_length"]) == [2.0, 2.0]
    assert list(lev["server_accept_length"]) == [2.1, 2.1]
    assert set(lev["engine"]) == {"sim"} and lev["simulated"].all()
    assert not list(tmp_path.glob("**/*.tmp"))


def test_context_manager_marks_failed_runs(tmp_path):
    with pytest.raises(RuntimeError):
        with new_run("baseline", engine="sglang", root=tmp_path) as run:
            run.save_level(level(0, 1, 2, spec=False))
            raise RuntimeError("server died")
    stored = load_run(run.path)
    assert stored.manifest["status"] == "failed" and stored.manifest["error"] == "RuntimeError: server died"
    assert stored.manifest["simulated"] is False and len(stored.requests) == 3
    with pytest.raises(ConfigError):
        run.save_level(level(1, 2, 2))


def test_list_and_load_runs(tmp_path):
    a = new_run("baseline", engine="sglang", root=tmp_path, now=fixed_clock(T0), rng=random.Random(1))
    a.save_level(level(0, 1, 2, spec=False))
    a.finish()
    b = new_run("eagle3", engine="sim", root=tmp_path, now=fixed_clock(T0 + timedelta(hours=1)), rng=random.Random(2))
    b.save_level(level(0, 1, 3))
    empty = new_run("never-measured", engine="sim", root=tmp_path, now=fixed_clock(T0 + timedelta(hours=2)))
    (tmp_path / "junk").mkdir()
    listing = list_runs(tmp_path)
    assert list(listing["run_id"]) == [a.run_id, b.run_id, empty.run_id]
    assert list(listing["status"]) == ["complete", "running", "running"]
    assert list(listing["num_requests"]) == [3, 4, 0]

    requests, levels = load_runs([a.run_id, b.path, empty.run_id], root=tmp_path)
    assert len(requests) == 7 and list(levels["variant"]) == ["baseline", "eagle3"]
    assert requests.groupby("run_id").size().to_dict() == {a.run_id: 3, b.run_id: 4}
    assert list(levels["simulated"]) == [False, True] and list(levels["engine"]) == ["sglang", "sim"]
    assert pd.isna(levels.loc[0, "accept_length"]) and levels.loc[1, "accept_length"] == 2.0


def test_errors(tmp_path):
    assert list_runs(tmp_path / "missing").empty
    with pytest.raises(ConfigError, match="No run"):
        load_run("nope", root=tmp_path)
    with pytest.raises(ConfigError):
        load_runs([], root=tmp_path)
    with pytest.raises(ConfigError):
        new_run("x", engine="vllm", root=tmp_path)  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        new_run("///", engine="sim", root=tmp_path)
    with pytest.raises(ConfigError):
        new_run("x", engine="sim", root=tmp_path, extra={"variant": "y"})


def test_root_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_RUNS_DIR", str(tmp_path))
    run = new_run("baseline", engine="sim")
    assert run.path.parent == tmp_path
    assert list(list_runs()["run_id"]) == [run.run_id]


def test_engine_reported_by_server_must_match_the_run(tmp_path):
    lvl = level(0, 1, 2)
    lvl.requests.insert(0, "engine", "sim")
    lvl.requests.insert(1, "simulated", True)
    real = new_run("baseline", engine="sglang", root=tmp_path)
    with pytest.raises(ConfigError, match="simulated"):
        real.save_level(lvl)
    sim = new_run("baseline", engine="sim", root=tmp_path)
    sim.save_level(lvl)
    assert load_run(sim.path).requests["simulated"].all()


def test_annotate_adds_keys_but_not_standard_ones(tmp_path):
    run = new_run("baseline", engine="sim", root=tmp_path, client_location="host:gpu1")
    assert set(json.loads((run.path / "manifest.json").read_text())) == STANDARD_KEYS
    run.annotate(client={"results_path": "/h/results.jsonl", "pid": 7})
    assert json.loads((run.path / "manifest.json").read_text())["client"]["pid"] == 7
    with pytest.raises(ConfigError, match="standard keys"):
        run.annotate(client_location="elsewhere")
    run.finish()
    with pytest.raises(ConfigError, match="cannot annotate"):
        run.annotate(note="late")


def test_the_plan_given_to_new_run_is_the_one_recorded(tmp_path):
    plan = SweepPlan.build(concurrency_levels=[2], requests_per_level=2, prompt_set="default", seed=1)
    run = new_run("baseline", engine="sim", root=tmp_path, plan=plan)
    assert json.loads((run.path / "manifest.json").read_text())["plan"]["prompt_set"] == "default"
    run.save_level(level(0, 1, 3))  # a level carrying another plan does not replace it
    assert load_run(run.path).plan == plan.to_json(prompt_texts=False)


OLD_NOTEBOOK_PARAMETERS = {  # benchmark_variant's block, with the sweep's own merged into it
    "concurrency_levels": [1, 8],
    "requests_per_level": "max(16, 2 * concurrency)",
    "max_new_tokens": 256,
    "prompt_set": "default",
    "seed": 0,
    "warmup_requests": 1,
    "unique_prompts": False,
    "sim_profile": "seed-pcie-8gpu",
    "base_url": "http://127.0.0.1:30001",
    "mode": "closed",
    "levels": [1, 8],
    "prompt_ids": ["c1", "a1"],
    "time_scale": 2.0,
    "flush": True,
    "unique_prefix": False,
    "timeout_s": 600.0,
    "max_concurrency": None,
    "extra_sampling_params": {},
}
OLD_SWEEP_PARAMETERS = {  # run_sweep(on_level=run.save_level) without benchmark_variant: an open-loop sweep
    "base_url": "http://h:1",
    "mode": "open",
    "levels": [2.5, float("inf")],
    "requests_per_level": [4, 4],
    "max_new_tokens": 8,
    "prompt_ids": ["p0"],
    "seed": 1,
    "time_scale": 1.0,
    "warmup_requests": 0,
    "flush": False,
    "unique_prefix": True,
    "timeout_s": None,
    "max_concurrency": 3,
    "extra_sampling_params": {"top_p": 0.5},
}


@pytest.mark.parametrize(
    "parameters, expected",
    [
        (
            OLD_NOTEBOOK_PARAMETERS,
            dict(
                concurrency_levels=[1, 8],
                request_rates=None,
                requests_per_level=[16, 16],
                prompt_set="default",
                prompt_ids=["c1", "a1"],
                time_scale=2.0,
                unique_prompts=False,
                max_new_tokens=256,
            ),
        ),
        (
            OLD_SWEEP_PARAMETERS,
            dict(
                concurrency_levels=[],
                request_rates=[2.5, float("inf")],
                requests_per_level=[4, 4],
                prompt_set=None,
                max_concurrency=3,
                unique_prompts=True,
                flush=False,
                extra_sampling_params={"top_p": 0.5},
            ),
        ),
        (
            {"concurrency_levels": [1, 2], "requests_per_level": 5},
            dict(concurrency_levels=[1, 2], requests_per_level=[5, 5], time_scale=1.0),
        ),
    ],
)
def test_manifests_written_before_the_plan_still_load(tmp_path, parameters, expected):
    run = new_run("baseline", engine="sim", root=tmp_path)
    run.save_level(level(0, 1, 3))
    manifest = json.loads((run.path / "manifest.json").read_text())
    del manifest["plan"]
    manifest["parameters"] = parameters
    (run.path / "manifest.json").write_text(json.dumps(manifest))
    stored = load_run(run.path)
    assert len(stored.requests) == 4 and len(stored.levels) == 1
    assert set(stored.plan) == set(PLAN.to_json(prompt_texts=False))  # the same keys as a new manifest's plan
    assert {k: stored.plan[k] for k in expected} == expected and stored.plan["prompts_sha256"] is None
