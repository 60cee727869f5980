"""The workloads study's rules without a kernel (``workbench/studies/_workloads.py``, ``_workload_words.py``), how
``workbench report --from-runs`` picks its notebooks (``workbench/report/_from_runs.py``) and what the reports
index says each report measured (``workbench/report/_scope.py``, ``_index.py``)."""

from __future__ import annotations

import math
from pathlib import Path

import nbformat
import pandas as pd
import pytest

import workbench as wb
from workbench.errors import ConfigError
from workbench.report._discovery import default_notebooks
from workbench.report._from_runs import notebooks_for_runs
from workbench.report._index import write_index
from workbench.report._params import notebook_parameters
from workbench.report.cli import split_report_args
from workbench.studies._workloads import WorkloadStudy, level_label

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "imports"


def _levels(rows: list[dict]) -> pd.DataFrame:
    base = {"mode": "open", "concurrency": math.nan, "request_rate_req_s": math.inf, "completed": 10}
    return pd.DataFrame([{**base, **row} for row in rows])


def test_each_level_says_its_load_in_words() -> None:
    assert level_label({"mode": "open", "concurrency": math.nan, "request_rate_req_s": math.inf}) == "all at once"
    assert level_label({"mode": "closed", "concurrency": 4.0, "request_rate_req_s": math.nan}) == "concurrency 4"
    assert level_label({"mode": "open", "concurrency": math.nan, "request_rate_req_s": 2.5}) == "2.5 req/s"
    assert (
        level_label({"mode": "open", "concurrency": 8.0, "request_rate_req_s": 2.0}) == "2 req/s, at most 8 in flight"
    )
    assert level_label({"concurrency": math.nan, "request_rate_req_s": math.nan}) == "load not recorded"


def test_loads_sort_as_numbers_and_a_missing_figure_stays_missing() -> None:
    rows = [
        {
            "variant": v,
            "workload": "w",
            "mode": "closed",
            "concurrency": c,
            "request_rate_req_s": math.nan,
            "output_throughput_tok_s": t,
        }
        for v, c, t in [("base", 16, 800.0), ("base", 2, 200.0), ("spec", 2, 300.0), ("spec", 16, 720.0)]
    ]
    table = WorkloadStudy(levels=_levels(rows), manifests=[], baseline="base").table()
    assert list(table["load"]) == ["concurrency 2", "concurrency 16"] * 2  # 2 before 16, never text order
    assert list(table["throughput_ratio"].round(2).fillna(-1)) == [-1, -1, 1.5, 0.9]
    assert "mean_ttft_ms" not in table and "ttft_ratio" not in table  # not recorded by any row: no column


def test_unlike_arms_pair_one_workload_with_one_and_name_every_difference() -> None:
    rows = [
        {
            "variant": "base",
            "workload": "dataset=random in=1024 out=128 backend=sglang",
            "tool": "sglang.bench_serving",
            "engine": "sglang",
            "output_throughput_tok_s": 1000.0,
            "total_output_tokens": 1280,
            "completed": 10,
        },
        {
            "variant": "spec",
            "workload": "dataset=random in=1024 out=256 backend=sglang-oai",
            "tool": "vllm",
            "engine": "sglang",
            "output_throughput_tok_s": 1500.0,
            "total_output_tokens": 2560,
            "completed": 10,
        },
    ]
    manifests = [
        {"variant": "base", "server_info": {"version": "0.5.9", "tp_size": 8}},
        {"variant": "spec", "server_info": {"version": "0.5.17", "tp_size": 8}},
    ]
    refused = WorkloadStudy(levels=_levels(rows), manifests=manifests, baseline="base")
    assert refused.not_compared == ["spec"] and refused.ratios().empty
    assert "**Not compared**" in refused.opening() and "`--unlike-arms`" in refused.opening()
    study = WorkloadStudy(levels=_levels(rows), manifests=manifests, baseline="base", unlike_arms=True)
    [pairing] = study.unlike_pairings
    assert dict(study.differences(pairing)) == {
        "workload": "out 128 vs 256",
        "endpoint": "sglang vs sglang-oai",
        "client": "sglang.bench_serving vs vllm",
        "server": "server version 0.5.9 vs 0.5.17",
        "tokens": "output tokens per request 128 vs 256",
    }
    opening = study.opening()
    assert opening.startswith("> **NOT LIKE-FOR-LIKE**") and opening.index("NOT LIKE") < opening.index("In short")
    assert "x1.50 on `dataset=random in=1024 out=256 backend=sglang-oai` against the baseline on" in opening
    two = _levels([*rows, {**rows[1], "workload": "dataset=sharegpt backend=sglang-oai"}])
    with pytest.raises(ConfigError, match="unlike_arms pairs one workload with one, but 'spec' measured 2"):
        WorkloadStudy(levels=two, manifests=manifests, baseline="base", unlike_arms=True)
    with pytest.raises(ConfigError, match="baseline 'nope' has no rows in these runs"):
        WorkloadStudy(levels=_levels(rows), manifests=manifests, baseline="nope")


def test_the_workloads_report_needs_runs_and_from_runs_picks_it_by_what_they_hold(tmp_path: Path) -> None:
    notebooks = ROOT / "notebooks"
    assert "workloads.ipynb" not in [p.name for p in default_notebooks(notebooks)]  # not in `make report`
    chosen = [p.name for p in default_notebooks(notebooks, with_runs=True)]
    candidates = [p for p in default_notebooks(notebooks, with_runs=True) if "from_runs" in notebook_parameters(p)]
    assert "workloads.ipynb" in chosen and [p.name for p in candidates] == ["spec_vs_baseline.ipynb", "workloads.ipynb"]
    with pytest.raises(ConfigError, match="the workloads report compares stored runs and none was given"):
        wb.load_workloads(None)
    runs = tmp_path / "runs"
    offline = wb.import_results(FIXTURES / "bench_serving" / "offline_baseline.jsonl", runs_dir=runs).runs
    closed = wb.import_results(
        FIXTURES / "inferencex" / "agg_dsr1_1k1k_fp8_sglang_h200.json", runs_dir=runs, engine="sglang"
    ).runs
    offline_dirs = [runs / r for r in offline["run_id"]]
    closed_dirs = [runs / r for r in closed["run_id"]]
    picked, why = notebooks_for_runs(candidates, offline_dirs, {})
    assert [p.name for p in picked] == ["workloads.ipynb"] and "not running spec_vs_baseline.ipynb" in why[0]
    assert [p.name for p in notebooks_for_runs(candidates, closed_dirs, {})[0]] == ["spec_vs_baseline.ipynb"]
    assert [p.name for p in notebooks_for_runs(candidates, closed_dirs, {"unlike_arms": True})[0]] == [
        "spec_vs_baseline.ipynb",
        "workloads.ipynb",
    ]
    assert split_report_args(["--from-runs", "a", "--unlike-arms"]) == (
        [],
        [("from_runs", '["a"]'), ("unlike_arms", "true")],
    )


def _executed(folder: Path, notebook: Path, given: dict | None = None) -> None:
    """An executed notebook as `workbench report` leaves it: the recorded parameters, defaults as the cell writes them."""
    node = nbformat.read(str(notebook), as_version=4)
    declared = notebook_parameters(notebook)
    node.metadata["workbench"] = {
        "parameters": given or {},
        "status": "ok",
        "defaults": {k: p.default for k, p in declared.items() if k not in (given or {})},
    }
    nbformat.write(node, str(folder / notebook.name))
    (folder / f"{notebook.stem}.html").write_text("<html></html>")


def test_the_index_says_what_each_report_measured_and_why_two_disagree(tmp_path: Path) -> None:
    out = tmp_path / "reports"
    out.mkdir()
    for name in ("spec_vs_baseline", "calibration", "inspect_source", "what_if"):
        _executed(out, ROOT / "notebooks" / f"{name}.ipynb")
    _executed(out, ROOT / "notebooks" / "dynamic_disable.ipynb", {"max_new_tokens": 32})
    page = write_index(out).read_text()
    rows = {
        stem: page[page.index(f'href="{stem}.html"') :].split("</tr>")[0]
        for stem in ("spec_vs_baseline", "calibration", "inspect_source", "what_if", "dynamic_disable")
    }
    # the seed profile's target and GPU data sheet (data/profiles/seed-pcie-8gpu.toml), the output length given
    assert "meta-llama/Llama-3.3-70B-Instruct" in rows["spec_vs_baseline"]
    assert "8x NVIDIA H100 NVL 94 GB" in rows["spec_vs_baseline"] and "(simulated)" in rows["spec_vs_baseline"]
    assert "prompts=default out=256" in rows["spec_vs_baseline"] and "prompts=default out=32" in rows["dynamic_disable"]
    # a stored timing table is measured on its GPU (data/profiles/h200-llama3-8b.toml's model)
    assert "meta-llama/Llama-3.1-8B-Instruct" in rows["calibration"] and "NVIDIA H200 SXM 141 GB" in rows["calibration"]
    assert "(simulated)" not in rows["calibration"]
    assert "none: measures no model" in rows["inspect_source"]
    start = page.index('<p class="note">Two reports')  # under the table (the page opens with the answer)
    note = page[start : page.index("</p>", start)]
    assert "Two reports can disagree without either being wrong" in note
    # groups and names in the index's reading order (spec_vs_baseline first)
    assert (
        "These reports differ in model (meta-llama/Llama-3.3-70B-Instruct: spec_vs_baseline, dynamic_disable, "
        "what_if; meta-llama/Llama-3.1-8B-Instruct: calibration)"
    ) in note
    assert "GPU (8x NVIDIA H100 NVL 94 GB: spec_vs_baseline, dynamic_disable, what_if; NVIDIA H200 SXM 141 GB" in note
    assert (
        "prompts=default out=256: spec_vs_baseline, what_if; prompts=default out=32: dynamic_disable; out=512" in note
        and "inspect_source" not in note
    )  # a report that measures no model is in no group
