"""Calibration: fewer terms than points, recovery of a known term, leave-one-out, the shipped fits,
and the sources of every number that is not fitted."""

from __future__ import annotations

import dataclasses
import re
import tomllib

import pytest

from workbench.bench import ClosedLoop
from workbench.errors import ConfigError
from workbench.paths import PACKAGE_ROOT
from workbench.sim import _calibrate as cal
from workbench.sim import _offline_figures as offline
from workbench.sim._predict import PredictionPlan
from workbench.sim._profiles import load_profile

H100 = load_profile("h100-llama3-8b-eagle3")
#: A tiny workload so a fit runs in a second or two.
TINY = PredictionPlan(
    ClosedLoop(concurrency_levels=(1, 4), requests_per_level=6, max_new_tokens=24, seed=0), prompt_lengths=(64, 96)
)


def _points(predictor: cal.Predictor, efficiency) -> list[cal.Point]:
    """Synthetic 'measurements' made by the model itself with known efficiency terms."""
    shape = [
        cal.Point("b1", "llama3-8b-baseline", "output_tok_s", 1.0, 1),
        cal.Point("e1", "llama3-8b-eagle3", "output_tok_s", 1.0, 1),
        cal.Point("b4", "llama3-8b-baseline", "per_request_tok_s", 1.0, 4),
        cal.Point("s4", "llama3-8b-eagle3", "speedup", 1.0, 4, baseline="llama3-8b-baseline"),
    ]
    values = predictor.predict(shape, efficiency)
    return [dataclasses.replace(p, value=v) for p, v in zip(shape, values)]


def test_fit_needs_fewer_terms_than_points() -> None:
    predictor = cal.Predictor(H100, TINY)
    pts = _points(predictor, H100.physics.efficiency)[:2]
    with pytest.raises(ConfigError, match="fewer terms than points"):
        cal.fit(H100, pts, terms=("hbm_efficiency", "cpu_overhead_ms"), predictor=predictor)
    with pytest.raises(ConfigError, match="1 to 3"):
        cal.fit(
            H100,
            pts * 3,
            terms=("hbm_efficiency", "cpu_overhead_ms", "flops_efficiency", "cpu_per_request_ms"),
            predictor=predictor,
        )
    with pytest.raises(ConfigError, match="not fittable"):
        bad = H100.path.read_text().replace('terms = ["hbm_efficiency", "cpu_overhead_ms"]', 'terms = ["alpha"]')
        path = PACKAGE_ROOT / "data" / "profiles" / "_test_bad_terms.toml"
        try:
            path.write_text(bad)
            load_profile(path)
        finally:
            path.unlink()


def test_fit_recovers_known_terms_and_reports_leave_one_out() -> None:
    predictor = cal.Predictor(H100, TINY)
    truth = dataclasses.replace(H100.physics.efficiency, hbm_efficiency=0.62, cpu_overhead_ms=1.7)
    pts = _points(predictor, truth)
    start = dataclasses.replace(truth, hbm_efficiency=0.9, cpu_overhead_ms=0.6)
    result = cal.fit(H100, pts, terms=("hbm_efficiency", "cpu_overhead_ms"), predictor=predictor, start=start)
    assert result.values["hbm_efficiency"] == pytest.approx(0.62, rel=0.03)
    assert result.values["cpu_overhead_ms"] == pytest.approx(1.7, rel=0.1)
    assert result.max_abs_residual < 0.01
    assert result.efficiency.flops_efficiency == truth.flops_efficiency  # nothing else moves
    rows = cal.leave_one_out(
        H100, pts, terms=("hbm_efficiency", "cpu_overhead_ms"), predictor=predictor, start=result.efficiency
    )
    assert [r["point"] for r in rows] == [p.name for p in pts]
    for r in rows:
        assert set(r) >= {
            "point",
            "measured",
            "loo_predicted",
            "loo_error",
            "loo_hbm_efficiency",
            "loo_cpu_overhead_ms",
        }
        assert abs(r["loo_error"]) < 0.05  # the model made these points: every one is predictable without it


def test_level_figures_match_the_benchmark_summary() -> None:
    predictor = cal.Predictor(H100, TINY)
    cfg = predictor._config("llama3-8b-eagle3")
    rows = offline.offline_level(
        H100,
        cfg.spec,
        cost=H100.cost_for(cfg.args),
        concurrency=3,
        prompt_lengths=(50, 80),
        max_new_tokens=20,
        num_requests=7,
    )
    fast, slow = offline.level_figures(rows), offline.level_stats(rows)
    assert fast == pytest.approx(slow)


def test_points_from_a_tidy_levels_table(tmp_path) -> None:
    path = tmp_path / "levels.csv"
    path.write_text(
        "run_id,variant,concurrency,output_throughput_tok_s,mean_per_request_tok_s\n"
        "r1,baseline,1,93.0,93.0\nr1,baseline,8,440.0,55.0\n"
    )
    pts = cal.points_from_levels(path, metrics=("output_tok_s", "per_request_tok_s"))
    assert [(p.variant, p.metric, p.concurrency, p.value) for p in pts] == [
        ("baseline", "output_tok_s", 1, 93.0),
        ("baseline", "per_request_tok_s", 1, 93.0),
        ("baseline", "output_tok_s", 8, 440.0),
        ("baseline", "per_request_tok_s", 8, 55.0),
    ]
    with pytest.raises(ConfigError, match="needs a concurrency"):
        cal.Point("x", "baseline", "output_tok_s", 1.0)


def test_seed_profile_fit_holds_in_sample_and_keeps_the_signs() -> None:
    profile = load_profile("seed-pcie-8gpu")
    pts = cal.profile_points(profile)
    assert len(profile.physics.fit_terms) < len(pts) and len(profile.physics.fit_terms) <= 3
    predictor = cal.Predictor(profile)
    predicted = predictor.predict(pts, profile.physics.efficiency)
    tol = profile.calibration["fit_tolerance"]
    for p, q in zip(pts, predicted):
        assert q == pytest.approx(p.value, rel=tol), p.name
    eff = profile.physics.efficiency
    base = {c: predictor.level("baseline", c, eff) for c in (1, 2, 8, 64)}
    eagle = {c: predictor.level("eagle3-topk4", c, eff) for c in (1, 2, 8, 64)}
    assert eagle[1][1] > base[1][1]  # EAGLE-3 ahead per request at concurrency 1
    assert all(base[c][0] > eagle[c][0] for c in (2, 8, 64))  # baseline ahead above


def test_h100_profile_calibrates_on_published_points_only() -> None:
    pts = cal.profile_points(H100)
    validation = cal.profile_points(H100, "validation")
    assert {p.value for p in pts} == {158.34, 373.25, 1.38}
    assert [p.concurrency for p in validation] == [2, 4, 8, 16, 24, 32, 48, 56]
    assert not {(p.variant, p.concurrency) for p in validation} & {(p.variant, p.concurrency) for p in pts}
    assert len(H100.physics.fit_terms) < len(pts)
    spec = {name: cal.variant_config(H100, name).spec for name in ("llama3-8b-eagle3", "llama3-8b-eagle3-bs1")}
    assert (spec["llama3-8b-eagle3"].num_steps, spec["llama3-8b-eagle3"].topk) == (3, 1)  # the paper's chain of 3
    assert spec["llama3-8b-eagle3-bs1"].num_draft_tokens == 64


def test_write_efficiency_keeps_comments(tmp_path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(
        "[profile]\nname='x'\n\n[efficiency]\nhbm_efficiency = 0.8   # fitted\nflops_efficiency = 0.6  # source\n\n[fit]\nterms=[]\n"
    )
    cal.write_efficiency(path, {"hbm_efficiency": 0.654321, "cpu_overhead_ms": 1.5})
    data = tomllib.loads(path.read_text())
    assert data["efficiency"] == {"hbm_efficiency": 0.654321, "flops_efficiency": 0.6, "cpu_overhead_ms": 1.5}
    assert "# fitted" in path.read_text() and "# source" in path.read_text()


NUMBER = re.compile(r"^\s*(\w+)\s*=\s*[-+0-9.]")


@pytest.mark.parametrize("folder", ["gpus", "models"])
def test_data_sheet_and_model_files_name_their_sources(folder: str) -> None:
    files = sorted((PACKAGE_ROOT / "data" / folder).glob("*.toml"))
    assert files
    for path in files:
        text = path.read_text()
        assert re.search(r"(?i)source", text), f"{path.name} names no source"
        if folder == "gpus":  # every number of a data sheet carries its source on its line
            for line in text.splitlines():
                if NUMBER.match(line):
                    assert "#" in line, f"{path.name}: {line.strip()!r} has no source comment"


@pytest.mark.parametrize("name", ["seed-pcie-8gpu", "h100-llama3-8b-eagle3"])
def test_every_unfitted_efficiency_number_carries_its_source(name: str) -> None:
    profile = load_profile(name)
    text = profile.path.read_text()
    section = text.split("[efficiency]\n", 1)[1].split("\n[", 1)[0]
    for line in section.splitlines():
        match = NUMBER.match(line)
        if match and match.group(1) not in profile.physics.fit_terms:
            assert "#" in line, f"{name}: {line.strip()!r} is not fitted and names no source"
    dep = text.split("[deployment]\n", 1)[1].split("\n[", 1)[0]
    for line in dep.splitlines():
        if NUMBER.match(line):
            assert "#" in line, f"{name}: {line.strip()!r} names no source"


def test_fit_separates_the_per_phase_constant_from_the_host_time_per_draft_step() -> None:
    """A deep tree (8 steps) and a chain (3 steps) pay the per-phase constant alike but ``num_steps - 1`` draft
    steps apart: the fit recovers both from model-made points (``benchmarks/sim_term_candidates.py`` fits the
    same term on the published points)."""
    predictor = cal.Predictor(H100, TINY)
    truth = dataclasses.replace(H100.physics.efficiency, cpu_overhead_ms=0.6, cpu_per_draft_step_ms=0.3)
    shape = [
        cal.Point("chain1", "llama3-8b-eagle3", "output_tok_s", 1.0, 1),
        cal.Point("tree1", "llama3-8b-eagle3-bs1", "output_tok_s", 1.0, 1),
        cal.Point("chain4", "llama3-8b-eagle3", "speedup", 1.0, 4, baseline="llama3-8b-baseline"),
    ]
    pts = [dataclasses.replace(p, value=v) for p, v in zip(shape, predictor.predict(shape, truth))]
    start = dataclasses.replace(H100.physics.efficiency, cpu_overhead_ms=1.0, cpu_per_draft_step_ms=0.1)
    result = cal.fit(H100, pts, terms=("cpu_overhead_ms", "cpu_per_draft_step_ms"), predictor=predictor, start=start)
    assert result.values["cpu_overhead_ms"] == pytest.approx(0.6, rel=0.02)
    assert result.values["cpu_per_draft_step_ms"] == pytest.approx(0.3, rel=0.02)
    assert result.max_abs_residual < 1e-3
