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

RUNS = sorted(
    (Path(__file__).resolve().parents[1] / "data" / "measured" / "h200-sglang-0.5.17-2026-12-06" / "runs").iterdir()
)


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
        logs = {
            "-".join(m.name.split("-")[:-2]): tar.extractfile(m).read().decode()  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isfile()
        }
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
    code = (
        "import sys; from workbench.sweeps._bench_cli import _crossovers; "
        "print('\\n'.join(_crossovers(sys.argv[1:], ['real-baseline', 'real-eagle3-chain'], None)))"
    )
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocked), str(root)])}
    out = subprocess.run(
        [sys.executable, "-c", code, *map(str, RUNS)], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("figures: MEASURED on real SGLang 0.5.17, NVIDIA H200")
    assert "real-eagle3-chain, output_throughput_tok_s: Speculation stops beating the baseline" in out.stdout


# -- the adaptive run with its own tiers, on an NVIDIA H100 (data/measured/h100-sglang-0.5.17-2026-12-06) ---------
# A different GPU from the runs above: its study is read alone (a study of both would name the two GPUs together,
# not per variant, and set the H100 adaptive run against the H200 baseline).

H100 = Path(__file__).resolve().parents[1] / "data" / "measured" / "h100-sglang-0.5.17-2026-12-06"
H100_RUNS = sorted((H100 / "runs").iterdir())
TIERS = Path(__file__).resolve().parents[1] / "benchmarks" / "real_sglang" / "adaptive-no-zero-steps.json"


@pytest.fixture(scope="module")
def adaptive():
    return load_study(H100_RUNS)


def _h100_log() -> str:
    import tarfile

    with tarfile.open(H100 / "server-logs.tar.gz") as tar:
        [member] = [m for m in tar.getmembers() if m.isfile()]
        return tar.extractfile(member).read().decode()  # type: ignore[union-attr]


def _graph_batches(log: str) -> list[int]:
    """The decode batch sizes the server captured CUDA graphs for (a batch is padded up to the next of them)."""
    import re

    line = next(x for x in log.splitlines() if "Capture draft decode CUDA graph begin" in x)
    return [int(b) for b in re.search(r"bs=\[([^\]]*)\]", line).group(1).split(",")]  # type: ignore[union-attr]


def _tier_steps(concurrency: int, batches: list[int]) -> list[int]:
    """The candidate num_steps SGLang's adaptive controller may pick at a batch of ``concurrency`` requests under
    the run's tier file: the batch padded up to a captured size, routed to the largest tier key at or below it."""
    import json

    tiers = {int(k): v["candidate_steps"] for k, v in json.loads(TIERS.read_text()).items()}
    padded = min(b for b in batches if b >= concurrency)
    return tiers[max(k for k in tiers if k <= padded)]


def test_the_h100_adaptive_run_is_named_with_its_gpu(adaptive) -> None:
    c = conditions_of(adaptive.manifests)
    assert c.gpus == ("NVIDIA H100 80GB HBM3",) and c.forced == {"real-eagle3-adaptive-tiers": 3.0}
    assert (
        study_opening(adaptive.tables).count(
            "MEASURED on real SGLang 0.5.17, NVIDIA H100 80GB HBM3; random weights; accept length forced"
        )
        == 1
    )
    assert adaptive.tables.subtitle_lines[0].startswith("MEASURED on real SGLang 0.5.17, NVIDIA H100 80GB HBM3")
    assert "H200" not in adaptive.provenance_line()


def test_the_adaptive_accept_length_follows_its_tiers(adaptive) -> None:
    """Forced to 3.0, a verify of 3 draft steps accepts 3 tokens (128 in 43 verifies: 2.98) and one of 1 step
    accepts 2: the run's tiers leave only 1 step from a padded batch of 32, so concurrency 32 and 64 read 2.0."""
    table = adaptive.table("throughput")
    shown = dict(zip(table["concurrency"], table["accept length (tok/verify)"]))  # as the report prints them
    assert shown == {1: "2.98", 2: "2.98", 4: "2.98", 8: "2.98", 16: "2.98", 32: "2", 64: "2.01"}
    batches = _graph_batches(_h100_log())
    for concurrency, accept in shown.items():
        steps = max(_tier_steps(int(concurrency), batches))
        assert float(accept) == pytest.approx(min(3.0, steps + 1), abs=0.03), (concurrency, accept, steps)
    verifies = adaptive.requests.groupby("concurrency")["spec_verify_ct"].agg(["min", "max"])
    assert verifies.loc[16].tolist() == [43, 43] and verifies.loc[32].tolist() == [64, 64]


def test_the_adaptive_server_logged_its_switches(adaptive) -> None:
    log = _h100_log()
    switches = [line.split("] ", 1)[1] for line in log.splitlines() if "Switch adaptive runtime state" in line]
    assert switches == [
        "Switch adaptive runtime state: steps 3 -> 1, draft_tokens 4 -> 2",
        "Switch adaptive runtime state: steps 1 -> 3, draft_tokens 2 -> 4",
    ]  # at c=32, after c=64
    throughput = adaptive.table("throughput").set_index("concurrency")["output tok/s"].astype(float)
    assert throughput.idxmax() == 16 and throughput[16] == 699 and throughput[64] == 609


def test_startup_timings_of_the_h100_first_start(adaptive) -> None:
    from workbench.servers import startup_timings

    first = startup_timings(_h100_log())
    assert first["cuda_graph_s"]["prefill"] == 53.76 and first["tokenizer_e2e_s"] == 88.38
    assert first["scheduler_e2e_s"] == 72.6 and first["cuda_graph_total_s"] == 63.93
    assert first["kv_cache"] == [{"tokens": 362417, "gb": 44.24}, {"tokens": 362417, "gb": 1.38}]
    [manifest] = adaptive.manifests
    assert manifest["server_process"]["ready_after_s"] == 113.431  # the workbench's clock: spawn to ready


# -- the baseline and three speculative variants on one NVIDIA H100 (data/measured/h100-sglang-0.5.17-2026-12-06-four)
# Two calls of `benchmarks/real_sglang_gpu.py bench` on the same warm H100, 2026-12-06 (baseline and chain, then tree
# and adaptive with its own tiers): the study issue 30 asks for, every variant on one GPU at concurrency 1-64.

FOUR = Path(__file__).resolve().parents[1] / "data" / "measured" / "h100-sglang-0.5.17-2026-12-06-four"
SPECULATIVE = ("real-eagle3-chain", "real-eagle3-tree", "real-eagle3-adaptive-tiers")


@pytest.fixture(scope="module")
def four():
    return load_study(sorted((FOUR / "runs").iterdir()))


def test_the_four_variants_ran_on_one_gpu_at_every_level(four) -> None:
    assert not four.simulated
    assert set(four.levels["variant"]) == {"real-baseline", *SPECULATIVE}
    for _, levels in four.levels.groupby("variant"):
        assert sorted(levels["concurrency"]) == [1, 2, 4, 8, 16, 32, 64]
    c = conditions_of(four.manifests)
    assert c.gpus == ("NVIDIA H100 80GB HBM3",) and c.sglang_versions == ("0.5.17",)
    assert c.forced == {"real-eagle3-chain": 3.0, "real-eagle3-tree": 3.4, "real-eagle3-adaptive-tiers": 3.0}
    assert set(c.random_weights) == {"real-baseline", *SPECULATIVE}
    opening = study_opening(four.tables)
    assert opening.count("MEASURED on real SGLang 0.5.17, NVIDIA H100 80GB HBM3; random weights; accept length") == 1
    assert "Not measured" not in four.verdict()  # every server started and measured every level


def test_every_speculative_variant_leads_at_low_concurrency_and_trails_from_eight(four) -> None:
    """The H100's answer, as the report prints it: each speculative variant ahead of plain decoding in total output
    throughput at concurrency 1-4, each behind at 16-64, so every crossover lies between concurrency 4 and 8."""
    table = four.table("throughput")
    tok_s = table.pivot(index="concurrency", columns="variant", values="output tok/s").astype(float)
    for name in SPECULATIVE:
        ratio = tok_s[name] / tok_s["real-baseline"]
        assert (ratio.loc[[1, 2, 4]] > 1.2).all() and (ratio.loc[[16, 32, 64]] < 0.9).all(), (name, ratio)
    assert tok_s.loc[1, "real-baseline"] == 128 and tok_s.loc[64, "real-baseline"] == 1050
    verdict = four.verdict()
    for name in SPECULATIVE:
        line = next(x for x in verdict.splitlines() if x.startswith(f"- **{name}** against real-baseline"))
        assert "total output throughput: ahead at 1–4" in line and "crossover between concurrency 4 and 8" in line


def test_adaptive_drops_to_one_step_from_32_and_loses_to_its_own_chain_under_forced_acceptance(four) -> None:
    """Forced acceptance is a fixed accept length per verify, capped by the steps drafted: the tiers' 1 step above a
    padded batch of 24 caps it at 2 (2.0 read at c=32 and 64), while the fixed 3-step chain keeps 2.98. Real drafts
    accept less at large batches' long contexts; a forced one does not, so this run cannot show the adaptive gain."""
    table = four.table("throughput").set_index(["variant", "concurrency"])
    accept = table.loc["real-eagle3-adaptive-tiers", "accept length (tok/verify)"].astype(float)
    assert accept.loc[16] == pytest.approx(2.98, abs=0.01) and accept.loc[32] == pytest.approx(2.0, abs=0.02)
    tok_s = table["output tok/s"].astype(float)
    assert tok_s.loc[("real-eagle3-adaptive-tiers", 64)] < 0.85 * tok_s.loc[("real-eagle3-chain", 64)]
    assert tok_s.loc[("real-eagle3-adaptive-tiers", 8)] == pytest.approx(tok_s.loc[("real-eagle3-chain", 8)], rel=0.02)


def test_the_four_runs_are_the_same_work_by_token_counts(four) -> None:
    works = four.tables.same_work()
    assert len(works) == 3
    for work in works:
        assert work.checked and not work.flagged and work.pairs == work.same_length_pairs == 288


def test_start_up_on_the_h100_later_starts_compile_nothing() -> None:
    import json

    from workbench.servers import startup_timings

    starts = {}
    for name in ("summary-bench-h100-pair-a.json", "summary-bench-h100-pair-b.json"):
        starts.update(json.loads((FOUR / name).read_text())["bench"]["startup"])
    first = next(v for k, v in starts.items() if k.startswith("real-baseline"))
    assert first["cuda_graph_s"]["prefill"] == 63.42 and first["scheduler_e2e_s"] == 76.77  # the first start
    later = [v for k, v in starts.items() if k.startswith(SPECULATIVE)]
    assert len(later) == 3 and all(v["cuda_graph_s"]["prefill"] < 10 for v in later)
    assert all(v["weights_gb"] == {"LlamaForCausalLM": 15.02, "LlamaForCausalLMEagle3": 2.14} for v in later)
    import tarfile

    with tarfile.open(FOUR / "server-logs.tar.gz") as tar:
        logs = {m.name.rsplit("-", 2)[0]: tar.extractfile(m).read().decode() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]
    assert set(logs) == {"real-baseline", *SPECULATIVE}
    assert startup_timings(logs["real-eagle3-tree"])["cuda_graph_s"]["draft_decode"] == 12.95


# -- the 3-repeat run the deadline stopped (data/measured/h100-sglang-0.5.17-2026-12-06-repeats-interrupted) --------


def test_a_run_stopped_in_a_later_pass_says_its_repeats_are_uneven() -> None:
    """The baseline kept 2 passes at concurrency 1 and 1 at 4-16, the chain 2 at every level: the report says
    n=1–2 and draws no interval where a level has one pass (it had said n=2 repeats per level)."""
    runs = FOUR.parent / "h100-sglang-0.5.17-2026-12-06-repeats-interrupted" / "runs"
    study = load_study(sorted(runs.iterdir()))
    assert (study.tables.min_repeats, study.tables.max_repeats) == (1, 2)
    assert study.tables.repeats_words == "n=1–2 repeats per level (uneven)"
    assert "n=1–2 repeats per level (uneven)" in study.verdict() and "n=2 repeats per level" not in study.verdict()
    assert "n=1–2 repeats per level (uneven)" in study_opening(study.tables)
    assert study.tables.repeats_line.endswith("where n > 1")
    assert study.tables.repeats_words != "" and four_repeats_words() == "n=1 repeat per level"


def four_repeats_words() -> str:
    return load_study(sorted((FOUR / "runs").iterdir())).tables.repeats_words
