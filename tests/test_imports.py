"""workbench.imports: other tools' result files (tests/fixtures/imports/, made as its README says)
into our tidy tables, the quarantine table and the run catalogue."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import workbench as wb
from workbench import charts
from workbench.cli import app
from workbench.errors import ConfigError
from workbench.imports import detect_format, import_results
from workbench.store import list_runs, load_quarantine, load_run, load_runs

FIX = Path(__file__).parent / "fixtures" / "imports"
BS = FIX / "bench_serving"


def _one(result, **where) -> pd.Series:
    rows = result.levels
    for k, v in where.items():
        rows = rows[rows[k] == v]
    assert len(rows) == 1, (where, len(rows))
    return rows.iloc[0]


def _nan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)


# -- bench_serving ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, version, median_ttft, output_tok_s, mean_itl",
    [
        ("bs046_baseline", "0.4.6.post5..0.5.3", 141.70288199966308, 139.62889232281927, 10.5355772580776),
        ("bs054_baseline", "0.5.3.post1..0.5.4.post1", 139.9728584992772, 138.8451537201142, 10.611047419359002),
        ("bs056_baseline", "0.5.6..0.5.7", 149.04213350018836, 138.2324558642409, 10.023317677428901),
    ],
)
def test_bench_serving_key_sets_of_each_generation(name, version, median_ttft, output_tok_s, mean_itl) -> None:
    result = import_results(BS / f"{name}.jsonl", store=False)
    row = _one(result)
    assert row["tool"] == "sglang.bench_serving" and row["tool_version"] == version
    assert row["source_file"] == str((BS / f"{name}.jsonl").resolve()) and row["source_record"] == "line 1"
    assert row["p50_ttft_ms"] == median_ttft and row["output_throughput_tok_s"] == output_tok_s
    assert row["concurrency"] == 2 and math.isinf(row["request_rate_req_s"]) and row["mode"] == "closed"
    # the native backend's ITL is per token: ours is itl_per_token_ms; per-chunk ITL was not measured
    assert row["mean_itl_per_token_ms"] == mean_itl and row["bench_serving_mean_itl_ms"] == mean_itl
    assert _nan(row["mean_itl_ms"])
    # keys this generation did not write are missing, never 0
    assert _nan(row["p90_ttft_ms"]) and _nan(row["p90_e2e_ms"]) and _nan(row["accept_length"])


def test_bench_serving_newest_key_set(tmp_path: Path) -> None:
    """0.5.14+ adds p90/p95 of TTFT, TPOT and ITL and a cache_report (sglang-0.5.16/sglang/benchmark/serving.py);
    its client needs torch, so the record is bs059's with those keys added as 0.5.16 writes them."""
    record = json.loads((BS / "bs059_eagle3.jsonl").read_text().splitlines()[0])
    record.update(
        p90_ttft_ms=150.5,
        p95_ttft_ms=160.5,
        p90_tpot_ms=12.5,
        p95_tpot_ms=13.5,
        p90_itl_ms=20.5,
        p95_itl_ms=30.5,
        cache_report={"total_prompt_tokens": 2048, "total_cached_tokens": 512, "cache_hit_rate_pct": 25.0},
    )
    path = tmp_path / "bs0516.jsonl"
    path.write_text(json.dumps(record) + "\n")
    row = _one(import_results(path, store=False))
    assert row["tool_version"] == "0.5.14..0.5.23"
    assert row["p90_ttft_ms"] == 150.5 and row["p90_tpot_ms"] == 12.5 and row["p90_itl_per_token_ms"] == 20.5
    assert row["bench_serving_p95_ttft_ms"] == 160.5 and row["bench_serving_cache_hit_rate"] == 0.25


def test_bench_serving_appended_runs_with_details() -> None:
    result = import_results(BS / "bs059_baseline_details.jsonl", store=False)
    levels = result.levels.sort_values("level_index")
    assert list(levels["concurrency"]) == [1, 2, 4] and list(levels["level_index"]) == [0, 1, 2]
    assert list(levels["repeat"]) == [0, 0, 0] and set(levels["variant"]) == {"baseline"}  # the --tag
    assert list(levels["output_throughput_tok_s"]) == [78.88820872766941, 131.1992266232083, 201.29860355456984]
    assert list(levels["p90_e2e_ms"]) == [423.1642428001578, 510.4025622005792, 647.3821311996289]
    assert levels["tool_version"].iloc[0] == "0.5.8..0.5.13.post1"
    assert list(levels["engine"]) == ["sim"] * 3 and levels["simulated"].all()  # from its /server_info
    req = result.requests
    assert len(req) == 24 and list(req.groupby("level_index").size()) == [8, 8, 8]
    first = req[(req["level_index"] == 0)].iloc[0]
    assert first["ttft_ms"] == 0.10400053700141143 * 1000  # seconds in the file, ms here
    assert len(first["itl_per_token_ms"]) == 31 and first["output_tokens"] == 32
    assert levels["num_requests"].tolist() == [8, 8, 8] and levels["failed"].tolist() == [0, 0, 0]


def test_bench_serving_accept_length_and_retokenized_oai_itl() -> None:
    result = import_results([BS / "bs059_eagle3.jsonl", BS / "bs059_eagle3_oai.jsonl"], store=False)
    native1 = _one(result, variant="eagle3", concurrency=1.0)
    assert native1["accept_length"] == 2.5441176470588234 == native1["server_accept_length"]
    assert _nan(_one(result, variant="eagle3", concurrency=4.0)["accept_length"])  # null in the file
    oai = _one(result, variant="eagle3-oai")
    assert oai["accept_length"] == 2.7037037037037037
    assert oai["mean_itl_per_token_ms"] == 12.163109318554499 and _nan(oai["mean_itl_ms"])
    assert oai["bench_serving_itl_definition"].startswith("per token")


def test_wall_clock_figures_of_a_faster_than_real_time_simulator_become_engine_time(tmp_path: Path) -> None:
    record = json.loads((BS / "bs059_eagle3.jsonl").read_text().splitlines()[0])
    record["server_info"]["simulation"]["time_scale"] = 4.0  # as a run at --sim-time-scale 4 records it
    record.update(ttfts=[0.1] * 8, itls=[[0.01, 0.02]] * 8, output_lens=[3] * 8, errors=[""] * 8)
    path = tmp_path / "scaled.jsonl"
    path.write_text(json.dumps(record) + "\n")
    result = import_results(path, store=False)
    row = _one(result)
    assert row["time_scale"] == 4.0
    assert row["mean_ttft_ms"] == record["mean_ttft_ms"] * 4 and row["p99_e2e_ms"] == record["p99_e2e_latency_ms"] * 4
    assert row["output_throughput_tok_s"] == record["output_throughput"] / 4
    assert row["bench_serving_p95_itl_ms"] == record["p95_itl_ms"] * 4 and row["concurrency"] == 1
    assert row["accept_length"] == record["accept_length"]  # not a time
    assert result.requests["ttft_ms"].iloc[0] == pytest.approx(400.0)
    assert result.requests["itl_per_token_ms"].iloc[0] == pytest.approx([40.0, 80.0])


def test_a_long_output_details_line_reads_quickly(tmp_path: Path) -> None:
    """--output-details lines run to hundreds of KB; bs059's line with its arrays repeated 50 times."""
    import time

    record = json.loads((BS / "bs059_baseline_details.jsonl").read_text().splitlines()[2])
    for key in ("input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors"):
        record[key] = record[key] * 50
    path = tmp_path / "long.jsonl"
    path.write_text(json.dumps(record) + "\n")
    assert path.stat().st_size > 300_000
    start = time.perf_counter()
    result = import_results(path, store=False)
    assert len(result.requests) == 400 and _one(result)["num_requests"] == 400
    assert time.perf_counter() - start < 10.0  # about 0.1 s here; slack for a loaded machine


# -- AIPerf ---------------------------------------------------------------------------------------


def test_aiperf_single_run_export() -> None:
    row = _one(import_results(FIX / "aiperf" / "single" / "profile_export_aiperf.json", store=False, engine="sim"))
    assert row["tool"] == "aiperf" and row["tool_version"] == "0.13.0" and row["simulated"]
    assert row["concurrency"] == 2 and row["mode"] == "closed" and row["completed"] == 8 and row["failed"] == 0
    assert row["output_throughput_tok_s"] == 141.35147608388127
    assert row["mean_ttft_ms"] == 122.61266275 and row["p99_ttft_ms"] == 169.08425653999998
    assert row["mean_tpot_ms"] == 10.307255693548388  # AIPerf's inter_token_latency is our TPOT
    assert row["mean_itl_ms"] == 10.307255693548386  # its inter_chunk_latency is our per-chunk ITL
    assert row["mean_per_request_tok_s"] == 72.39640413849928
    assert row["aiperf_output_token_throughput_per_user_mean_tok_s"] == 97.91951083487987
    assert row["duration_s"] == 1.806513408 and row["measured_at"] == "2026-12-01T12:57:10.246218"


def test_aiperf_request_rows_from_profile_export_jsonl() -> None:
    result = import_results(FIX / "aiperf" / "single" / "profile_export_aiperf.json", store=False, engine="sim")
    req = result.requests
    assert len(req) == 8 and set(req["concurrency"]) == {2} and req["error"].isna().all()
    first = req.iloc[0]
    assert first["e2e_ms"] == 436.32629 and first["ttft_ms"] == 127.650567 and first["output_tokens"] == 32
    assert first["tpot_ms"] == (436.32629 - 127.650567) / 31 and len(first["itl_ms"]) == 31
    # the export's averages are over the same requests
    assert req["e2e_ms"].mean() == pytest.approx(_one(result)["mean_e2e_ms"], rel=1e-12)
    assert req["ttft_ms"].mean() == pytest.approx(_one(result)["mean_ttft_ms"], rel=1e-12)


def test_aiperf_multi_run_aggregate() -> None:
    row = _one(import_results(FIX / "aiperf" / "multi", store=False, engine="sim"))
    assert row["source_file"].endswith("profile_export_aiperf_aggregate.json")
    assert row["concurrency"] == 4  # from the first run's folder
    assert row["output_throughput_tok_s"] == 217.47446134486472 and row["mean_ttft_ms"] == 211.75724754166666
    assert row["aiperf_output_throughput_ci_low_tok_s"] == 204.73256530567926
    assert row["aiperf_output_throughput_ci_high_tok_s"] == 230.21635738405018
    assert row["aiperf_num_successful_runs"] == 3


def test_runs_of_one_variant_passed_together_are_repeats_of_one_run(tmp_path: Path) -> None:
    files = sorted((FIX / "aiperf" / "multi" / "profile_runs").glob("run_*/profile_export_aiperf.json"))
    result = import_results(files, engine="sim", runs_dir=tmp_path)
    assert len(result.runs) == 1 and result.runs["levels"].iloc[0] == 3
    assert list(result.levels["repeat"]) == [0, 1, 2] and set(result.levels["level_index"]) == {0}
    manifest = load_run(result.runs["path"].iloc[0]).manifest
    assert manifest["source_files"] == [str(f.resolve()) for f in files] and manifest["units_completed"] == [
        [0, 0],
        [1, 0],
        [2, 0],
    ]
    means = wb.load_study(list(result.runs["path"]), baseline="multi").means()
    assert (
        means["n"].iloc[0] == 3
        and means["output_throughput_tok_s_lo"].iloc[0] < means["output_throughput_tok_s"].iloc[0]
    )  # an interval over the 3 AIPerf runs


# -- GuideLLM -------------------------------------------------------------------------------------


def test_guidellm_benchmarks_derive_our_columns_from_its_requests() -> None:
    path = FIX / "guidellm" / "benchmarks.json"
    result = import_results(path, store=False, engine="sim")
    assert detect_format(path) == "guidellm"
    raw = json.loads(path.read_text())["benchmarks"][1]["requests"]["successful"]
    row = _one(result, concurrency=4.0)
    assert row["tool_version"] == "0.8.1" and row["source_record"] == "benchmarks[1]" and row["completed"] == 8
    e2e = np.array([r["request_latency"] * 1000 for r in raw])
    ttft = np.array([r["time_to_first_token_ms"] for r in raw])
    out = np.array([r["output_tokens"] for r in raw], dtype=float)
    assert row["mean_ttft_ms"] == pytest.approx(ttft.mean(), rel=1e-12)
    assert row["p90_e2e_ms"] == pytest.approx(np.percentile(e2e, 90), rel=1e-12)
    assert row["mean_tpot_ms"] == pytest.approx(((e2e - ttft) / (out - 1)).mean(), rel=1e-12)
    span = max(r["request_end_time"] for r in raw) - min(r["request_start_time"] for r in raw)
    assert row["output_throughput_tok_s"] == pytest.approx(out.sum() / span, rel=1e-12)
    # GuideLLM's own TPOT includes TTFT: kept under its name, not ours
    assert row["guidellm_time_per_output_token_mean_ms"] == 17.377150245010853
    assert list(result.levels.sort_values("level_index")["concurrency"]) == [1, 4]
    assert len(result.requests) == 16
    assert sorted(set(result.requests["concurrency"])) == [1, 4]  # the level's, as our request rows have
    assert result.requests["e2e_ms"].iloc[0] == raw_first_e2e(path)


def raw_first_e2e(path: Path) -> float:
    return json.loads(path.read_text())["benchmarks"][0]["requests"]["successful"][0]["request_latency"] * 1000


# -- vLLM -----------------------------------------------------------------------------------------


def test_vllm_save_result_with_spec_decode_and_queue_keys() -> None:
    path = FIX / "vllm" / "eagle3-infqps-concurrency1.json"
    raw = json.loads(path.read_text())
    assert raw["request_rate"] == "inf"
    result = import_results(path, store=False, engine="sim")
    row = _one(result)
    assert row["tool"] == "vllm bench serve" and row["tool_version"] is None and row["variant"] == "eagle3"  # its label
    assert math.isinf(row["request_rate_req_s"]) and row["concurrency"] == 1
    assert row["accept_length"] == raw["spec_decode_acceptance_length"]
    assert row["spec_acceptance_rate"] == raw["spec_decode_acceptance_rate"] / 100  # percent in the file
    assert row["p50_ttft_ms"] == raw["median_ttft_ms"] and row["p90_ttft_ms"] == raw["p90_ttft_ms"]
    assert row["mean_itl_ms"] == raw["mean_itl_ms"] and _nan(row["mean_itl_per_token_ms"])  # per chunk
    assert row["vllm_mean_client_queue_time_ms"] == raw["mean_client_queue_time_ms"] == row["mean_client_wait_ms"]
    assert row["p90_client_wait_ms"] == raw["p90_client_queue_time_ms"]
    assert len(result.requests) == 8 and result.requests["ttft_ms"].iloc[0] == raw["ttfts"][0] * 1000
    speeds = np.array(raw["output_lens"]) / np.array(raw["latencies"])  # from --save-detailed's rows
    assert row["mean_per_request_tok_s"] == pytest.approx(speeds.mean(), rel=1e-12)
    assert row["p90_per_request_tok_s"] == pytest.approx(np.percentile(speeds, 90), rel=1e-12)
    # the standard deviations under vLLM's name (np.std over the requests; no column of ours has that definition)
    assert row["vllm_std_ttft_ms"] == raw["std_ttft_ms"] and row["vllm_std_itl_ms"] == raw["std_itl_ms"]
    assert row["vllm_std_client_queue_time_ms"] == raw["std_client_queue_time_ms"]
    assert row["vllm_std_ttft_ms"] == pytest.approx(np.std(np.array(raw["ttfts"]) * 1000), rel=1e-9)
    assert _nan(row["vllm_std_e2el_ms"]) == ("std_e2el_ms" not in raw)  # a figure not written stays missing
    # vLLM's per-position acceptance rates are kept as they were written (fractions, one per draft position)
    assert row["vllm_spec_decode_per_position_acceptance_rates"] == raw["spec_decode_per_position_acceptance_rates"]


def test_vllm_appended_file_and_sweep_folder() -> None:
    appended = import_results(FIX / "vllm" / "baseline-append.json", store=False)
    assert list(appended.levels["concurrency"]) == [1, 4]
    assert list(appended.levels["source_record"]) == ["object 1", "object 2"]
    assert appended.levels["failed"].isna().all()  # that key set had no "failed": missing, not 0
    sweep = import_results(FIX / "vllm" / "sweep" / "exp1", store=False)
    assert sorted(sweep.runs["variant"]) == ["baseline", "eagle3-topk4"]
    row = _one(sweep, variant="eagle3-topk4", concurrency=4.0)
    assert row["source_record"] == "SERVE--eagle3-topk4-BENCH--max_concurrency=4/run=0.json" and row["repeat"] == 0
    raw = json.loads((FIX / "vllm" / "sweep" / "exp1" / row["source_record"]).read_text())
    assert row["accept_length"] == raw["spec_decode_acceptance_length"] == 2.745308310991957
    assert row["p90_tpot_ms"] == raw["p90_tpot_ms"] and raw["run_number"] == 0


# -- checks, store, catalogue, study, CLI ---------------------------------------------------------


def _broken_copy(tmp_path: Path) -> Path:
    """bs046's record three times, two edited to break an invariant each (TTFT above E2E; ITL of 0)."""
    record = json.loads((BS / "bs046_baseline.jsonl").read_text())
    late = dict(record, max_concurrency=4, mean_ttft_ms=record["mean_e2e_latency_ms"] + 1.0)
    zero = dict(record, max_concurrency=8, mean_itl_ms=0.0, median_itl_ms=0.0)
    path = tmp_path / "edited.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (record, late, zero)))
    return path


def test_broken_rows_go_to_quarantine_with_the_reason(tmp_path: Path) -> None:
    result = import_results(_broken_copy(tmp_path), runs_dir=tmp_path / "runs")
    assert list(result.levels["concurrency"]) == [2]
    reasons = dict(zip(result.quarantine["concurrency"], result.quarantine["reason"]))
    assert reasons[4].startswith("TTFT above E2E") and reasons[8].startswith("ITL of 0 on a streamed run")
    run = load_run(result.runs["path"].iloc[0])
    assert list(run.levels["concurrency"]) == [2]  # what charts read
    assert sorted(load_quarantine(run.path)["concurrency"]) == [4, 8]
    assert run.manifest["quarantined"] == 2


def test_output_throughput_above_rate_and_lengths_is_quarantined() -> None:
    from workbench.imports import violations

    row = {
        "completed": 8,
        "total_output_tokens": 256,
        "request_throughput_req_s": 4.0,
        "output_throughput_tok_s": 200.0,
        "request_rate_req_s": 2.0,
    }
    reasons = violations(row, streamed=True)
    assert any("request throughput and lengths" in r for r in reasons)
    assert any("request rate and lengths" in r for r in reasons)
    assert violations({**row, "output_throughput_tok_s": 128.0, "request_rate_req_s": math.inf}, streamed=True) == []


def test_imported_runs_join_the_catalogue_and_a_study(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    first = import_results([BS / "bs059_baseline_details.jsonl", BS / "bs059_eagle3.jsonl"], runs_dir=runs)
    assert first.runs["created"].all()
    again = import_results(BS / "bs059_eagle3.jsonl", runs_dir=runs)
    assert not again.runs["created"].any() and again.runs["path"].iloc[0] in set(first.runs["path"])
    listing = list_runs(runs)
    assert sorted(listing["variant"]) == ["baseline", "eagle3"] and set(listing["status"]) == {"complete"}
    assert listing["started_at"].isna().all()  # bench_serving records no time
    manifest = load_run(first.runs["path"].iloc[1]).manifest
    assert manifest["kind"] == "import" and manifest["tool"] == "sglang.bench_serving"
    assert manifest["tool_version"] == "0.5.8..0.5.13.post1"
    assert manifest["source_file"] == str((BS / "bs059_eagle3.jsonl").resolve())
    assert manifest["sglang_version"] == "0.5.9"
    requests, levels = load_runs(list(first.runs["path"]))
    assert {"concurrency", "output_throughput_tok_s", "p99_ttft_ms", "mean_tpot_ms", "accept_length"} <= set(levels)
    assert len(requests) == 24  # --output-details rows of the baseline file
    study = wb.load_study(list(first.runs["path"]), baseline="baseline")
    means = study.means()
    assert set(means["variant"]) == {"baseline", "eagle3"} and means["simulated"].all()
    ratio = study.ratio_intervals("eagle3", "output_throughput_tok_s")
    assert list(ratio["concurrency"]) == [1, 4]
    assert ratio["ratio"].iloc[0] == pytest.approx(66.09843062822272 / 78.88820872766941)
    chart = charts.throughput_chart(means, subtitle=study.subtitle, variants=study.variants)
    assert chart.to_dict()["title"]["subtitle"][0].startswith("SIMULATED")
    # the whole report reads them too: bench_serving records no per-request E2E for the EAGLE-3 file, so
    # per-request speed is left out of that pair (and said so), never a failure or a made-up figure
    assert study.tables.compared("eagle3") == ("output_throughput_tok_s",)
    drawn = study.charts()
    assert "ratio_eagle3" in drawn and "throughput" in drawn and "latency_ttft" in drawn
    assert "per-request tok/s not recorded for both" in str(drawn["ratio_eagle3"].to_dict()["title"])
    verdict = study.verdict()
    assert "per request: not recorded for both (not compared)" in verdict
    assert "total output throughput: behind at 1–4 (0.65x–0.84x)" in verdict
    assert "per-request tok/s: not recorded for both eagle3 and baseline" in study.findings()


def test_cli_import_json_and_bad_input(tmp_path: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(app, ["import", str(_broken_copy(tmp_path)), "--json", "--dry-run"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert [r["concurrency"] for r in rows] == [2, 4, 8] and rows[0]["request_rate_req_s"] == "inf"
    assert rows[0]["quarantine_reason"] is None and rows[1]["quarantine_reason"].startswith("TTFT above E2E")
    assert rows[0]["p90_ttft_ms"] is None  # missing, not 0
    text = runner.invoke(
        app, ["import", str(FIX / "vllm" / "sweep" / "exp1"), "--runs-dir", str(tmp_path / "r"), "--engine", "sim"]
    )
    assert text.exit_code == 0 and "SIMULATED" in text.output and "stored as" in text.output
    assert "vllm bench serve version not recorded" in text.output
    unnamed = runner.invoke(app, ["import", str(FIX / "aiperf" / "single"), "--dry-run"])
    assert "engine not recorded (pass --engine)" in unnamed.output and "SIMULATED" not in unnamed.output
    bad = tmp_path / "notes.json"
    bad.write_text('{"hello": 1}')
    failed = runner.invoke(app, ["import", str(bad)])
    assert failed.exit_code == 2 and "not a result file of a known tool" in failed.output


def test_simulated_flag_cannot_contradict_the_recorded_server() -> None:
    with pytest.raises(ConfigError, match="contradicts"):
        import_results(BS / "bs056_baseline.jsonl", store=False, simulated=False)


# -- request-rate runs and several workloads: a real public file ---------------------------------
# sglang.bench_serving JSONL of datacrunch-research/h200-benchmarks (sglang/outputs/
# llama_3_3_70b_online_output.jsonl, commit c091ef530a52): open loop at 1-16 req/s with no
# concurrency cap (bench_serving's default mode), random 1024/1024 prompts and then ShareGPT at 4 and 8 req/s.
PUBLIC = BS / "public_h200_llama70b_online.jsonl"
RANDOM = "dataset=random in=1024 out=1024 backend=sglang"
SHAREGPT = "dataset=sharegpt backend=sglang"


def test_a_file_of_several_workloads_imports_as_several_levels_never_repeats(tmp_path: Path) -> None:
    result = import_results(PUBLIC, runs_dir=tmp_path / "runs", engine="sglang")
    levels = result.levels
    assert len(levels) == 7 and set(levels["mode"]) == {"open"} and levels["concurrency"].isna().all()
    assert list(levels["workload"]) == [RANDOM] * 5 + [SHAREGPT] * 2
    assert (levels["repeat"] == 0).all() and levels["level_index"].is_unique  # ShareGPT at 4 req/s is its own level
    shown = wb.show_run(result.runs["run_id"].iloc[0], runs_dir=tmp_path / "runs")
    assert list(shown.levels["n"]) == [1] * 7  # no interval over two workloads
    text = "\n".join(shown.lines())
    assert "workload" in text and f"{SHAREGPT}                  4 req/s" in text and "[-" not in text


def test_report_tables_of_a_request_rate_run(tmp_path: Path) -> None:
    """The crash (``Study.max_repeats``: cannot convert float NaN to integer) and the empty means of a
    run measured at request rates with no concurrency cap."""
    run = import_results(PUBLIC, runs_dir=tmp_path / "runs", engine="sglang").runs["path"].iloc[0]
    study = wb.load_study([run])
    assert study.load == "request_rate_req_s" and study.tables.max_repeats == 1
    assert study.workload == RANDOM and study.other_workloads == (SHAREGPT,)
    means = study.means()
    assert list(means["request_rate_req_s"]) == [1.0, 2.0, 4.0, 8.0, 16.0]
    assert means["output_throughput_tok_s"].iloc[2] == 2047.9108281108272 and (means["n"] == 1).all()
    verdict = study.verdict()
    assert "at request rate 1–16 req/s" in verdict and "300–3200 requests per level" in verdict
    assert f"workload {RANDOM} (of 2 in these runs)" in verdict
    chart = study.charts()["throughput"].to_dict()
    x = chart["layer"][0]["encoding"]["x"] if "layer" in chart else chart["encoding"]["x"]
    assert x["field"] == "request_rate_req_s" and x["scale"]["type"] == "log"
    assert f"workload: {RANDOM}" in chart["title"]["subtitle"][1]
    assert "Infinity" not in json.dumps(chart) and "NaN" not in json.dumps(chart)
    other = wb.load_study([run], workload=SHAREGPT)
    assert list(other.means()["output_throughput_tok_s"]) == [746.0750970739618, 1471.0864833760852]
    with pytest.raises(ConfigError, match="workload 'nope' is not in these runs"):
        wb.load_study([run], workload="nope")


def test_a_study_of_closed_and_open_loop_runs_sets_the_other_kind_aside(tmp_path: Path) -> None:
    """A report never drops a run it was given (issue 34 item 3): runs on the other kind of load than the
    baseline are set aside by name and reason, not refused; the axis itself still refuses a mixed table."""
    result = import_results([PUBLIC, BS / "bs059_baseline_details.jsonl"], runs_dir=tmp_path / "runs")
    study = wb.load_study(list(result.runs["path"]), baseline="baseline")
    assert set(study.levels["variant"]) == {"baseline"}
    (aside,) = study.set_aside
    assert aside.variant != "baseline" and "share no axis" in aside.reason
    assert ("open-loop" in aside.reason) and ("closed-loop" in aside.reason)
    assert aside.line.startswith(f"set aside: run {aside.run_id} (variant {aside.variant}): it was measured")
    from workbench.analysis import load_axis

    with pytest.raises(ConfigError, match="mix closed-loop runs .* and open-loop runs .*Study them apart"):
        load_axis(result.levels)


def test_vllm_request_rate_files_make_a_study_on_the_rate_with_per_position_rates(tmp_path: Path) -> None:
    """vllm bench serve --request-rate 2 and 8 with no --max-concurrency (written by make_vllm.py --rates
    from the workbench's own open-loop runs on the simulated engine: an EAGLE-3 chain of 3 and its baseline)."""
    files = [FIX / "vllm" / "rates-baseline.json", FIX / "vllm" / "rates-eagle3-chain3.json"]
    raw = [json.loads(line) for line in files[1].read_text().splitlines()]
    result = import_results(files, runs_dir=tmp_path / "runs", engine="sim")
    assert set(result.levels["mode"]) == {"open"} and result.levels["concurrency"].isna().all()
    study = wb.load_study(list(result.runs["path"]), baseline="baseline")
    assert study.load == "request_rate_req_s"
    ratios = study.ratios("eagle3-chain3")
    assert list(ratios["request_rate_req_s"]) == [2.0, 8.0]
    assert ratios["output_throughput_tok_s_ratio"].iloc[0] == pytest.approx(
        raw[0]["output_throughput"] / json.loads(files[0].read_text().splitlines()[0])["output_throughput"]
    )
    rates = study.tables.position_rates()
    assert set(rates["source"]) == {"vllm"} and list(rates["position"]) == [1, 2, 3, 1, 2, 3]
    assert rates["rate"].iloc[:3].tolist() == pytest.approx(raw[0]["spec_decode_per_position_acceptance_rates"])
    assert "at request rate 2 req/s: acceptance rate by draft position 1: " in study.acceptance_text()
    assert "from vLLM's file" in study.acceptance_text() and "accept_positions" in study.charts()
