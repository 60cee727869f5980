"""`workbench import` of a result file of SGLang's own ``sglang.benchmark.serving`` against a REAL server.

``tests/fixtures/imports/bench_serving/real_h100_sglang0517_eagle3_chain.jsonl`` was written on 2026-12-06 by
SGLang 0.5.17's client (``python -m sglang.benchmark.serving --backend sglang --dataset-name random-ids
--random-input-len 128 --random-output-len 64``, ``--max-concurrency 1`` then ``4``, appended) against a real
SGLang 0.5.17 server on an NVIDIA H100 80GB HBM3 (``benchmarks/real_sglang_gpu.py shapes real-eagle3-chain``:
random weights, EAGLE-3 chain of 3, accept length forced to 3.0). Copied byte for byte. Every figure of each
line is read back from the imported levels, and from the run ``workbench import`` stores.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.imports import detect_format, import_results
from workbench.store import load_run

FILE = Path(__file__).parent / "fixtures" / "imports" / "bench_serving" / "real_h100_sglang0517_eagle3_chain.jsonl"
RECORDS = [json.loads(line) for line in FILE.read_text().splitlines()]

#: Each figure of the file -> the level columns that carry it, unchanged (ms stay ms; the file has no time scale).
FIGURES: dict[str, tuple[str, ...]] = {
    "request_rate": ("request_rate_req_s",),
    "max_concurrency": ("concurrency",),
    "random_input_len": ("bench_serving_random_input_len",),
    "random_output_len": ("bench_serving_random_output_len",),
    "random_range_ratio": ("bench_serving_random_range_ratio",),
    "duration": ("duration_s",),
    "completed": ("completed",),
    "total_input_tokens": ("total_prompt_tokens",),
    "total_output_tokens": ("total_output_tokens",),
    "total_output_tokens_retokenized": ("bench_serving_total_output_tokens_retokenized",),
    "request_throughput": ("request_throughput_req_s",),
    "input_throughput": ("bench_serving_input_tok_s",),
    "output_throughput": ("output_throughput_tok_s",),
    "total_throughput": ("bench_serving_total_tok_s",),
    "mean_e2e_latency_ms": ("mean_e2e_ms",),
    "median_e2e_latency_ms": ("p50_e2e_ms",),
    "std_e2e_latency_ms": ("bench_serving_std_e2e_latency_ms",),
    "p90_e2e_latency_ms": ("p90_e2e_ms",),
    "p95_e2e_latency_ms": ("bench_serving_p95_e2e_latency_ms",),
    "p99_e2e_latency_ms": ("p99_e2e_ms",),
    "mean_ttft_ms": ("mean_ttft_ms",),
    "median_ttft_ms": ("p50_ttft_ms",),
    "std_ttft_ms": ("bench_serving_std_ttft_ms",),
    "p90_ttft_ms": ("p90_ttft_ms",),
    "p95_ttft_ms": ("bench_serving_p95_ttft_ms",),
    "p99_ttft_ms": ("p99_ttft_ms",),
    "mean_tpot_ms": ("mean_tpot_ms",),
    "median_tpot_ms": ("p50_tpot_ms",),
    "std_tpot_ms": ("bench_serving_std_tpot_ms",),
    "p90_tpot_ms": ("p90_tpot_ms",),
    "p95_tpot_ms": ("bench_serving_p95_tpot_ms",),
    "p99_tpot_ms": ("p99_tpot_ms",),
    # the sglang backend spreads each chunk's gap over the tokens it added: a per-token ITL
    "mean_itl_ms": ("mean_itl_per_token_ms", "bench_serving_mean_itl_ms"),
    "median_itl_ms": ("p50_itl_per_token_ms", "bench_serving_median_itl_ms"),
    "std_itl_ms": ("bench_serving_std_itl_ms",),
    "p90_itl_ms": ("p90_itl_per_token_ms", "bench_serving_p90_itl_ms"),
    "p95_itl_ms": ("bench_serving_p95_itl_ms",),
    "p99_itl_ms": ("p99_itl_per_token_ms", "bench_serving_p99_itl_ms"),
    "concurrency": ("achieved_concurrency",),
    "accept_length": ("accept_length", "server_accept_length"),
    "max_output_tokens_per_s": ("bench_serving_peak_output_tok_s",),
    "max_concurrent_requests": ("bench_serving_peak_concurrent_requests",),
}
#: Keys that are words, not figures, and the columns that keep them.
WORDS = {"backend": "bench_serving_backend", "dataset_name": "bench_serving_dataset_name", "tag": "bench_serving_tag"}
#: Keys with no column of their own, and why.
NOT_COLUMNS = {
    "total_input_text_tokens": "the text part of total_input_tokens (no images here)",
    "total_input_vision_tokens": "the image part of total_input_tokens (0 here)",
    "sharegpt_output_len": "null: a ShareGPT option, unused by random-ids",
    "server_info": "read for the engine, its version and simulated-or-not",
}


def _same(ours: Any, theirs: Any) -> bool:
    if isinstance(theirs, float) and math.isinf(theirs):
        return isinstance(ours, float) and math.isinf(ours)
    return float(ours) == float(theirs)


@pytest.fixture(scope="module")
def imported():
    return import_results(FILE, store=False)


def test_the_file_comes_from_a_real_server_and_every_key_is_accounted_for() -> None:
    assert detect_format(FILE) == "bench_serving"
    for record in RECORDS:
        info = record["server_info"]
        assert info["version"] == "0.5.17" and "simulation" not in info and info["load_format"] == "dummy"
        assert info["speculative_algorithm"] == "EAGLE3" and info["speculative_num_steps"] == 3
        assert set(record) == set(FIGURES) | set(WORDS) | set(NOT_COLUMNS), set(record) ^ (
            set(FIGURES) | set(WORDS) | set(NOT_COLUMNS)
        )
        assert record["total_input_text_tokens"] + record["total_input_vision_tokens"] == record["total_input_tokens"]


def test_every_figure_of_each_line_is_imported_unchanged(imported) -> None:
    levels = imported.levels.sort_values("level_index")
    assert len(levels) == 2 and list(levels["source_record"]) == ["line 1", "line 2"]
    assert len(imported.quarantine) == 0 and len(imported.requests) == 0  # no --output-details: no request rows
    for (_, row), record in zip(levels.iterrows(), RECORDS, strict=True):
        for key, columns in FIGURES.items():
            for column in columns:
                assert _same(row[column], record[key]), (row["source_record"], key, column, row[column], record[key])
        for key, column in WORDS.items():
            assert row[column] == record[key], (key, row[column])


def test_the_levels_say_what_ran(imported) -> None:
    levels = imported.levels.sort_values("level_index")
    assert list(levels["concurrency"]) == [1, 4] and set(levels["mode"]) == {"closed"}
    assert set(levels["engine"]) == {"sglang"} and not levels["simulated"].any()  # from the file's server_info
    assert set(levels["tool"]) == {"sglang.bench_serving"}
    assert set(levels["tool_version"]) == {"0.5.14..0.5.23"}  # the key set of the client that wrote it (0.5.17)
    assert set(levels["workload"]) == {"dataset=random-ids in=128 out=64 backend=sglang"}
    assert set(levels["variant"]) == {FILE.stem}  # no --tag in the file: the file's name
    assert set(levels["bench_serving_itl_definition"]) == {"per token (each chunk gap / tokens it added)"}
    for column in ("mean_itl_ms", "mean_per_request_tok_s", "failed", "time_scale"):  # not in the file: missing
        assert levels[column].isna().all(), column
    # what these figures show: the forced 3.0 per verify, and 128-token prompts and 64-token outputs throughout
    assert list(levels["accept_length"]) == [3.0, 3.0]
    assert list(levels["total_output_tokens"]) == [64 * 8, 64 * 32] and list(levels["completed"]) == [8, 32]


def test_workbench_import_stores_the_run_with_the_same_figures(tmp_path: Path) -> None:
    runs_dir = tmp_path / "runs"
    out = CliRunner().invoke(app, ["import", str(FILE), "--runs-dir", str(runs_dir)])
    assert out.exit_code == 0, out.output
    assert (
        f"sglang.bench_serving 0.5.14..0.5.23, variant {FILE.stem!r}, engine sglang: 2 level rows, "
        "0 quarantined, 0 request rows; stored as" in out.output
    )
    assert "SIMULATED" not in out.output
    [run_dir] = [p for p in runs_dir.iterdir() if p.is_dir()]
    run = load_run(run_dir)
    assert run.manifest["simulated"] is False and run.manifest["engine"] == "sglang"
    levels = run.levels.sort_values("level_index")
    for (_, row), record in zip(levels.iterrows(), RECORDS, strict=True):
        for key, columns in FIGURES.items():
            for column in columns:
                assert _same(row[column], record[key]), (key, column)
    again = CliRunner().invoke(app, ["import", str(FILE), "--runs-dir", str(runs_dir)])
    assert again.exit_code == 0 and "already stored as" in again.output  # the same file reuses its run
