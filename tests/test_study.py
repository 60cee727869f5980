"""Study: its tables are one frozen value (the per-request bootstrap computed once, whatever asks for it); the words,
tables and charts written from them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from workbench.errors import ConfigError
import workbench.studies._tables as tables_module
from workbench import Study
from workbench.studies._goodput import GoodputTargets
from workbench.studies._tables import StudyTables


def _study(manifests: list[dict] | None = None, **columns: object) -> Study:
    """Two variants at concurrency 1, 2 and 4: per-level rows and 6 requests per level each (``columns``: set on
    every level row)."""
    rng = np.random.default_rng(0)
    levels, requests = [], []
    for c, base, spec in [(1, 90.0, 99.0), (2, 170.0, 160.0), (4, 300.0, 240.0)]:
        for name, total in (("baseline", base), ("eagle3", spec)):
            levels.append(
                {
                    "variant": name,
                    "concurrency": c,
                    "output_throughput_tok_s": total,
                    "mean_per_request_tok_s": total / c,
                    "simulated": True,
                    "engine": "sim",
                    "accept_length": 2.7 if name == "eagle3" else float("nan"),
                }
            )
            for i in range(6):
                tok_s = total / c * rng.uniform(0.9, 1.1)
                requests.append(
                    {
                        "variant": name,
                        "concurrency": c,
                        "request_index": i,
                        "output_tokens": 256,
                        "e2e_ms": 256 / tok_s * 1000,
                        "error": None,
                    }
                )
    return Study.from_frames(
        pd.DataFrame(levels).assign(**columns), pd.DataFrame(requests), manifests or [], "baseline"
    )


@pytest.fixture
def bootstraps(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, float]]:
    """Every call of the bootstrap the Study makes, as (spec, confidence)."""
    calls: list[tuple[str, float]] = []
    real = tables_module.per_request_ratio_ci

    def counting(requests: pd.DataFrame, **kwargs):
        calls.append((kwargs["spec"], kwargs["confidence"]))
        return real(requests, **kwargs)

    monkeypatch.setattr(tables_module, "per_request_ratio_ci", counting)
    return calls


def test_charts_twice_bootstrap_once(bootstraps: list[tuple[str, float]]) -> None:
    study = _study()
    first = study.charts()
    assert bootstraps == [("eagle3", 0.95)]
    second = study.charts()
    assert bootstraps == [("eagle3", 0.95)]  # the second call reused the intervals
    assert set(first) == set(second) == {"throughput", "per_request", "ratio_eagle3", "accept_length"}
    assert first["ratio_eagle3"].to_dict() == second["ratio_eagle3"].to_dict()


def test_findings_and_charts_share_one_bootstrap(bootstraps: list[tuple[str, float]]) -> None:
    study = _study()
    study.findings()
    study.charts()
    ci = study.tables.per_request_ci("eagle3")
    assert bootstraps == [("eagle3", 0.95)]
    ci["ratio"] = 0.0  # a caller's change does not reach the cache
    assert (study.tables.per_request_ci("eagle3")["ratio"] > 0).all()
    study.tables.per_request_ci("eagle3", confidence=0.9)
    assert bootstraps == [("eagle3", 0.95), ("eagle3", 0.9)]  # another confidence is another bootstrap


def test_the_cache_is_not_a_constructor_argument_nor_shown() -> None:
    study = _study()
    study.tables.per_request_ci("eagle3")
    assert "_ci_cache" not in repr(study)
    t = study.tables
    with pytest.raises(TypeError):
        StudyTables(
            levels=t.levels,
            requests=t.requests,
            manifests=(),
            baseline="baseline",
            workload=t.workload,
            axis=t.axis,
            _ci_cache={},
        )


def test_the_tables_are_one_frozen_value_and_the_study_a_facade_over_them() -> None:
    import dataclasses

    study = _study(MANIFESTS)
    with pytest.raises(dataclasses.FrozenInstanceError):
        study.tables.manifests = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        study.tables = study.tables  # type: ignore[misc]
    with pytest.raises(AttributeError):
        study.levels = study.levels  # type: ignore[misc]
    assert isinstance(study.manifests, tuple) and isinstance(study.set_aside, tuple)
    assert study.levels is study.tables.levels and study.baseline == study.tables.baseline == "baseline"
    assert study.means().equals(study.tables.means())


def _repeated_study() -> Study:
    """Three repeats: eagle3 clearly ahead at 1, indistinguishable at 2, clearly behind at 4 and 8."""
    levels = []
    spread = (-1.0, 0.0, 1.0)
    for c, base, spec in [(1, 90.0, 99.0), (2, 170.0, 171.0), (4, 300.0, 240.0), (8, 500.0, 300.0)]:
        for r, d in enumerate(spread):
            for name, total, wiggle in (("baseline", base, d), ("eagle3", spec, -3 * d if c == 2 else d)):
                levels.append(
                    {
                        "variant": name,
                        "concurrency": c,
                        "repeat": r,
                        "simulated": True,
                        "engine": "sim",
                        "output_throughput_tok_s": total + wiggle,
                        "mean_per_request_tok_s": (total + wiggle) / c,
                        "accept_length": 2.7 + d / 100 if name == "eagle3" else float("nan"),
                    }
                )
    return Study.from_frames(pd.DataFrame(levels), pd.DataFrame(), [], "baseline")


def test_repeats_give_n_intervals_and_honest_crossovers() -> None:
    study = _repeated_study()
    assert study.tables.max_repeats == 3
    summary = study.summary().set_index(["variant", "concurrency"])
    row = summary.loc[("baseline", 1)]
    # 89, 90, 91: mean 90, s = 1, half width 4.302653 / sqrt(3) = 2.484
    assert row["n"] == 3 and row["output_throughput_tok_s"] == 90.0
    assert (row["output_throughput_tok_s_lo"], row["output_throughput_tok_s_hi"]) == (87.5, 92.5)
    ratios = study.ratios("eagle3").set_index("concurrency")
    assert ratios.loc[1, "output_throughput_tok_s_verdict"] == "spec ahead"
    assert ratios.loc[2, "output_throughput_tok_s_verdict"] == "not distinguishable at this level"
    assert ratios.loc[4, "output_throughput_tok_s_verdict"] == "baseline ahead"
    crossing = study.tables.crossover_intervals("eagle3")["output_throughput_tok_s"]
    assert crossing.kind == "claimed" and 1 < crossing.lo < crossing.concurrency < crossing.hi < 4
    findings = study.findings()
    assert "not distinguishable at this level" in findings and "n=3" in findings
    table = study.crossover_table()
    assert set(table["kind"]) == {"claimed"} and (table["n"] == 3).all()
    assert list(table["between"]) == ["2–4", "2–4"] and list(table["crossover_concurrency"]) == [2.0, 2.0]
    charts = study.charts()  # means with interval bars; the per-request bootstrap is not needed
    assert "n=3 repeats" in str(charts["throughput"].to_dict()["title"])
    assert study.policy()["best_variant"].tolist() == ["eagle3", "eagle3", "baseline", "baseline"]


def test_one_repeat_says_n_1_and_claims_no_interval() -> None:
    study = _study()
    assert study.tables.max_repeats == 1 and (study.summary()["n"] == 1).all()
    for c in study.crossovers("eagle3").values():
        assert "(not tested: 1 repeat: no crossover interval)" in c.description
    findings = study.findings()
    assert "n=1 repeat per level" in findings and "significant" not in findings.replace("not significant", "")


MANIFESTS = [
    {
        "variant": "baseline",
        "host": "local",
        "sglang_version": "0.5.9",
        "server_info": {"max_running_requests": 4096, "disable_overlap_schedule": False, "tp_size": 8},
    },
    {
        "variant": "eagle3",
        "host": "local",
        "sglang_version": "0.5.9",
        "server_info": {
            "max_running_requests": 2,
            "disable_overlap_schedule": True,
            "tp_size": 8,
            "speculative_algorithm": "EAGLE3",
        },
    },
]


def test_verdict_from_one_repeat_with_a_queue_and_unequal_settings() -> None:
    study = _study(MANIFESTS)
    lines = study.verdict().splitlines()
    assert lines[0] == (
        "**Verdict** — SIMULATED (a model, not a GPU measurement), engine sim, SGLang 0.5.9 rules, "
        "workbench 0.1.0, host local, n=1 repeat per level."
    )
    assert lines[2:] == [
        "- **Recommended policy** (highest total output throughput at each level): **eagle3** at concurrency 1; "
        "**baseline** at concurrency 2–4 (margins over the runner-up not tested: 1 repeat).",
        "- **eagle3** against baseline — total output throughput: ahead at 1 (1.10x), behind at 2–4 (0.80x–0.94x); "
        "crossover between concurrency 1 and 2 (≈ 1.5); per request: ahead at 1 (1.10x), behind at 2–4 "
        "(0.80x–0.94x); crossover between concurrency 1 and 2 (≈ 1.5).",
        "  - Not like-for-like at concurrency 4: 2 of 4 requests wait in eagle3's queue (max-running-requests 2), "
        "while baseline (max-running-requests 4096) admits all; the figures there compare a full server with one "
        "that is not.",
        "- **Caveats**:",
        "  - Not like-for-like: eagle3 differs from baseline beyond speculation in overlap scheduling on (baseline) "
        "vs off, max_running_requests 4096 (baseline) vs 2 (*Comparability* below says what each does and what can "
        "be equalised).",
        "  - Nothing here is tested for significance (not tested: 1 repeat per level); the rule: a difference is "
        "called significant only with at least 3 paired repeats per level and a 95% Student t interval of the "
        "spec/baseline ratio that excludes 1. Measure with 3 repeats to test (`-p repeats 3` in a report that measures, "
        "`workbench bench VARIANT... --repeats 3`).",
        "  - The figures are the simulated engine's: a model calibrated to a few GPU measurements "
        "(docs/SIMULATOR.md), to choose what to measure, not a measurement.",
    ]
    assert study.tables.queued().to_dict("records") == [
        {"variant": "eagle3", "concurrency": 4, "queued_requests": 2, "cap": 2}
    ]
    text = study.comparability_text()
    assert "- **eagle3** differs from baseline:" in text
    assert (
        "- **Requests over the cap** (the tables' *over cap*: in flight beyond the server's max-running-requests, so "
        "waiting whatever it does; ringed in red in the charts): eagle3 at concurrency 4: 2 over (cap 2). The "
        "server's own queue, which also holds requests waiting for their prefill, is in *What the server saw* "
        "(*mean_queued_reqs*)."
    ) in text
    ratio = study.charts()["ratio_eagle3"].to_dict()
    assert (
        "NOT LIKE-FOR-LIKE: overlap scheduling on (baseline) vs off; max_running_requests 4096 (baseline) vs 2"
        in ratio["title"]["subtitle"]
    )


def test_both_servers_queueing_alike_is_like_for_like() -> None:
    study = _study(
        [
            {**m, "server_info": {**m["server_info"], "max_running_requests": 2, "disable_overlap_schedule": False}}
            for m in MANIFESTS
        ]
    )
    assert study.tables.comparability().empty
    lines = study.verdict().splitlines()
    assert lines[lines.index("- **Caveats**:") + 1] == (
        "  - At concurrency 4 both servers queue 2 of 4 requests (max-running-requests 2 each): both are full, so the "
        "pair is like-for-like there."
    )
    assert "- **eagle3**: like-for-like with baseline" in study.comparability_text()


def test_verdict_with_three_repeats_says_what_was_tested() -> None:
    lines = _repeated_study().verdict().splitlines()
    assert lines[0].endswith("engine sim, workbench 0.1.0, n=3 repeats per level.")
    assert lines[3] == (
        "- **eagle3** against baseline — total output throughput: ahead at 1–2 (1.01x–1.10x), behind at 4–8 "
        "(0.60x–0.80x) (tested: speculation ahead at 1, not distinguishable at 2, baseline ahead at 4–8); "
        "crossover between concurrency 2 and 4 (≈ 2.0, 95% interval 1.6–2.4, n=3 repeats); per request: ahead at "
        "1–2 (1.01x–1.10x), behind at 4–8 (0.60x–0.80x) (tested: speculation ahead at 1, not distinguishable at 2, "
        "baseline ahead at 4–8); crossover between concurrency 2 and 4 (≈ 2.0, 95% interval 1.6–2.4, n=3 repeats)."
    )
    assert (
        "  - Significance rule: a difference is called significant only with at least 3 paired repeats per level "
        "and a 95% Student t interval of the spec/baseline ratio that excludes 1."
    ) in lines


def test_policy_carries_n_the_best_mean_interval_and_the_paired_margin() -> None:
    study = _repeated_study()
    pol = study.policy().set_index("concurrency")
    assert list(pol["n"]) == [3, 3, 3, 3]
    # c=1: eagle3 98, 99, 100 -> 99 ± 4.302653 / sqrt(3) = 2.484
    assert pol.loc[1, "best_variant"] == "eagle3" and pol.loc[1, "runner_up"] == "baseline"
    assert round(pol.loc[1, "best_output_throughput_tok_s_lo"], 3) == 96.516
    assert round(pol.loc[1, "best_output_throughput_tok_s_hi"], 3) == 101.484
    # paired ratios 98/89, 99/90, 100/91: all 1.1 within 0.2%, so the margin is +10% and tested ahead
    assert round(pol.loc[1, "margin"], 4) == 0.1 and pol.loc[1, "margin_verdict"] == "ahead"
    assert 0.09 < pol.loc[1, "margin_lo"] < 0.1 < pol.loc[1, "margin_hi"] < 0.11
    # c=2: 174/169, 171/170, 168/171 straddle 1
    assert pol.loc[2, "margin_verdict"] == "not distinguishable at this level"
    assert pol.loc[2, "margin_lo"] < 0 < pol.loc[2, "margin_hi"]
    table = study.policy_table().set_index("concurrency")
    assert list(table.columns) == [
        "best variant",
        "n",
        "output tok/s",
        "runner-up",
        "margin over runner-up",
        "best vs runner-up",
    ]
    assert table.loc[1, "output tok/s"] == "99 (97–101)"
    assert table.loc[4, "best variant"] == "baseline" and table.loc[4, "best vs runner-up"] == "ahead"
    line = study.verdict().splitlines()[2]
    assert line == (
        "- **Recommended policy** (highest total output throughput at each level): **eagle3** at "
        "concurrency 1; either **eagle3** or **baseline** at concurrency 2 (not distinguishable); "
        "**baseline** at concurrency 4–8 (n=3 repeats)."
    )
    one = _study().policy()
    assert list(one["margin_verdict"]) == ["not tested: 1 repeat"] * 3 and one["margin_lo"].isna().all()


def test_latency_and_accept_length_charts_draw_the_intervals_they_announce() -> None:
    study = _repeated_study()
    levels = study.levels.assign(p50_tpot_ms=lambda d: 1000 / d["mean_per_request_tok_s"])
    study = Study.from_frames(levels, pd.DataFrame(), [], "baseline")
    charts = study.charts()
    for name in ("latency_tpot", "accept_length"):
        spec = charts[name].to_dict()
        marks = [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in spec["layer"]]
        assert "errorbar" in marks, name
    one = _study().charts()["accept_length"].to_dict()  # n=1: no bars
    assert all(
        (layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"]) != "errorbar"
        for layer in one["layer"]
    )


def test_narrow_tables_round_to_the_interval_and_carry_units() -> None:
    table = _repeated_study().table("throughput").set_index(["variant", "concurrency"])
    assert list(table.columns) == ["n", "over cap", "output tok/s", "per-request tok/s", "accept length (tok/verify)"]
    # 89, 90, 91: mean 90, half width 2.48 -> one significant digit of it: units
    assert table.loc[("baseline", 1), "output tok/s"] == "90 (88–92)"
    one = _study().table("throughput").set_index(["variant", "concurrency"])
    assert (
        one.loc[("baseline", 2), "output tok/s"] == "170"
        and one.loc[("eagle3", 1), "accept length (tok/verify)"] == "2.7"
    )
    import pytest as _pytest
    from workbench.errors import ConfigError

    with _pytest.raises(ConfigError, match="not one of"):
        _study().table("wide")


def test_queues_alike_in_every_pair_are_said_once() -> None:
    study = _study()
    twin = study.levels[study.levels["variant"] == "eagle3"].assign(variant="eagle3b")
    study = Study.from_frames(
        pd.concat([study.levels, twin], ignore_index=True),
        study.requests,
        [
            {**m, "server_info": {**m["server_info"], "max_running_requests": 2, "disable_overlap_schedule": False}}
            for m in [*MANIFESTS, {**MANIFESTS[1], "variant": "eagle3b"}]
        ],
        "baseline",
    )
    lines = study.verdict().splitlines()
    said = [line for line in lines if "queue" in line]
    assert said == [
        "  - At concurrency 4 baseline and the 2 variants compared with it (eagle3, eagle3b) each queue 2 of 4 "
        "requests (max-running-requests 2 each): these 3 servers are full, so the 2 pairs are like-for-like there."
    ]


def test_verdict_of_a_measured_study_says_measured_and_has_no_simulation_caveat() -> None:
    study = _study([{**m, "host": "gpu-box"} for m in MANIFESTS], simulated=False, engine="sglang", num_requests=16)
    lines = study.verdict().splitlines()
    assert lines[0] == (
        "**Verdict** — Measured, engine sglang, SGLang 0.5.9, workbench 0.1.0, host gpu-box, n=1 "
        "repeat per level, 16 requests per level."
    )
    assert not [line for line in lines if "simulated engine" in line]


def test_simulated_caveat_names_the_time_scale_and_the_levels_that_fell_behind() -> None:
    study = _repeated_study()
    behind = [0.25 if (row.concurrency == 8 and row.repeat == 1) else 0.0 for row in study.levels.itertuples()]
    study = Study.from_frames(
        study.levels.assign(sim_behind_schedule_wall_s=behind),
        pd.DataFrame(),
        [{"variant": v, "simulation": {"time_scale": 4.0}} for v in ("baseline", "eagle3")],
        "baseline",
    )
    line = next(x for x in study.verdict().splitlines() if "simulated engine's" in x)
    assert line.endswith(
        "It ran 4x faster than real time (times are simulated seconds), so this machine's CPU can "
        "shave the busiest levels (docs/PERFORMANCE.md); 2 of 24 level measurements fell behind its "
        "schedule (up to 0.25 wall s, at concurrency 8)."
    )
    calm = Study.from_frames(
        study.levels.assign(sim_behind_schedule_wall_s=0.0), pd.DataFrame(), study.manifests, "baseline"
    )
    assert "; no level fell behind the simulator's schedule." in calm.verdict()
    assert "faster than real time" not in _repeated_study().verdict()  # no time scale recorded: nothing said


def test_queues_alike_beside_unequal_settings_are_not_called_like_for_like() -> None:
    # issue 24: "like-for-like there" was said just before "Not like-for-like" caveats for the same pair
    study = _study([{**m, "server_info": {**m["server_info"], "max_running_requests": 2}} for m in MANIFESTS])
    assert not study.tables.comparability().empty  # overlap scheduling still differs
    caveats = study.verdict().split("- **Caveats**:")[1]
    assert "like-for-like there" not in caveats
    assert (
        "both are full, so queueing favours neither there (their other settings differ: next caveat)." in caveats
        and "Not like-for-like: eagle3 differs from baseline" in caveats
    )


def test_same_work_passes_a_shipped_pair_and_flags_arms_sent_different_prompts(tmp_path) -> None:
    """Greedy (temperature 0, the plan's default) outputs on the simulated engine: the shipped baseline and
    EAGLE-3 return the same text for every prompt (by construction: lossless under greedy sampling); an
    EAGLE-3 arm sent other prompts (a unique tag per request) did other work and is flagged."""
    import workbench as wb

    kw = {
        "concurrency_levels": [2],
        "requests_per_level": 6,
        "max_new_tokens": 16,
        "time_scale": 8.0,
        "runs_dir": str(tmp_path),
        "progress": False,
    }
    base, spec = wb.benchmark_variants(["baseline", "eagle3-topk4"], **kw)
    tagged = wb.benchmark_variant("eagle3-topk4", unique_prompts=True, label="tagged-prompts", **kw)
    same = wb.load_study([base, spec]).tables.same_work()
    assert len(same) == 1 and same[0].checked and same[0].prompts >= 5 and same[0].differing == 0
    assert not same[0].flagged and "the same work" in wb.load_study([base, spec]).comparability_text()
    other = wb.load_study([base, tagged])
    work = other.tables.same_work()[0]
    assert work.flagged and work.differing == work.prompts
    assert "**Same work** (FLAGGED)" in other.comparability_text()
    assert f"Not the same work: {work.differing} of {work.prompts} prompts" in other.verdict()


def test_acceptance_by_position_of_a_simulated_eagle3_chain_matches_the_profiles_depth_model(tmp_path) -> None:
    """An EAGLE-3 chain of 3 on the simulated engine: the acceptance rate at each draft position, from the
    accept histograms its responses carry, is the profile's per-depth model within sampling error."""
    import workbench as wb
    from workbench.analysis import position_rates
    from workbench.sim import load_profile, variant_config

    kw = {
        "concurrency_levels": [4],
        "requests_per_level": 24,
        "max_new_tokens": 64,
        "time_scale": 8.0,
        "runs_dir": str(tmp_path),
        "progress": False,
    }
    runs = wb.benchmark_variants(["baseline", "eagle3-topk1-steps3"], **kw)
    study = wb.load_study(runs)
    profile = load_profile("seed-pcie-8gpu")
    spec = variant_config(profile, "eagle3-topk1-steps3").spec
    pmf = profile.acceptance_for(None, regime="greedy").accept_distribution(spec)  # P(k drafts) per verify
    model = [sum(pmf[j:]) for j in range(1, len(pmf))]
    # each request weighed once (the model's mixture is over requests), 99.9% interval over the 24 requests
    measured = position_rates(
        study.requests[study.requests["variant"] == "eagle3-topk1-steps3"], by=("variant",), confidence=0.999
    )
    assert list(measured["position"]) == [1, 2, 3] and (measured["n_requests"] == 24).all()
    for row, expected in zip(measured.itertuples(), model):
        assert row.per_request_rate_lo <= expected <= row.per_request_rate_hi, (row, expected)
    assert {"accept_positions", "accept_distribution"} <= set(study.charts())
    text = study.acceptance_text()
    assert "**eagle3-topk1-steps3** at concurrency 4: acceptance rate by draft position 1: " in text
    assert "accept length by prompt category" in text


def test_goodput_under_ttft_and_tpot_targets_beside_throughput() -> None:
    """Share of requests meeting both targets and those per second (GuideLLM's and inference-perf's SLO figures)."""
    levels, requests = [], []
    for c in (1, 2):
        for name, ttft, tpot in (("baseline", 100.0, 30.0 * c), ("eagle3", 120.0, 15.0 * c)):
            levels.append(
                {
                    "variant": name,
                    "concurrency": c,
                    "output_throughput_tok_s": 100.0 * c,
                    "mean_per_request_tok_s": 50.0,
                    "simulated": True,
                    "engine": "sim",
                }
            )
            for i in range(4):
                requests.append(
                    {
                        "variant": name,
                        "concurrency": c,
                        "request_index": i,
                        "error": None,
                        "ttft_ms": ttft + 50.0 * i,
                        "tpot_ms": tpot,
                        "e2e_ms": 1000.0,
                        "output_tokens": 32,
                        "start_s": float(i),
                        "end_s": float(i) + 1.0,
                    }
                )
    study = Study.from_frames(
        pd.DataFrame(levels), pd.DataFrame(requests), [], "baseline", goodput=GoodputTargets(ttft_ms=200, tpot_ms=40)
    )
    means = study.means().set_index(["variant", "concurrency"])
    # ttft 100, 150, 200, 250 (baseline) meet TTFT <= 200 for 3 of 4; at concurrency 2 its TPOT 60 fails them all
    assert (
        means.loc[("baseline", 1), "goodput_fraction"] == 0.75 and means.loc[("baseline", 2), "goodput_fraction"] == 0
    )
    assert means.loc[("eagle3", 2), "goodput_fraction"] == 0.5 and means.loc[("eagle3", 2), "goodput_req_s"] == 0.5
    line = next(x for x in study.verdict().splitlines() if x.startswith("- **Goodput**"))
    assert "TTFT ≤ 200 ms and TPOT ≤ 40 ms" in line and "best **baseline** at concurrency 1" in line
    assert "**eagle3** at concurrency 2" in line and "baseline 0%–75%" in line
    table = study.policy_table("goodput_req_s")
    assert "goodput req/s (TTFT ≤ 200 ms and TPOT ≤ 40 ms)" in table.columns
    assert (study.levels["goodput_requests"] == 4).all() and study.goodput_targets.words in line
    for bad in (0, -5.0, True, "200"):
        with pytest.raises(ConfigError, match="goodput target ttft_ms must be a number of milliseconds > 0"):
            GoodputTargets(ttft_ms=bad)  # type: ignore[arg-type]
    assert not GoodputTargets() and GoodputTargets(e2e_ms=900).given() == {"e2e_ms": 900.0}
