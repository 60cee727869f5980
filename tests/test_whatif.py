"""``wb.what_if``: a small grid predicted end to end, its tables, policy and charts (labelled MODEL PREDICTION)."""

from __future__ import annotations

import pytest

import workbench as wb


@pytest.fixture(scope="module")
def wi():
    return wb.what_if(
        "seed-pcie-8gpu",
        topk=(1, 4),
        num_steps=(1, 2),
        num_draft_tokens=(2, 8, 16),
        spec_v2=(False, True),
        concurrency_levels=(1, 4, 16, 64),
        requests_per_level=64,
        max_new_tokens=32,
    )


def test_grid_and_levels(wi) -> None:
    assert wi.baseline == "baseline" and wi.template == "eagle3-topk4"
    statuses = dict(zip(wi.grid_table()["status"], wi.grid_table()["combinations"]))
    assert statuses["refused"] > 0 and sum(statuses.values()) == 2 * 2 * 3 * 2
    assert len(wi.levels) == 4 * (1 + len(wi.configurations))
    assert set(wi.configurations) >= {"topk1-steps2-draft3-v2", "topk4-steps2-draft16-v1"}


def test_crossovers_best_and_policy(wi) -> None:
    xs = wi.crossover_table()
    assert set(xs["variant"]) == set(wi.configurations)
    # words, not the analysis' enum values (issue 33: `none_in_range` on the page)
    assert set(xs["crossover_kind"]) <= {
        "crosses between two levels",
        "even at a level",
        "behind at every level",
        "ahead at every level",
    }
    assert not {"none_in_range", "below_range"} & set(xs["per_request_crossover_kind"])
    best = wi.best_table()
    assert list(best["concurrency"]) == [1, 4, 16, 64]
    assert (best["gain_over_baseline"] >= 0).all()
    pol = wi.policy()
    assert pol["recommended"].sum() <= 1 and "adaptive tiers" in set(pol["policy"])
    # the threshold policy is the analysis package's rule on the predictions: its configuration is ahead of
    # the baseline at every level up to the threshold and not at the next
    thr = wi.tables.threshold
    ratios = wi.ratios()
    mine = ratios[ratios["variant"] == thr.variant].set_index("concurrency")["output_ratio"]
    assert (mine[mine.index <= thr.threshold] > 1.0).all()
    assert (mine[mine.index > thr.threshold].head(1) <= 1.0).all()
    assert (
        thr.variant
        == wb.analysis.best_threshold(
            wi.levels, baseline=wi.baseline, specs=wi.configurations, metric="output_throughput_tok_s"
        ).spec
    )
    assert "MODEL PREDICTION" in wi.findings()
    verdict = wi.verdict().splitlines()
    assert verdict[0].startswith("**Verdict** — MODEL PREDICTION (simulator offline, virtual clock; not a measurement)")
    assert verdict[2].startswith("- Recommended policy") or verdict[2] == (
        "- Recommended policy: plain decoding (no configuration beats the baseline at any level)."
    )
    crossing = [line for line in verdict if line.startswith("- Crossover")]
    if len(wi.crossover_table().dropna(subset=["crossover_concurrency"])):
        assert "between concurrency" in crossing[0] or "at concurrency" in crossing[0]
    assert verdict[-1].startswith("- **Caveats**: every figure is the simulator's")


def test_breakdown_and_charts_say_model_prediction(wi) -> None:
    table = wi.breakdown_table()
    assert (table["ms_per_output_token"] > 0).all()
    # issue 33: rows of 0 ms weights said why: the matmuls there are bound by FLOPs, their time under compute
    bound = dict(zip(zip(table["step_weights_ms"] > 0, table["step_compute_ms"] > 0), table["matmuls_bound_by"]))
    assert set(table["matmuls_bound_by"]) <= {"weight reads", "FLOPs", "both (by kernel group)"}
    assert bound.get((False, True), "FLOPs") == "FLOPs" and bound.get((True, False), "weight reads") == "weight reads"
    assert (False, True) in bound  # at concurrency 64 some configuration's matmuls are compute-bound
    charts = wi.charts()
    assert set(charts) == {"throughput", "per_request", "ratio_heatmap", "crossover", "breakdown", "policy"}
    for name, chart in charts.items():
        spec = chart.to_dict()
        title = spec.get("title") or next(layer.get("title") for layer in spec.get("layer", []) if layer.get("title"))
        assert title["subtitle"][0].startswith("MODEL PREDICTION"), name
        assert "seed-pcie-8gpu" in title["subtitle"][0], name


def test_what_if_shows_adaptive_verification_and_the_goodput_controller() -> None:
    import workbench as wb

    wi = wb.what_if(
        "h100-llama3-8b-eagle3",
        topk=[1],
        num_steps=[3],
        num_draft_tokens=[4],
        spec_v2=[True],
        concurrency_levels=[1, 64],
        requests_per_level=64,
        max_new_tokens=16,
    )
    t = wi.verify_policies(num_steps=7)
    assert set(t["policy"]) == {"static", "goodput", "adaptive_verification"}
    assert set(t["batch"]) == {1, 64} and t["configuration"].iloc[0] == "topk1-steps7-draft8-v2"
    assert t["runs_on"].str.len().min() > 0


def test_the_recommendation_is_written_as_a_grid_that_variants_check_accepts(wi, tmp_path) -> None:
    """Issue 33: the what-if recommended topk1-steps5-draft6-v2, a name no grid makes, with no step from the
    prediction to a measurement. Its recommended settings are written as grid files, points named as grids name
    them, each accepted point by point by `workbench variants check --grid` and measured by `workbench bench --grid`."""
    from typer.testing import CliRunner

    from workbench.cli import app
    from workbench.variants import load_grid

    points = wi.recommended_points()
    assert len(points), wi.policy()  # this grid's recommendation drafts at the lowest levels
    written = wi.save_grids(tmp_path)
    assert len(written) >= 1 and written["command"].str.startswith("workbench bench baseline --grid ").all()
    named = []
    for row in written.itertuples():
        grid = load_grid(row.grid)
        assert (
            row.command.endswith("--sim-profile seed-pcie-8gpu --levels 1,4,16,64 --max-new-tokens 32 --requests 64")
            and f"--grid {row.grid} " in row.command
        )
        done = CliRunner().invoke(app, ["variants", "check", "--grid", row.grid])
        assert done.exit_code == 0, done.output  # every point accepted: none refused
        for topk, steps, drafts in grid.points():
            name = f"{grid.name}-t{topk}-s{steps}-d{drafts}"
            assert f"grid {grid.name}: {name}: ok" in done.output
            named.append((name, topk, steps, drafts, grid.name.endswith("-v2")))
    wanted = {(int(r.topk), int(r.num_steps), int(r.num_draft_tokens), bool(r.spec_v2)) for r in points.itertuples()}
    assert {(t, s, d, v2) for _, t, s, d, v2 in named} == wanted  # the grids hold exactly the recommended settings
    assert all(name.startswith("eagle3-topk4-") for name, *_ in named)  # the template's name, as grids name points
