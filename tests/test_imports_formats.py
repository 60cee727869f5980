"""workbench.imports: AIPerf's CSV export, InferenceX aggregated results, a rate sweep saved one file per
rate, and offline multi-workload bench_serving files (fixtures written by hand in each tool's format:
tests/fixtures/imports/README.md). Every imported figure is checked against the file it came from."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import workbench as wb
from workbench.cli import app
from workbench.errors import ConfigError
from workbench.imports import detect_format, import_results, offline_workloads
from workbench.store import load_runs

FIX = Path(__file__).parent / "fixtures" / "imports"
CSV_RUN = FIX / "aiperf_csv" / "meta-llama_Llama-3.3-70B-Instruct-openai-chat-concurrency4"
CSV_FILE = CSV_RUN / "profile_export_aiperf.csv"
INFX = FIX / "inferencex"
OFFLINE = [FIX / "bench_serving" / "offline_baseline.jsonl", FIX / "bench_serving" / "offline_eagle3.jsonl"]


def _nan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _csv_figures(path: Path) -> dict[str, dict[str, float]]:
    """The CSV's rows as {metric name: {stat: value}}, read independently of the importer."""
    out: dict[str, dict[str, float]] = {}
    header: list[str] | None = None
    for row in csv.reader(path.read_text().splitlines()):
        if not row or not row[0]:
            header = None
        elif row[0] == "Metric":
            header = row[1:]
        elif header is not None and len(row) == len(header) + 1:
            out[row[0]] = {h: float(v) for h, v in zip(header, row[1:])}
    return out


# -- AIPerf CSV --------------------------------------------------------------------------------


def test_aiperf_csv_export_imports_every_figure_from_the_file() -> None:
    raw = _csv_figures(CSV_FILE)
    assert detect_format(CSV_FILE) == "aiperf_csv"
    result = import_results(CSV_FILE, store=False, engine="sglang")
    assert len(result.levels) == 1 and len(result.quarantine) == 0
    row = result.levels.iloc[0]
    assert row["tool"] == "aiperf" and row["variant"] == CSV_RUN.name and row["tool_version"] is None
    # the load: AIPerf's artifact folder name (<model>-openai-chat-concurrency4); the CSV has none
    assert row["concurrency"] == 4 and row["mode"] == "closed" and "artifact folder name" in row["aiperf_load_source"]
    for name, ours in (
        ("Time to First Token (ms)", "ttft_ms"),
        ("Request Latency (ms)", "e2e_ms"),
        ("Inter Token Latency (ms)", "tpot_ms"),
    ):
        stats = raw[name]
        assert [row[f"{s}_{ours}"] for s in ("mean", "p50", "p90", "p99")] == [
            stats["avg"],
            stats["p50"],
            stats["p90"],
            stats["p99"],
        ], name
    per_user = raw["Output Token Throughput Per User (tokens/sec/user)"]
    assert row["aiperf_output_token_throughput_per_user_p90_tok_s"] == per_user["p90"]
    assert row["aiperf_mean_time_to_second_token_ms"] == raw["Time to Second Token (ms)"]["avg"]
    assert row["output_throughput_tok_s"] == raw["Output Token Throughput (tokens/sec)"]["Value"]
    assert row["request_throughput_req_s"] == raw["Request Throughput (requests/sec)"]["Value"]
    assert row["duration_s"] == raw["Benchmark Duration (sec)"]["Value"]
    assert row["completed"] == raw["Request Count"]["Value"]
    assert row["total_output_tokens"] == raw["Total Output Tokens (tokens)"]["Value"]
    assert row["total_prompt_tokens"] == raw["Total Input Sequence Length (tokens)"]["Value"]
    assert row["aiperf_mean_output_sequence_length_tokens"] == raw["Output Sequence Length (tokens)"]["avg"]
    # not in the CSV: missing, never 0 (the per-chunk ITL is experimental in AIPerf, so not exported)
    assert _nan(row["mean_itl_ms"]) and _nan(row["failed"]) and _nan(row["mean_per_request_tok_s"])


def test_aiperf_csv_takes_version_and_load_from_the_json_export_beside_it(tmp_path: Path) -> None:
    run = tmp_path / "my-run"
    run.mkdir()
    shutil.copy(CSV_FILE, run / "profile_export_aiperf.csv")
    shutil.copy(FIX / "aiperf" / "single" / "profile_export_aiperf.json", run / "profile_export_aiperf.json")
    row = import_results(run / "profile_export_aiperf.csv", store=False).levels.iloc[0]
    assert row["tool_version"] == "0.13.0" and row["concurrency"] == 2  # the JSON's, not a folder name
    assert row["aiperf_load_source"] == "profile_export_aiperf.json beside the CSV"
    alone = tmp_path / "plain"
    alone.mkdir()
    shutil.copy(CSV_FILE, alone / "results.csv")
    lone = import_results(alone / "results.csv", store=False).levels.iloc[0]
    assert _nan(lone["concurrency"]) and lone["aiperf_load_source"].startswith("not recorded")


def test_an_aiperf_artifact_folder_with_only_the_csv_imports(tmp_path: Path) -> None:
    result = import_results(FIX / "aiperf_csv", store=False)
    assert list(result.levels["source_file"]) == [str(CSV_FILE.resolve())]
    assert result.levels["output_throughput_tok_s"].iloc[0] == 327.68


def test_a_csv_that_is_not_aiperfs_or_is_cut_short_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(ConfigError, match="not AIPerf's CSV export"):
        import_results(other, store=False)
    cut = tmp_path / "cut.csv"
    cut.write_text("\n".join(CSV_FILE.read_text().splitlines()[:3]) + "\nRequest Latency (ms),1520.40,1391.22\n")
    with pytest.raises(ConfigError, match="line 4 has 3 cells"):
        import_results(cut, store=False)


# -- InferenceX ----------------------------------------------------------------------------------


def test_inferencex_collected_results_map_each_field_with_its_unit() -> None:
    path = INFX / "agg_dsr1_1k1k_fp8_sglang_h200.json"
    raw = json.loads(path.read_text())
    assert detect_format(path) == "inferencex"
    result = import_results(path, store=False, engine="sglang")
    assert len(result.quarantine) == 0
    assert sorted(result.runs["variant"]) == ["sglang-h200-fp8-tp8", "sglang-h200-fp8-tp8-mtp"]
    levels = result.levels.set_index("source_record")
    for i, point in enumerate(raw):
        row = levels.loc[f"[{i}]"]
        assert row["tool"] == "inferencex" and row["mode"] == "closed" and row["concurrency"] == point["conc"]
        for theirs, ours in (("ttft", "ttft_ms"), ("tpot", "tpot_ms"), ("itl", "itl_ms"), ("e2el", "e2e_ms")):
            assert row[f"mean_{ours}"] == pytest.approx(point[f"mean_{theirs}"] * 1000, rel=1e-12)  # s -> ms
            assert row[f"p50_{ours}"] == pytest.approx(point[f"median_{theirs}"] * 1000, rel=1e-12)
            assert row[f"p99_{ours}"] == pytest.approx(point[f"p99_{theirs}"] * 1000, rel=1e-12)
            assert row[f"inferencex_std_{theirs}_ms"] == pytest.approx(point[f"std_{theirs}"] * 1000, rel=1e-12)
            assert _nan(row[f"p90_{ours}"])  # no --metric-percentiles 90 in InferenceX's runs
        # per-GPU throughput kept as written; the server's is it times the GPUs InferenceX divided by (tp 8)
        assert row["inferencex_output_tput_per_gpu_tok_s"] == point["output_tput_per_gpu"]
        assert row["inferencex_tput_per_gpu_tok_s"] == point["tput_per_gpu"]
        assert row["inferencex_input_tput_per_gpu_tok_s"] == point["input_tput_per_gpu"]
        assert row["inferencex_output_gpus"] == 8 and row["output_throughput_tok_s"] == point["output_tput_per_gpu"] * 8
        assert row["inferencex_mean_intvty_tok_s"] == point["mean_intvty"]  # 1000 / TPOT ms, tok/s per user
        assert row["inferencex_spec_decoding"] == point["spec_decoding"] and row["inferencex_hw"] == "h200"
        assert row["input_len"] == point["isl"] and row["max_new_tokens"] == point["osl"]
        assert row["workload"] == "in=1024 out=1024"
        # not in the file: missing, never 0
        assert _nan(row["request_rate_req_s"]) and _nan(row["completed"]) and _nan(row["accept_length"])


def test_inferencex_single_point_file_and_multinode_gpu_count(tmp_path: Path) -> None:
    one = INFX / "agg_dsr1_1k1k_fp8_sglang_tp8-ep1-dpafalse_conc4_h200.json"
    row = import_results(one, store=False).levels.iloc[0]
    assert row["source_record"] == "whole file" and row["concurrency"] == 4
    point = json.loads(one.read_text())
    multinode = {k: v for k, v in point.items() if k not in ("tp", "pp", "dcp_size", "pcp_size", "ep")}
    multinode.update(
        is_multinode=True,
        disagg=True,
        num_prefill_gpu=8,
        num_decode_gpu=16,
        benchmark_outcome={"requested": 40, "completed": 40, "status": "ok"},
    )
    path = tmp_path / "agg_disagg.json"
    path.write_text(json.dumps(multinode))
    row = import_results(path, store=False).levels.iloc[0]
    assert row["inferencex_output_gpus"] == 16 and row["output_throughput_tok_s"] == point["output_tput_per_gpu"] * 16
    assert row["num_requests"] == 40 and row["completed"] == 40 and row["failed"] == 0


def test_inferencex_runs_make_a_study_of_spec_vs_baseline(tmp_path: Path) -> None:
    result = import_results(INFX / "agg_dsr1_1k1k_fp8_sglang_h200.json", runs_dir=tmp_path, engine="sglang")
    study = wb.load_study(list(result.runs["path"]), baseline="sglang-h200-fp8-tp8")
    assert study.load == "concurrency"
    ratio = study.ratio_intervals("sglang-h200-fp8-tp8-mtp", "output_throughput_tok_s")
    assert list(ratio["concurrency"]) == [4, 16] and ratio["ratio"].iloc[0] == pytest.approx(51.0 / 29.875)


# -- one file per request rate -------------------------------------------------------------------


def _per_rate_files(folder: Path) -> list[Path]:
    """vllm bench serve's rates-baseline.json split into one file per rate, named as vLLM names them
    (<backend>-<rate>qps-<model>-<date>.json) and without a label, as older vLLM wrote them."""
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for line in (FIX / "vllm" / "rates-baseline.json").read_text().splitlines():
        obj = json.loads(line)
        obj.pop("label", None)
        path = folder / f"vllm-{float(obj['request_rate'])}qps-Llama-3.3-70B-Instruct-20261202-1{len(files)}3000.json"
        path.write_text(json.dumps(obj))
        files.append(path)
    return files


def test_per_rate_files_passed_together_are_one_variants_sweep(tmp_path: Path) -> None:
    files = _per_rate_files(tmp_path / "results")
    result = import_results(files, store=False, engine="sim")
    assert list(result.runs["variant"]) == ["vllm-Llama-3.3-70B-Instruct"] and result.runs["levels"].iloc[0] == 2
    assert sorted(result.levels["request_rate_req_s"]) == [2.0, 8.0] and list(result.levels["repeat"]) == [0, 0]
    alone = import_results(files[0], store=False)
    assert list(alone.runs["variant"]) == [files[0].stem]  # one file keeps its own name


def test_a_folder_of_per_rate_files_is_one_run_named_after_it(tmp_path: Path) -> None:
    _per_rate_files(tmp_path / "baseline-rates")
    assert detect_format(tmp_path / "baseline-rates") == "folder"
    result = import_results(tmp_path / "baseline-rates", runs_dir=tmp_path / "runs", engine="sim")
    assert list(result.runs["variant"]) == ["baseline-rates"] and result.runs["levels"].iloc[0] == 2
    (tmp_path / "baseline-rates" / "notes.json").write_text('{"hello": 1}')
    with pytest.raises(ConfigError, match="in folder .*baseline-rates: move files that are not results"):
        import_results(tmp_path / "baseline-rates", store=False)


def test_files_of_two_variants_without_labels_stay_two_runs(tmp_path: Path) -> None:
    files = _per_rate_files(tmp_path / "a")
    other = [p.rename(p.with_name(p.name.replace("vllm-", "eagle3-"))) for p in _per_rate_files(tmp_path / "b")]
    result = import_results([*files, *other], store=False)
    assert sorted(result.runs["variant"]) == ["eagle3-Llama-3.3-70B-Instruct", "vllm-Llama-3.3-70B-Instruct"]


# -- offline multi-workload bench_serving files ---------------------------------------------------


def test_offline_multi_workload_files_compare_workload_by_workload() -> None:
    result = import_results(OFFLINE, store=False)
    levels = result.levels
    assert len(levels) == 6 and set(levels["mode"]) == {"open"} and levels["concurrency"].isna().all()
    assert (levels["request_rate_req_s"] == math.inf).all() and levels["workload"].nunique() == 3
    table = offline_workloads(levels, baseline="baseline")
    assert len(table) == 6 and list(table["variant"])[:2] == ["baseline", "eagle3"]
    raw = {
        (r["tag"], r["dataset_name"], r["random_input_len"]): r
        for path in OFFLINE
        for r in map(json.loads, path.read_text().splitlines())
    }
    long_out = table[table["workload"] == "dataset=random in=256 out=1024 backend=sglang"].set_index("variant")
    base, spec = raw[("baseline", "random", 256)], raw[("eagle3", "random", 256)]
    assert long_out.loc["baseline", "output_throughput_tok_s"] == base["output_throughput"]
    assert long_out.loc["eagle3", "mean_ttft_ms"] == spec["mean_ttft_ms"]
    assert long_out.loc["eagle3", "mean_tpot_ms"] == spec["mean_tpot_ms"]
    assert long_out.loc["eagle3", "accept_length"] == spec["accept_length"]
    assert long_out.loc["eagle3", "output_throughput_tok_s_ratio"] == pytest.approx(
        spec["output_throughput"] / base["output_throughput"]
    )
    assert long_out.loc["eagle3", "mean_tpot_ms_ratio"] == pytest.approx(spec["mean_tpot_ms"] / base["mean_tpot_ms"])
    assert _nan(long_out.loc["baseline", "output_throughput_tok_s_ratio"])  # the baseline is not compared with itself
    # a workload only one arm measured has no ratio, never a made-up one
    dropped = (levels["variant"] == "eagle3") & levels["workload"].str.contains("sharegpt")
    only_base = offline_workloads(levels[~dropped], baseline="baseline")
    assert only_base[only_base["workload"].str.contains("sharegpt")]["variant"].tolist() == ["baseline"]


def test_offline_file_cli_prints_the_workloads_side_by_side_and_the_study_points_there(tmp_path: Path) -> None:
    out = CliRunner().invoke(app, ["import", *map(str, OFFLINE), "--dry-run", "--baseline", "baseline"])
    assert out.exit_code == 0, out.output
    text = out.output
    assert "offline throughput (every request at once), workload by workload:" in text
    assert "workload dataset=random in=256 out=1024 backend=sglang:" in text
    assert "eagle3: 3,200.0 output tok/s" in text and "vs baseline: throughput x1.25" in text
    runs = import_results(OFFLINE, runs_dir=tmp_path)
    with pytest.raises(ConfigError, match="offline_workloads"):
        wb.load_study(list(runs.runs["path"]), baseline="baseline")
    _, stored = load_runs(list(runs.runs["path"]))
    assert len(offline_workloads(stored, baseline="baseline")) == 6  # the same table from stored runs


def test_non_offline_levels_give_an_empty_table() -> None:
    levels = import_results(FIX / "bench_serving" / "bs059_eagle3.jsonl", store=False).levels
    table = offline_workloads(levels)
    assert table.empty and "output_throughput_tok_s_ratio" in table.columns
    assert offline_workloads(pd.DataFrame()).empty
