"""End to end: the spec_vs_baseline notebook through papermill against real sim server processes.

Small sweep (concurrency 1 and 8, 2 repeats), the simulated clock at the notebook's default of 4x. Checks real values:
accept length against the acceptance model within sampling error, and throughputs
against the calibration targets and the offline prediction of the same engine.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from browser import CHROMIUM, first_screen, on_first_screen
from sim_distortion import explained_share
from workbench.analysis import per_request_ratio_ci
from workbench.paths import PACKAGE_ROOT
from workbench.report import run_notebook
from workbench.sim._offline_figures import figures
from workbench.sim._profiles import load_profile
from workbench.store import load_run
from report_page import page_problems

pytestmark = pytest.mark.e2e

NOTEBOOK = PACKAGE_ROOT / "notebooks" / "spec_vs_baseline.ipynb"
LEVELS = [1, 8]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("reports")
    runs = tmp_path_factory.mktemp("runs")
    result = run_notebook(
        NOTEBOOK,
        out_dir=out,
        parameters={
            "variants": ["baseline", "eagle3-topk4"],
            "concurrency_levels": LEVELS,  # time_scale: the
            "runs_dir": str(runs),
            "repeats": 2,
        },  # notebook's simulator default (8), checked below
    )
    run_dirs = sorted(p.parent for p in runs.glob("*/manifest.json"))
    return result, {load_run(p).manifest["variant"]: load_run(p) for p in run_dirs}


def test_report_files_and_manifests(report) -> None:
    result, runs = report
    assert set(runs) == {"baseline", "eagle3-topk4"}
    html = result.html.read_text()
    assert page_problems(result.html, result.executed) == []  # no plumbing, dumps or repeated subtitle blocks
    assert "<svg" in html and "SIMULATED" in html and "crossover" in html.lower()
    assert "n=2" in html and "95%" in html  # figures carry n and their interval
    stems = {p.stem for p in result.charts}
    assert {
        "throughput",
        "per_request",
        "ratio_eagle3-topk4",
        "accept_length",
        "latency_ttft",
        "latency_tpot",
        "latency_e2e",
    } <= stems
    # the baseline keeps overlap scheduling on, spec v1 turns it off: said in the report, not only in `variants check`
    assert "Comparability of each pair" in html and "overlap scheduling" in html and "NOT LIKE-FOR-LIKE" in html
    for run in runs.values():
        assert (run.path / "requests.parquet").is_file() and (run.path / "levels.parquet").is_file()
        m = run.manifest
        assert m["status"] == "complete" and m["engine"] == "sim" and m["simulated"] is True
        assert m["sglang_version"] == "0.5.9" and m["time_scale"] == 8.0
        assert "workbench.sim" in " ".join(m["launch_command"]) and m["server_info"]["simulated"] is True
        assert m["plan"]["concurrency_levels"] == LEVELS == run.plan["concurrency_levels"]
        assert m["plan"]["requests_per_level"] == [max(16, 2 * c) for c in LEVELS]
        repeats = m["plan"]["repeats"]
        assert repeats == 2
        assert sorted(zip(run.levels["concurrency"], run.levels["repeat"])) == [
            (c, r) for c in LEVELS for r in range(repeats)
        ]
        assert run.levels["simulated"].all() and (run.levels["failed"] == 0).all()
        assert m["status"] == "complete" and len(m["units_completed"]) == len(LEVELS) * repeats


def test_accept_length_matches_acceptance_model(report) -> None:
    _, runs = report
    run = runs["eagle3-topk4"]
    expected = run.manifest["simulation"]["expected_accept_length"]
    req = run.requests
    # Tokens from verify steps per verify: drop the prefill token of each request.
    per_request = (req["output_tokens"] - 1) / req["spec_verify_ct"]
    se = per_request.std(ddof=1) / math.sqrt(len(per_request))
    # The last verify of a request is cut at max_new_tokens: at most num_steps tokens lost
    # over ~90 verifies, a bias below 0.03 tokens.
    assert abs(per_request.mean() - expected) < 3 * se + 0.03, (per_request.mean(), expected, se)
    assert runs["baseline"].requests["spec_verify_ct"].isna().all()


def test_throughput_matches_calibration_and_offline_prediction(report) -> None:
    _, runs = report
    profile = load_profile("seed-pcie-8gpu")
    tol = profile.calibration["tolerance"]
    base = runs["baseline"].levels.groupby("concurrency").mean(numeric_only=True)  # means over repeats
    eagle = runs["eagle3-topk4"].levels.groupby("concurrency").mean(numeric_only=True)
    # Concurrency 1: the measured figures the profile is calibrated to.
    assert base.loc[1, "mean_per_request_tok_s"] == pytest.approx(
        profile.calibration["baseline_c1_per_request_tok_s"], rel=tol
    )
    assert eagle.loc[1, "mean_per_request_tok_s"] == pytest.approx(
        profile.calibration["eagle3_c1_per_request_tok_s"], rel=tol
    )
    # Real-time HTTP measurement vs the same engine on a virtual clock.
    from workbench.bench._prompts import load_prompts
    from workbench.sim._text import TextModel

    text = TextModel()
    lengths = [text.count_tokens(p.text) for p in load_prompts()]
    predicted = figures(profile, prompt_lengths=lengths, max_new_tokens=256, concurrency_levels=LEVELS)
    m_scale = float(runs["baseline"].manifest["time_scale"])
    for name, table in (("baseline", base), ("eagle3", eagle)):
        for c in LEVELS:
            want = predicted[name][c][0]
            # the profile's tolerance plus what the level's own measures say a busy machine took (never more
            # throughput than predicted: a late server or client only loses it)
            slack = tol + explained_share(table.loc[c], m_scale)
            assert want * (1 - slack) <= table.loc[c, "output_throughput_tok_s"] <= want * (1 + tol), (name, c, slack)
    # The seed investigation's signs (EAGLE-3 ahead at 1, the baseline ahead at 8), asserted only where the
    # predicted margin is large against what this run can resolve. The two variants run one after the other on
    # a shared 2-core machine, so their measured per-request speed ratio (spec / baseline) carries
    # request-to-request noise (acceptance draws, client timing), which the 95% bootstrap interval over requests
    # measures (half-width about 1% at 1, 3-5% at 8), plus a shift between the two runs when load hits one and
    # not the other, which `load_slack` allows for: 5% on the log ratio, about 3x the largest shift seen
    # (-1.4% at 1, +2.0% at 8, in runs at load 1.8 and with four busy loops on the two cores, load 6).
    # The ratio must agree with the prediction within that sum. At concurrency 1 the predicted margin (1.022,
    # about 2%) is below it, so the sign is not asserted there (a strict sign check flaked under load); at 8
    # (0.70) it is.
    load_slack = 0.05
    requests = pd.concat([runs["baseline"].requests, runs["eagle3-topk4"].requests], ignore_index=True)
    ci = per_request_ratio_ci(requests, baseline="baseline", spec="eagle3-topk4").set_index("concurrency")
    signed = []
    for c in LEVELS:
        want = predicted["eagle3"][c][1] / predicted["baseline"][c][1]
        got, lo, hi = ci.loc[c, "ratio"], ci.loc[c, "ratio_lo"], ci.loc[c, "ratio_hi"]
        slack = max(math.log(hi / got), math.log(got / lo)) + load_slack
        assert abs(math.log(got / want)) <= slack, (c, got, want, slack)
        if abs(math.log(want)) > slack:
            assert (got > 1.0) == (want > 1.0), (c, got, want)
            signed.append(c)
    assert 8 in signed, "the baseline's predicted lead at 8 no longer exceeds this run's noise: no sign was tested"
    # Output throughput at 8: each variant is held to its prediction within tol above, so a predicted lead of the
    # baseline beyond (1 + tol) / (1 - tol) (about 1.48 against 1.22) cannot flip under that tolerance.
    margin = predicted["baseline"][8][0] / predicted["eagle3"][8][0]
    assert margin > (1 + tol) / (1 - tol), margin
    assert base.loc[8, "output_throughput_tok_s"] > eagle.loc[8, "output_throughput_tok_s"]


@pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium is not installed (make test installs it)")
def test_verdict_is_on_the_first_laptop_screen(report, tmp_path: Path) -> None:
    """Headless Debian chromium through playwright, every non-file request refused, a 1366x768 viewport."""
    result, _ = report
    seen = first_screen(result.html, tmp_path / "first_screen.png", "Verdict", "Recommended policy")
    assert seen["fetched"] == []
    assert on_first_screen(seen["Verdict"]), seen["Verdict"]
    assert on_first_screen(seen["Recommended policy"]), seen  # the answer, not just its heading
    assert seen["scroll_width"] <= 1366  # nothing scrolls sideways on a laptop screen
