"""The policy study (workbench/studies/_policy_study.py, and writing its policies: workbench/sweeps/_policy_sweep.py) on a stored sweep of the simulated engine (tests/fixtures/dynamic_disable).

The fixture was made by a real ``wb.dynamic_disable`` run (its README says how); these tests read it and
check what the study derives, writes and draws, without sweeping. The derived adaptive variant is parsed by
the simulated server's own flag parser, as a launch would.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import pytest

import workbench as wb
from workbench.errors import ConfigError
from workbench.sim import load_profile, variant_config
from workbench.sweeps import measure_policies, write_policies
from workbench.variants import load_variant
from report_page import page_problems

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "dynamic_disable" / "policies"


@pytest.fixture(scope="module")
def study() -> wb.PolicyStudy:
    return wb.load_dynamic_disable(FIXTURE, progress=False)


def test_stored_study_has_its_sweep_and_measured_policies(study: wb.PolicyStudy) -> None:
    assert study.variants == ["baseline", "eagle3-topk4", "eagle3-topk1-steps1", "eagle3-topk1-v2"]
    assert study.repeats == 2 and sorted(study.runs) == ["adaptive tiers", "threshold"]
    assert study.topk_variants(1) == {"eagle3-topk1-steps1": 1, "eagle3-topk1-v2": 2}
    assert study.settings["baseline"] == {"topk": None, "num_steps": None, "gpus": 8}
    for run in study.runs.values():
        assert run.levels is not None and len(run.levels) == 3 * 2  # 3 levels x 2 repeats


def test_threshold_tiers_and_schedules_agree(study: wb.PolicyStudy) -> None:
    t = study.threshold()
    tiers = study.tiers()
    assert t.kind == "threshold" and t.no_draft_above in (1, 4)
    policy = study.sglang_policy()
    assert policy.kind == "adaptive_tiers"
    assert list(policy.config) == [str(x.start) for x in tiers]
    schedule = study.vllm_schedule()
    assert schedule[0][0] == 1 and schedule[-1][1] == 32
    # the last measured level goes to the baseline in both forms, as the threshold says
    assert tiers[-1].candidate_steps == (0,) and schedule[-1][2] == 0
    table = study.policy_table()
    assert list(table["format"]) == [
        "threshold (no drafting above N)",
        "SGLang 0.5.12",
        "SGLang 0.5.16",
        "SGLang 0.5.23",
        "vLLM",
    ]
    assert table.loc[1, "for"] == "threshold"  # 0.5.12 has adaptive speculation, but no tiers


def test_every_derived_policy_stops_drafting_where_the_headline_says(study: wb.PolicyStudy) -> None:
    """Issue 33: "no drafting above 16" beside SGLang tiers and a vLLM schedule drafting up to 31 (the switch
    between two measured levels placed at the lower one by the threshold, at the upper one by the tiers)."""
    t = study.threshold()
    assert (t.spec, t.no_draft_above) == ("eagle3-topk1-v2", 4)  # levels 1, 4, 32
    assert study.vllm_schedule() == [[1, 4, 2], [5, 32, 0]]  # was [[1, 31, 2], [32, 32, 0]]
    assert list(study.sglang_policy().config) == ["1", "5"]
    opening = wb.policy_opening(study)
    assert "Draft with `eagle3-topk1-v2` up to 4 running requests" in opening and "instead" not in opening
    assert "with 64 output tokens per request" in opening and "spec_vs_baseline" in opening
    first = study.verdict().splitlines()[1]
    assert first.startswith("- **No drafting above 4 running requests**, drafting with eagle3-topk1-v2: ")
    assert first.lower().count("no drafting above 4") == 1  # the rule said once, not again by its description


def test_gains_pair_predicted_and_measured_with_intervals(study: wb.PolicyStudy) -> None:
    g = study.gains()
    assert set(g["policy"]) == {"threshold", "adaptive tiers"}
    assert len(g) == 2 * 2 * 3  # policies x (always-off, always-on) x levels
    assert (g["n"] == 2).all() and g["measured_gain"].notna().all()
    assert set(g["agreement"]) == {"not tested: 2 repeats"}  # the stored study has 2 repeats: below the rule
    # where a policy runs the baseline, its predicted gain over always-off is exactly 1
    off = g[(g["against"] == "always-off (baseline)") & (g["concurrency"] == 32)]
    assert off["predicted_gain"].tolist() == pytest.approx([1.0, 1.0])
    both = study.ratio_summary()
    assert set(both.loc[both["metric"] == "mean_tpot_ms", "orientation"]) == {"baseline/spec"}
    assert set(both.loc[both["metric"] == "output_throughput_tok_s", "orientation"]) == {"spec/baseline"}
    text = study.verdict()
    assert text.startswith("**Verdict (SIMULATED") and "n=2 repeats" in text and "Caveats" in text


def test_goodput_objective_needs_a_target_and_then_counts_requests() -> None:
    with pytest.raises(ConfigError, match="needs a target"):
        wb.load_dynamic_disable(FIXTURE, objective="goodput", progress=False)
    s = wb.load_dynamic_disable(FIXTURE, objective="goodput", tpot_ms=50.0, progress=False)
    assert s.metric == "goodput_req_s" and s.levels["goodput_req_s"].notna().all()
    assert ((s.levels["goodput_fraction"] >= 0) & (s.levels["goodput_fraction"] <= 1)).all()
    s.threshold()  # the envelope and the threshold work on goodput like on any level column
    g = s.gains()  # the measured policy runs get goodput from their own requests
    assert g["measured_gain"].notna().any() or set(g["agreement"]) == {"a value is 0: no ratio"}


def test_charts_are_aggregated_and_labelled(study: wb.PolicyStudy) -> None:
    charts = study.charts()
    assert sorted(charts) == ["envelope", "gains", "pareto", "ratios"]
    for stem, chart in charts.items():
        spec = chart.to_dict()
        rows = sum(len(v) for v in spec.get("datasets", {}).values())
        assert 0 < rows < 5000, stem
        assert "SIMULATED" in json.dumps(spec["title"] if "title" in spec else spec), stem
    colours = json.dumps(charts["envelope"].to_dict())
    assert '"domain": ["baseline", "eagle3-topk4"' in colours and '"range": ["#9a9a9a", "#4e79a7"' in colours  # grey
    slid = study.envelope_chart(no_draft_above=1).to_dict()
    assert "no drafting above 1" in json.dumps(slid)
    gains = study.threshold_gains(["eagle3-topk1-v2"], 1)
    assert gains.attrs["spec"] == "eagle3-topk1-v2" and set(gains["against"]) == {
        "always-off (baseline)",
        "always-on (eagle3-topk1-v2)",
    }


def test_written_policies_load_and_the_adaptive_one_parses_as_the_simulator_would(tmp_path: Path) -> None:
    stored = wb.load_dynamic_disable(FIXTURE, progress=False)
    study = write_policies(stored, tmp_path)  # a new study whose runs are the policies written here
    assert stored.runs["threshold"].path.parent == FIXTURE  # the stored study is unchanged
    threshold, adaptive = study.runs["threshold"], study.runs["adaptive tiers"]
    assert threshold.path.parent == tmp_path and threshold.levels is None
    v = load_variant(threshold.path)
    assert v.sim_policy == {"spec_off_above": study.threshold().no_draft_above}
    a = load_variant(adaptive.path)
    assert a.sglang_version == "0.5.16" and a.flags["speculative-adaptive"] is True
    assert json.loads(Path(a.flags["speculative-adaptive-config"]).read_text()) == study.sglang_policy().config
    cfg = variant_config(load_profile("seed-pcie-8gpu"), adaptive.path)
    assert cfg.adaptive_config == study.sglang_policy().config
    assert not math.isnan(float(cfg.spec.num_steps))
    with pytest.raises(ConfigError, match="no sweep settings"):
        measure_policies(study)


@pytest.mark.e2e
def test_notebook_regenerates_under_papermill_from_the_stored_study(tmp_path: Path) -> None:
    """notebooks/dynamic_disable.ipynb end to end (a real kernel), reading the fixture instead of sweeping."""
    from workbench.report import run_notebook

    root = Path(__file__).resolve().parents[1]
    result = run_notebook(
        root / "notebooks" / "dynamic_disable.ipynb",
        out_dir=tmp_path / "out",
        parameters={
            "stored_study": "tests/fixtures/dynamic_disable/policies",  # as a user gives it
            "report_dir": str(tmp_path / "charts"),
        },
        cell_timeout_s=300,
    )
    page = result.html.read_text()
    assert "Verdict (SIMULATED" in page and "speculative-adaptive-config" in page
    assert "reading sweep runs" in page  # tqdm.auto as text under papermill (a widget in JupyterLab)
    # issue 33: no JSON print, no placeholder (nor section) for the JupyterLab panel, no repeated subtitle block
    assert page_problems(result.html, result.executed) == []
    assert "live in JupyterLab only" not in page and "Explore (JupyterLab)" not in page
    # its tables through the one formatter: the envelope's margin a percentage, no NaN, no row numbers
    envelope = page[page.index("<th>runner up</th>") :]
    envelope = envelope[: envelope.index("</table>")]
    assert re.search(r"<td>[+-]\d+(\.\d)?%</td>", envelope) and not re.search(r"<td>0\.\d{3,}</td>", envelope)
    assert "NaN" not in page and "<th>0</th>" not in page
    # the policies' files: each generated name explained, each path relative to the project, none absolute
    assert "ends in the threshold" in page and "SHA-256" in page
    assert "tests/fixtures/dynamic_disable/policies/adaptive-tiers-6f567eff.toml" in page
    assert str(root) not in page, "the report prints an absolute path of this machine"
    assert sorted(p.name for p in result.charts) == sorted(
        f"dynamic_disable_{stem}.{fmt}" for stem in ("envelope", "gains", "pareto", "ratios") for fmt in ("png", "svg")
    )


def test_a_threshold_without_a_patch_is_not_run_on_a_real_engine(tmp_path: Path) -> None:
    written = write_policies(wb.load_dynamic_disable(FIXTURE, progress=False), tmp_path)
    study = written.with_runs({"threshold": written.runs["threshold"]})
    assert not study.runs["threshold"].variant.patches  # eagle3-topk1-v2 is spec v2: no patch covers it
    bench = {"host": "local", "engine": "sglang", "runs_dir": str(tmp_path / "runs")}
    study = dataclasses.replace(study, tables=dataclasses.replace(study.tables, bench=bench))
    with pytest.warns(UserWarning, match="would run it always-on; not run"):
        assert measure_policies(study) is study  # nothing measured: the same study back
    assert not (tmp_path / "runs").exists()
