"""What the server saw (issue 9, item 3): batch log lines across SGLang versions, nvidia-smi CSV,
the simulated server's /metrics, and the per-level series a sweep stores; plus the load item's
backends, prompt sources and sweep dimensions against the same simulated server."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from workbench.bench._batchlog import parse_batch_line, parse_batch_log
from workbench.bench._gpu import parse_query_csv, query_gpus
from workbench.bench._observe import metric_points, parse_prometheus, rank_label
from workbench.bench._plan import SweepPlan
from workbench.bench._prompts import load_sharegpt, random_token_prompts
from workbench.bench._series import add_log_series
from workbench.bench._sweep import run_sweep
from workbench.errors import ConfigError
from workbench.servers import ServerHandle
from workbench.store import load_run, new_run
from workbench.variants import load_variant

FIXTURES = Path(__file__).parent / "fixtures" / "nvidia_smi"


def values(points) -> dict[str, float]:
    return {p["name"]: p["value"] for p in points}


# -- batch log lines (formats of the release wheels' scheduler logging) ------------------------


def test_decode_line_of_046():
    line = (
        "[2025-05-01 10:00:00 TP0] Decode batch. #running-req: 8, #token: 9512, token usage: 0.02, "
        "accept len: 2.31, cuda graph: True, gen throughput (token/s): 812.40, #queue-req: 0"
    )
    points = parse_batch_line(line)
    assert values(points) == {
        "num_running_reqs": 8,
        "num_used_tokens": 9512,
        "token_usage": 0.02,
        "spec_accept_length": 2.31,
        "gen_throughput": 812.40,
        "num_queue_reqs": 0,
    }
    assert {p["rank"] for p in points} == {"TP0"} and {p["batch"] for p in points} == {"decode"}
    assert points[0]["t_epoch_s"] == time.mktime(time.strptime("2025-05-01 10:00:00", "%Y-%m-%d %H:%M:%S"))


def test_decode_and_prefill_lines_of_059_with_dp_ranks_and_forward_count():
    decode = (
        "[2026-01-10 09:12:03.250 DP1 TP3] Decode batch [1234], #running-req: 64, #token: 70210, "
        "token usage: 0.12, accept len: 2.10, accept rate: 0.36, cuda graph: True, "
        "gen throughput (token/s): 2104.55, #queue-req: 3"
    )
    prefill = (
        "[2026-01-10 09:12:02 DP1 TP3] Prefill batch, #new-seq: 4, #new-token: 8192, #cached-token: 12, "
        "token usage: 0.11, #running-req: 60, #queue-req: 3, input throughput (token/s): 0.00, cuda graph: False"
    )
    d, p = parse_batch_line(decode), parse_batch_line(prefill)
    assert values(d)["spec_accept_rate"] == 0.36 and values(d)["num_running_reqs"] == 64
    assert d[0]["rank"] == "DP1 TP3" and d[0]["t_epoch_s"] % 1 == pytest.approx(0.25)
    assert values(p) == {
        "new_seqs": 4,
        "new_tokens": 8192,
        "cached_tokens": 12,
        "token_usage": 0.11,
        "num_running_reqs": 60,
        "num_queue_reqs": 3,
        "input_throughput": 0.0,
    }
    assert p[0]["batch"] == "prefill"


def test_lines_of_0523_hybrid_pools_and_noise():
    line = (
        "(SchedulerActor pid=77) [2026-06-01 00:00:01 PP1 TP0 EP0] Decode batch, #running-req: 3, "
        "#full token: 100, full token usage: 0.50, #swa token: 10, swa token usage: 0.10, accept len: 3.00, "
        "accept rate: 0.50, cap len: 4.00, cuda graph: True, gen throughput (token/s): 10.00, #queue-req: 0, "
        "est. decode TFLOPS/s (per GPU): 1.00"
    )
    got = parse_batch_line(line)
    assert values(got) == {
        "num_running_reqs": 3,
        "num_used_tokens": 100,
        "token_usage": 0.5,
        "spec_accept_length": 3.0,
        "spec_accept_rate": 0.5,
        "gen_throughput": 10.0,
        "num_queue_reqs": 0,
    }
    assert got[0]["rank"] == "PP1 TP0"  # EP0 (and PP0) are left out, as rank_label does
    assert rank_label({"tp_rank": "0", "pp_rank": "0", "moe_ep_rank": "0", "dp_rank": "2"}) == "DP2 TP0"
    assert parse_batch_line("[2026-06-01 00:00:01] Cache flushed successfully!") == []


def test_log_window_keeps_the_levels_seconds():
    lines = [
        f"[2026-01-10 09:12:0{s}] Decode batch, #running-req: {s}, #token: 1, token usage: 0.00, "
        f"cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 0"
        for s in range(6)
    ]
    t2 = time.mktime(time.strptime("2026-01-10 09:12:02", "%Y-%m-%d %H:%M:%S"))
    got = parse_batch_log("\n".join(lines), start_epoch_s=t2 + 0.5, end_epoch_s=t2 + 2.2)
    assert sorted({p["value"] for p in got if p["name"] == "num_running_reqs"}) == [2, 3, 4]


# -- nvidia-smi ------------------------------------------------------------------------------


def test_nvidia_smi_csv_recorded_on_an_h200():
    stamp = time.mktime(time.strptime("2026/12/01 13:01:21", "%Y/%m/%d %H:%M:%S"))
    for name, t in (("query_gpu_h200.csv", 0.329), ("query_gpu_h200_nounits.csv", 0.359)):
        points = parse_query_csv((FIXTURES / name).read_text())
        assert values(points) == {
            "gpu_util_pct": 0.0,
            "memory_used_mib": 0.0,
            "memory_total_mib": 143771.0,
            "power_w": pytest.approx(78.1, abs=0.03),
            "sm_clock_mhz": 345.0,
        }
        assert {p["rank"] for p in points} == {"gpu0"} and points[0]["t_epoch_s"] == pytest.approx(stamp + t)


def test_nvidia_smi_csv_without_index_and_with_na_cells():
    points = parse_query_csv((FIXTURES / "query_gpu_2x_bpytop26.csv").read_text(), now=5.0)
    gpu1 = {p["name"]: p["value"] for p in points if p["rank"] == "gpu1"}
    assert gpu1 == {
        "gpu_util_pct": 0.0,
        "memory_used_mib": 4.0,
        "memory_total_mib": 6078.0,
        "power_w": 5.68,
        "graphics_clock_mhz": 139.0,
        "memory_clock_mhz": 405.0,
        "temperature_c": 49.0,
        "fan_pct": 29.0,
    }
    na = parse_query_csv("index, power.draw [W], utilization.gpu [%]\n0, [N/A], 7 %\n", now=1.0)
    assert values(na) == {"gpu_util_pct": 7.0}
    with pytest.raises(ValueError, match="no CSV header"):
        parse_query_csv("# nothing\n")


def test_no_nvidia_smi_is_a_clean_skip():
    import asyncio

    points, problem = asyncio.run(query_gpus("/nonexistent/nvidia-smi"))
    assert points == [] and "FileNotFoundError" in problem


# -- prompts ---------------------------------------------------------------------------------


def test_sharegpt_json_and_jsonl(tmp_path):
    convs = [
        {"id": "a", "conversations": [{"from": "human", "value": "Hello?"}, {"from": "gpt", "value": "Hi"}]},
        {"id": "b", "conversations": [{"from": "gpt", "value": "only a reply"}]},
        {"conversations": [{"role": "user", "content": "Second"}]},
    ]
    (tmp_path / "s.json").write_text(json.dumps(convs))
    (tmp_path / "s.jsonl").write_text("\n".join(json.dumps(c) for c in convs) + "\n")
    for name in ("s.json", "s.jsonl"):
        got = load_sharegpt(tmp_path / name)
        assert [(p.id, p.text, p.category) for p in got] == [
            ("a", "Hello?", "sharegpt"),
            ("sharegpt-1", "Second", "sharegpt"),
        ]
    assert len(load_sharegpt(tmp_path / "s.json", limit=1)) == 1
    plan = SweepPlan.build(concurrency_levels=[1], prompt_set=f"sharegpt:{tmp_path / 's.jsonl'}")
    assert [p.id for p in plan.prompts] == ["a", "sharegpt-1"] and plan.prompt_set.startswith("sharegpt:")
    (tmp_path / "bad.jsonl").write_text('{"conversations": [}\n')
    with pytest.raises(ConfigError, match="bad.jsonl:1: not valid JSON"):
        load_sharegpt(tmp_path / "bad.jsonl")


def test_random_token_prompts_are_seeded_and_exact_length():
    a, b = random_token_prompts(3, 17, seed=5), random_token_prompts(3, 17, seed=5)
    assert a == b and all(len(p.input_ids) == 17 for p in a) and a != random_token_prompts(3, 17, seed=6)
    assert all(1000 <= i < 32000 for p in a for i in p.input_ids)


# -- the plan's sweep dimension -----------------------------------------------------------------


def test_sweep_dimension_is_a_grid_stored_in_rows():
    plan = SweepPlan.build(
        concurrency_levels=[1, 4], requests_per_level=4, sweep="output_len", sweep_values=[8, 32], prompt_set=["x"]
    )
    assert plan.num_levels == 4 and plan.units()[-1] == (0, 3)
    assert [plan.level_concurrency(i) for i in range(4)] == [1, 4, 1, 4]
    assert [plan.level_settings(i)["max_new_tokens"] for i in range(4)] == [8, 8, 32, 32]
    assert plan.level_label(3) == "output_len=32, concurrency=4"
    assert SweepPlan.from_json(plan.to_json()) == plan
    plain = SweepPlan.build(concurrency_levels=[1], prompt_set=["x"])
    assert "backend" not in plain.to_json() and "sweep" not in plain.to_json()  # older identities unchanged
    with pytest.raises(ConfigError, match="backend 'chat' sends messages"):
        SweepPlan.build(concurrency_levels=[1], backend="chat", input_len=8)
    with pytest.raises(ConfigError, match="sweep must be one of"):
        SweepPlan.build(concurrency_levels=[1], sweep="batch", sweep_values=[1], prompt_set=["x"])
    with pytest.raises(ConfigError, match="needs sweep_values"):
        SweepPlan.build(concurrency_levels=[1], sweep="temperature", prompt_set=["x"])


# -- against the simulated server ----------------------------------------------------------------


@pytest.fixture(scope="module")
def sim():
    with ServerHandle.start(
        load_variant("eagle3-topk4"), host="local", engine="sim", sim_options={"time-scale": 20, "seed": 1}
    ) as handle:
        yield handle


def test_sim_serves_sglang_metric_names(sim):
    import urllib.request

    text = urllib.request.urlopen(sim.url + "/metrics", timeout=30).read().decode()
    names = {name for name, _, _ in parse_prometheus(text)}
    for name in (
        "num_running_reqs",
        "num_queue_reqs",
        "token_usage",
        "gen_throughput",
        "spec_accept_length",
        "spec_accept_rate",
        "prompt_tokens_total",
        "generation_tokens_total",
        "num_requests_total",
        "time_to_first_token_seconds_sum",
        "e2e_request_latency_seconds_count",
    ):
        assert f"sglang:{name}" in names
    points = metric_points(parse_prometheus(text), 1.0)
    assert {p["rank"] for p in points if p["name"] == "num_running_reqs"} == {"TP0"}
    assert not any(p["name"].endswith("_bucket") for p in points)


@pytest.mark.parametrize("backend", ["completions", "chat"])
def test_openai_backends_through_a_sweep(sim, backend):
    plan = SweepPlan.build(
        concurrency_levels=[2],
        requests_per_level=3,
        max_new_tokens=12,
        prompt_set="default",
        time_scale="auto",
        backend=backend,
        warmup_requests=0,
    )
    result = run_sweep(sim.url, plan, progress=False, observe=False)
    req = result.requests
    assert req["error"].isna().all() and (req["output_tokens"] == 12).all() and (req["backend"] == backend).all()
    assert all(sum(t) == 12 for t in req["tokens_per_chunk"])  # continuous usage gives tokens per chunk


def test_sweep_over_input_len_with_random_ids_stores_series(sim, tmp_path):
    plan = SweepPlan.build(
        concurrency_levels=[2],
        requests_per_level=4,
        max_new_tokens=40,
        time_scale="auto",
        sweep="input_len",
        sweep_values=[16, 256],
        warmup_requests=0,
    )
    measured = []
    result = run_sweep(sim.url, plan, progress=False, on_level=measured.append)
    req, levels = result.requests, result.levels
    assert req["error"].isna().all() and list(req.groupby("level_index")["prompt_tokens"].max()) == [16, 256]
    assert list(levels["sweep_value"]) == [16.0, 256.0] and list(levels["input_len"]) == [16, 256]
    assert (levels["sweep"] == "input_len").all() and (levels["mean_client_wait_ms"] >= 0).all()
    assert levels["observe_problems"].isna().all()  # /metrics served, nothing to report
    log_text = sim.logs_tail(5000)
    run = new_run("eagle3-topk4", engine="sim", root=tmp_path)
    for level in measured:
        assert set(level.series["source"]) == {"metrics"}
        run.save_level(add_log_series(level, log_text))
    run.finish()
    stored = load_run(run.path)
    assert set(stored.series["source"]) == {"metrics", "log"} and set(stored.series["level_index"]) == {0, 1}
    logged = stored.series[stored.series["source"] == "log"]
    assert {"num_running_reqs", "gen_throughput", "spec_accept_length", "token_usage"} <= set(logged["name"])
    counters = stored.series[stored.series["name"] == "generation_tokens_total"]
    assert counters.groupby("level_index")["value"].max().diff().iloc[-1] >= 4 * 40  # level 1 added its tokens
    # the report's section reads it back: a per-level table and a small chart
    from workbench.studies._server_view import server_series, server_series_table
    from workbench.charts import server_series_chart

    series, run_levels = server_series([run.path])
    table = server_series_table(series)
    assert list(table["variant"]) == ["eagle3-topk4"] * 2 and list(table["concurrency"]) == [2, 2]
    assert list(table["level"]) == ["c=2, input_len=16", "c=2, input_len=256"]
    assert (table["n_samples"] >= 2).all() and table["mean_running_reqs"].between(0, 2).all()
    assert set(table["sources"]) <= {"metrics", "log", "log, metrics"}  # per series, the source sampling it most
    server_series_chart(series, subtitle="test").to_dict()


def test_server_series_summary_gives_each_series_its_interval_over_repeats() -> None:
    import pandas as pd

    from workbench.studies._server_view import server_series_summary

    rows = [
        {
            "variant": v,
            "level_index": 0,
            "level": "c=4",
            "concurrency": 4,
            "repeat": r,
            "mean_running_reqs": 3.0 + d,
            "mean_server_gen_tok_s": 100.0 + 10 * d,
            "n_samples": 20,
            "sources": "log",
        }
        for v in ("eagle3", "baseline")
        for r, d in enumerate((-1.0, 0.0, 1.0))
    ]
    rows.append({**rows[0], "variant": "solo", "repeat": 0})
    out = server_series_summary(pd.DataFrame(rows), order=["baseline", "eagle3"]).set_index("variant")
    assert list(out.index) == ["baseline", "eagle3", "solo"]
    # 2, 3, 4: mean 3, s = 1, half width 4.302653 / sqrt(3) = 2.48 -> units
    assert out.loc["baseline", "mean_running_reqs"] == "3 (1–5)" and out.loc["baseline", "n"] == 3
    assert out.loc["baseline", "mean_server_gen_tok_s"] == "100 (80–120)"  # 90, 100, 110: half width 24.8
    assert out.loc["baseline", "n_samples"] == 60
    assert out.loc["solo", "mean_running_reqs"] == "2" and out.loc["solo", "n"] == 1  # n=1: the mean alone
