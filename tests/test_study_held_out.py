"""The what-if and the policy study say how far to trust them (issue 31 item 6), and are frozen values (issue 32).

Every what-if prediction row (ratios, crossovers, best per level, policies) and every policy-study recommendation
carries the held-out error of its regime from the profile's ``[[held_out]]`` table (mean and worst %, n, the table
it came from), or says "not checked against a real engine". Real predictions on the shipped real-engine profile and
on the seed profile (no table); the stored dynamic-disable sweep (tests/fixtures/dynamic_disable), read as it ran
and as if it had run on a profile with a table or on a real engine. Expected figures are read from the profiles
through the same API, never written here.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

import workbench as wb
from workbench.sim import SpecConfig, check_prediction, load_profile
from workbench.studies import PolicyStudy

REAL = "h100-llama3-8b-sglang0517-triton"
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "dynamic_disable" / "policies"
UNCHECKED = "not checked against a real engine"
CHAIN_V2 = SpecConfig("EAGLE3", num_steps=3, topk=1, num_draft_tokens=4, spec_v2=True)


@pytest.fixture(scope="module")
def real_wi() -> wb.studies.WhatIf:
    return wb.what_if(
        REAL,
        baseline="llama3-8b-baseline",
        template="llama3-8b-eagle3",
        topk=(1, 4),
        num_steps=(3,),
        num_draft_tokens=(4, 16),
        spec_v2=(False, True),
        concurrency_levels=(1, 16, 72),
        requests_per_level=72,
        max_new_tokens=16,
    )


def test_every_what_if_row_carries_its_regimes_held_out_error(real_wi) -> None:
    profile = load_profile(REAL)
    held = check_prediction(profile, CHAIN_V2, [16], metric="spec/baseline ratio")
    assert held.checked, "the real-engine profile has a chain spec v2 entry at batch 16"
    ratios = real_wi.ratios().set_index(["variant", "concurrency"])
    chain = ratios.loc[("topk1-steps3-draft4-v2", 16)]
    assert (chain["held_out_mean_pct"], chain["held_out_worst_pct"], chain["held_out_n"]) == (
        held.entry.mean_abs_pct,
        held.entry.worst_abs_pct,
        held.entry.n,
    )
    assert chain["held_out_metric"] == "spec/baseline ratio" and chain["held_out_source"] == held.entry.source
    assert ratios.loc[("topk1-steps3-draft4-v1", 16), "held_out_source"] == UNCHECKED  # no spec v1 entry
    whole = check_prediction(profile, CHAIN_V2, [1, 16, 72], metric="spec/baseline ratio")
    crossing = real_wi.crossover_table().set_index("variant").loc["topk1-steps3-draft4-v2"]
    assert crossing["held_out_source"] == whole.source()  # every level of the configuration, the least trusted
    if whole.unchecked:  # the real-engine tables stop at batch 64: a level beyond is said to be unchecked
        assert ratios.loc[("topk1-steps3-draft4-v2", 72), "held_out_source"] == UNCHECKED
        assert whole.source().endswith(f"batch 72 {UNCHECKED}")
    best = real_wi.best_table()
    assert best["held_out_kind"].isin(["held out", "in-sample", "not checked"]).all()
    assert best["held_out_source"].str.len().min() > 0
    policy = real_wi.policy()
    assert policy["held_out_source"].str.len().min() > 0 and {"held_out_mean_pct", "held_out_n"} <= set(policy)
    regimes = real_wi.held_out_table().set_index("regime")
    assert list(regimes.index)[0] == "dense plain decoding"
    assert regimes.loc["dense plain decoding", "held_out_kind"] == "in-sample"  # fitted on the baseline points
    assert regimes.loc["dense chain (spec v1)", "held_out_source"] == UNCHECKED
    line = next(x for x in real_wi.verdict().splitlines() if x.startswith("- **How far to trust it**"))
    assert held.entry.source.split(" (")[0] in line and "dense chain (spec v1) not checked" in line
    for stem, chart in real_wi.charts().items():  # the charts' subtitles say it too
        title = chart.to_dict().get("title") or next(
            layer["title"] for layer in chart.to_dict()["layer"] if layer.get("title")
        )
        assert title["subtitle"][2].startswith("how far to trust it: dense plain decoding "), stem


def test_a_profile_without_a_held_out_table_says_so_everywhere() -> None:
    wi = wb.what_if(
        "seed-pcie-8gpu",
        topk=(1,),
        num_steps=(1, 2),
        num_draft_tokens=(2, 3),
        spec_v2=(True,),
        concurrency_levels=(1, 16),
        requests_per_level=16,
        max_new_tokens=16,
    )
    for table in (wi.ratios(), wi.crossover_table(), wi.best_table(), wi.policy(), wi.held_out_table()):
        assert set(table["held_out_source"]) == {UNCHECKED} and table["held_out_mean_pct"].isna().all()
    assert "- **How far to trust it**: not checked against a real engine: profile seed-pcie-8gpu" in wi.verdict()
    assert wi.trust_subtitle() == f"{UNCHECKED} (profile seed-pcie-8gpu has no held-out table)"
    with pytest.raises(dataclasses.FrozenInstanceError):
        wi.tables = wi.tables  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        wi.tables.policy = pd.DataFrame()  # type: ignore[misc]
    copy = wi.policy()
    copy.loc[:, "settings"] = "changed"
    assert "changed" not in set(wi.policy()["settings"])  # the notebook gets a copy, the table stays as computed


def _fixture_frames() -> tuple[pd.DataFrame, pd.DataFrame, list[dict], dict]:
    stored = wb.load_dynamic_disable(FIXTURE, progress=False)
    return stored.levels, stored.requests, [dict(m) for m in stored.manifests], dict(stored.settings)


def test_the_policy_studys_recommendations_carry_the_held_out_error_where_they_draft() -> None:
    stored = wb.load_dynamic_disable(FIXTURE, progress=False)  # seed-pcie-8gpu: no held-out table
    table = stored.policy_table()
    assert set(table["held_out_source"]) == {UNCHECKED}
    assert "the threshold: dense chain (spec v2) at batch 1-4: not checked against a real engine" in stored.verdict()
    assert stored.trust_subtitle() == [f"how far to trust it: threshold {UNCHECKED}; adaptive tiers {UNCHECKED}"]
    # the same sweep as if simulated on the real-engine profile: its spec v2 chain entry covers batch 1-4
    levels, requests, manifests, settings = _fixture_frames()
    for m in manifests:
        m["simulation"] = {**m["simulation"], "profile": REAL}
    study = PolicyStudy.from_frames(levels, requests, manifests, "baseline", settings)
    held = check_prediction(load_profile(REAL), CHAIN_V2, [1, 4], metric="spec/baseline ratio")
    rows = study.policy_table().set_index("format")
    threshold = rows.loc["threshold (no drafting above N)"]
    assert (threshold["held_out_mean_pct"], threshold["held_out_worst_pct"], threshold["held_out_n"]) == (
        held.entry.mean_abs_pct,
        held.entry.worst_abs_pct,
        held.entry.n,
    )
    assert threshold["held_out_source"] == held.entry.source
    assert rows.loc["vLLM", "held_out_source"] == held.entry.source  # the tiers draft with a spec v2 chain too
    assert f"the threshold: {held.words()}" in study.verdict()
    # measured on a real engine: no model stands between the sweep and the recommendation
    real = PolicyStudy.from_frames(levels.assign(simulated=False), requests, manifests, "baseline", settings)
    assert set(real.policy_table()["held_out_kind"]) == {"measured"} and real.trust_subtitle() == []
    assert "- **How far to trust it**: measured on a real engine" in real.verdict()


def test_the_policy_study_is_a_frozen_value_and_new_runs_make_a_new_one() -> None:
    stored = wb.load_dynamic_disable(FIXTURE, progress=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        stored.tables = stored.tables  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        stored.runs["threshold"].levels = None  # type: ignore[misc]
    alone = stored.with_runs({"threshold": stored.runs["threshold"]})
    assert sorted(stored.runs) == ["adaptive tiers", "threshold"] and list(alone.runs) == ["threshold"]
    assert set(alone.gains()["policy"]) == {"threshold"} and set(stored.gains()["policy"]) == {
        "threshold",
        "adaptive tiers",
    }
    measured = stored.runs["threshold"].levels
    unmeasured = stored.with_runs({"threshold": dataclasses.replace(stored.runs["threshold"], levels=None)})
    assert set(unmeasured.gains()["agreement"]) == {"not run"}
    again = unmeasured.with_measured("threshold", measured)
    pd.testing.assert_frame_equal(
        again.gains().query("policy == 'threshold'").reset_index(drop=True),
        stored.gains().query("policy == 'threshold'").reset_index(drop=True),
    )
    with pytest.raises(wb.errors.ConfigError, match="no policy 'other' written"):
        stored.with_measured("other", measured)
