"""The report's words on runs of real SGLang 0.5.17 measured on a GPU (data/measured/h200-sglang-0.5.17-2026-12-06).

Four runs of ``benchmarks/real_sglang_gpu.py bench`` on an NVIDIA H200 (random weights, accept length forced by
``SGLANG_SIMULATE_ACC_LEN``): the baseline, an EAGLE-3 chain (forced 3.0), a topk-4 tree (forced 3.4) and an
adaptive variant whose server failed CUDA-graph capture. Whatever a report shows of them must say MEASURED on
real SGLang, random weights and the forced acceptance, judge the same work on token counts, and name the run
that measured nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.studies import load_study
from workbench.studies._conditions import conditions_of, conditions_text, forced_accept_length
from workbench.studies._openings import study_opening

RUNS = sorted((Path(__file__).resolve().parents[1] / "data" / "measured" / "h200-sglang-0.5.17-2026-12-06"
               / "runs").iterdir())


@pytest.fixture(scope="module")
def study():
    return load_study(RUNS)


def test_the_stored_runs_are_real_measurements(study) -> None:
    assert not study.simulated
    assert set(study.levels["variant"]) == {"real-baseline", "real-eagle3-chain", "real-eagle3-tree"}
    assert sorted(study.levels.groupby("variant")["concurrency"].apply(list).iloc[0]) == [1, 2, 4, 8, 16, 32, 64]
    chain = study.levels[study.levels["variant"] == "real-eagle3-chain"]["accept_length"]
    assert chain.between(2.9, 3.05).all()  # the forced 3.0, measured by the client from meta_info


def test_conditions_name_gpu_weights_and_forced_acceptance(study) -> None:
    c = conditions_of(study.manifests)
    assert c.gpus == ("NVIDIA H200",) and c.sglang_versions == ("0.5.17",)
    assert c.forced == {"real-eagle3-chain": 3.0, "real-eagle3-tree": 3.4}  # the failed adaptive run is not listed
    assert set(c.random_weights) == {"real-baseline", "real-eagle3-chain", "real-eagle3-tree"}
    text = conditions_text(study.manifests)
    assert text.startswith("MEASURED on real SGLang 0.5.17, NVIDIA H200; random weights (--load-format dummy")
    assert "SGLANG_SIMULATE_ACC_LEN" in text and "real-eagle3-tree 3.4" in text


def test_every_place_a_figure_is_described_says_so(study) -> None:
    opening = study_opening(study.tables)
    assert "MEASURED on real SGLang 0.5.17, NVIDIA H200; random weights; accept length forced" in opening
    assert study.provenance_line().startswith("MEASURED on real SGLang 0.5.17")
    assert study.tables.subtitle_lines[0].startswith("MEASURED on real SGLang 0.5.17, NVIDIA H200; random weights")
    assert "SIMULATED" not in opening + study.provenance_line()


def test_same_work_is_judged_on_token_counts_under_forced_acceptance(study) -> None:
    for work in study.tables.same_work():
        assert work.forced_accept_length in (3.0, 3.4)
        assert work.checked and not work.flagged and work.pairs == work.same_length_pairs == 288
        assert "by construction" in work.text() and "the same work" in work.text()


def test_the_run_that_measured_nothing_is_named(study) -> None:
    verdict = study.verdict()
    assert "Not measured: real-eagle3-adaptive (failed" in verdict
    assert "Not the same work" not in verdict


def test_forced_accept_length_reads_the_variant_env() -> None:
    assert forced_accept_length({"variant_definition": {"env": {"SGLANG_SIMULATE_ACC_LEN": "2.5"}}}) == 2.5
    assert forced_accept_length({"provenance": {"launch_env": {"SGLANG_SIMULATE_ACC_LEN": "3"}}}) == 3.0
    assert forced_accept_length({"variant_definition": {"env": {"SGLANG_SIMULATE_ACC_LEN": "-1"}}}) is None
    assert forced_accept_length({}) is None
    assert conditions_text([{"variant": "v", "simulated": True}]) == ""  # the simulator's words are its own


def test_startup_timings_of_the_real_logs() -> None:
    """Where the time to ready went, from the stored server logs: the first start compiled the prefill graphs."""
    import tarfile

    from workbench.servers import startup_timings

    archive = RUNS[0].parents[1] / "server-logs.tar.gz"
    with tarfile.open(archive) as tar:
        logs = {"-".join(m.name.split("-")[:-2]): tar.extractfile(m).read().decode()  # type: ignore[union-attr]
                for m in tar.getmembers() if m.isfile()}
    first = startup_timings(logs["real-baseline"])
    assert first["cuda_graph_s"]["prefill"] == 41.64 and first["scheduler_e2e_s"] == 48.84
    assert first["weights_gb"] == {"LlamaForCausalLM": 15.02}
    assert first["kv_cache"] == [{"tokens": 788603, "gb": 96.26}]
    chain = startup_timings(logs["real-eagle3-chain"])
    assert chain["cuda_graph_s"]["prefill"] < 10 < first["cuda_graph_s"]["prefill"]  # kernels compiled once
    assert chain["weights_gb"] == {"LlamaForCausalLM": 15.02, "LlamaForCausalLMEagle3": 2.14}
    assert startup_timings("no such lines") == {}


def test_bench_summary_of_real_runs_needs_no_notebook_packages(tmp_path) -> None:
    """On the GPU machine (no altair, papermill or IPython) `workbench bench` measured every level and then
    raised ModuleNotFoundError for altair while printing its summary: the summary must not need them."""
    import os
    import subprocess
    import sys

    from blocked_imports import blocking_dir

    blocked = blocking_dir(tmp_path, ("altair", "vl_convert", "papermill", "nbconvert", "ipywidgets", "IPython"))
    code = ("import sys; from workbench.sweeps._bench_cli import _crossovers; "
            "print('\\n'.join(_crossovers(sys.argv[1:], ['real-baseline', 'real-eagle3-chain'], None)))")
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocked), str(root)])}
    out = subprocess.run([sys.executable, "-c", code, *map(str, RUNS)], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("figures: MEASURED on real SGLang 0.5.17, NVIDIA H200")
    assert "real-eagle3-chain, output_throughput_tok_s: Speculation stops beating the baseline" in out.stdout
