"""Offline predictions: grid rules, the pure-Python level summary against the bench's, the closed
loop's two recording modes, and ``workbench sim predict``."""

from __future__ import annotations

import json
import math
import random

import pandas as pd
import pytest
from typer.testing import CliRunner

from workbench.bench import summarize_level
from workbench.cli import app
from workbench.errors import ConfigError
from workbench.sim import _configurations as C
from workbench.sim import _predict as P
from workbench.sim._engine import EngineCore
from workbench.sim._offline import simulate_closed_loop
from workbench.sim._profiles import load_profile
from workbench.sim._spec import SpecConfig

runner = CliRunner()


@pytest.fixture(scope="module")
def profile():
    return load_profile("seed-pcie-8gpu")


def test_grid_applies_sglang_059_rules() -> None:
    grid = {
        (p.topk, p.num_steps, p.num_draft_tokens, p.spec_v2): p
        for p in C.spec_grid(topk=(1, 2, 4), num_steps=(1, 2), num_draft_tokens=(2, 3, 8), spec_v2=(False, True))
    }
    assert grid[(4, 2, 8, True)].status == "refused" and "Spec v2" in grid[(4, 2, 8, True)].reason
    assert grid[(2, 1, 8, False)].status == "refused" and "candidates" in grid[(2, 1, 8, False)].reason  # 7 > 2
    assert grid[(4, 2, 8, False)].status == "ok"  # 7 <= 4 + 16
    # topk 1: SGLang sets num_draft_tokens = num_steps + 1 (the first such point is kept, the rest duplicate it)
    assert grid[(1, 2, 2, False)].status == "adjusted" and grid[(1, 2, 2, False)].name == "topk1-steps2-draft3-v1"
    assert grid[(1, 2, 3, False)].status == "duplicate" and grid[(1, 2, 8, False)].status == "duplicate"
    assert grid[(1, 2, 2, True)].name == "topk1-steps2-draft3-v2"
    with pytest.raises(ConfigError, match="candidates"):
        C.check_draft_budget(SpecConfig("EAGLE3", num_steps=1, topk=4, num_draft_tokens=6))


def test_default_grid_has_at_least_50_configurations(profile) -> None:
    configs = C.grid_configurations(profile, "eagle3-topk4", C.spec_grid())
    assert len(configs) >= 50
    assert len({c.name for c in configs}) == len(configs)
    v2 = [c for c in configs if c.spec.spec_v2]
    assert v2 and all(c.spec.topk == 1 for c in v2)
    assert all(c.args["tp_size"] == 8 and c.args["disable_custom_all_reduce"] for c in configs)  # the template's flags


def test_configuration_matches_the_shipped_variant(profile) -> None:
    shipped = C.variant_configuration(profile, "eagle3-topk1-v2")
    built = C.configuration(profile, "eagle3-topk4", topk=1, num_steps=2, num_draft_tokens=3, spec_v2=True)
    assert built.spec == shipped.spec
    assert P.predict(profile, [built], concurrency_levels=[1, 4])[1]["output_throughput_tok_s"] == pytest.approx(
        P.predict(profile, [shipped], concurrency_levels=[1, 4])[1]["output_throughput_tok_s"]
    )


@pytest.mark.parametrize("variant", ["baseline", "eagle3-topk4"])
@pytest.mark.parametrize("concurrency", [1, 8])
def test_fast_summary_equals_the_bench_summary(profile, variant: str, concurrency: int) -> None:
    config = C.variant_configuration(profile, variant)
    plan = P.prediction_plan(profile, concurrency_levels=[concurrency], max_new_tokens=64)
    rows = P.simulate_level(profile, config, plan, concurrency, chunks=True).rows
    fast = P.summarize_rows(rows)
    bench = summarize_level(pd.DataFrame(rows))
    for key, value in fast.items():
        expected = bench[key]
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(expected), key
        else:
            assert value == pytest.approx(expected, rel=1e-12), key


def test_recording_only_the_ends_changes_no_figure(profile) -> None:
    config = C.variant_configuration(profile, "eagle3-topk4")
    plan = P.prediction_plan(profile, concurrency_levels=[4], max_new_tokens=48)
    full = P.simulate_level(profile, config, plan, 4, chunks=True)
    ends = P.simulate_level(profile, config, plan, 4, chunks=False)
    strip = lambda rows: [{k: v for k, v in r.items() if k not in ("itl_ms", "tokens_per_chunk")} for r in rows]  # noqa: E731
    assert repr(strip(full.rows)) == repr(strip(ends.rows))
    assert (full.decode_iterations, full.spec_iterations, full.decode_batch_sum) == (
        ends.decode_iterations,
        ends.spec_iterations,
        ends.decode_batch_sum,
    )
    assert full.rows[0]["itl_ms"] and ends.rows[0]["itl_ms"] == []


def test_closed_loop_keeps_its_concurrency(profile) -> None:
    config = C.variant_configuration(profile, "baseline")
    engine = EngineCore(
        cost=profile.cost_for(config.args),
        acceptance=profile.acceptance,
        spec=config.spec,
        max_running_requests=64,
        rng=random.Random(0),
    )
    result = simulate_closed_loop(engine, prompt_tokens=[300] * 12, concurrency=3, max_new_tokens=20, chunks=False)
    assert len(result.rows) == 12 and all(r["output_tokens"] == 20 for r in result.rows)
    assert result.mean_decode_batch <= 3.0 and result.duration_s == max(r["end_s"] for r in result.rows)


def test_predict_rows_carry_the_level_tables_keys_and_a_breakdown(profile) -> None:
    rows = P.predict(
        profile, ["baseline", "eagle3-topk4"], concurrency_levels=[1, 16], requests_per_level=16, max_new_tokens=32
    )
    assert [(r["variant"], r["concurrency"]) for r in rows] == [
        ("baseline", 1),
        ("baseline", 16),
        ("eagle3-topk4", 1),
        ("eagle3-topk4", 16),
    ]
    for r in rows:
        for key in (
            "output_throughput_tok_s",
            "mean_per_request_tok_s",
            "mean_ttft_ms",
            "p99_ttft_ms",
            "mean_tpot_ms",
            "accept_length",
            "num_requests",
            "duration_s",
            "simulated",
        ):
            assert key in r
        parts = sum(r[f"step_{p}_ms"] for p in P.STEP_PARTS)
        assert parts == pytest.approx(r["step_total_ms"])
        assert r["num_requests"] == 16 and r["simulated"] is True
    assert math.isnan(rows[0]["accept_length"]) and rows[2]["accept_length"] > 1.5
    assert rows[2]["step_draft_ms"] > 0 and rows[0]["step_draft_ms"] == 0
    # the decode step the breakdown costs is the one the level ran (mean running batch, mean KV)
    assert rows[1]["step_total_ms"] == pytest.approx(rows[1]["mean_decode_step_ms"], rel=0.1)


def test_cli_predict_json(profile) -> None:
    result = runner.invoke(
        app,
        [
            "sim",
            "predict",
            "baseline",
            "eagle3-topk1-v2",
            "--profile",
            "seed-pcie-8gpu",
            "--levels",
            "1,2",
            "--requests",
            "4",
            "--max-new-tokens",
            "16",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["simulated"] is True and data["levels"] == [1, 2]
    assert [(r["variant"], r["concurrency"]) for r in data["rows"]] == [
        ("baseline", 1),
        ("baseline", 2),
        ("eagle3-topk1-v2", 1),
        ("eagle3-topk1-v2", 2),
    ]
    assert data["rows"][0]["accept_length"] is None and data["rows"][2]["accept_length"] > 1


def test_cli_predict_tables_and_errors() -> None:
    result = runner.invoke(
        app, ["sim", "predict", "baseline", "--levels", "1", "--requests", "2", "--max-new-tokens", "8"]
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("MODEL PREDICTION") and "output tok/s" in result.output and "comm" in result.output
    bad = runner.invoke(app, ["sim", "predict", "no-such-variant"])
    assert bad.exit_code == 2 and "Unknown variant" in bad.output and "Traceback" not in bad.output
    bad = runner.invoke(app, ["sim", "predict", "baseline", "--levels", "1,x"])
    assert bad.exit_code == 2
    for levels, message in (
        ("1000000", "above 16,384 requests in flight"),
        ("1,1", "names 1 more than once"),
        ("1,,2", "--levels has an empty part"),
    ):
        bad = runner.invoke(app, ["sim", "predict", "baseline", "--levels", levels])
        assert bad.exit_code == 2 and message in bad.output and "Traceback" not in bad.output, bad.output


def test_sim_predict_help_imports_no_heavy_package() -> None:
    from tests.test_cli import _heavy_imports

    code = (
        "import contextlib, io\nfrom workbench.cli import app\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    app(['sim', 'predict', '--help'], prog_name='workbench')"
    )
    assert _heavy_imports(code) == []


def test_output_lengths_drawn_per_request_break_the_lockstep_of_equal_lengths(tmp_path) -> None:
    """Equal output lengths keep a closed loop in lockstep: at concurrency 2 both requests finish in one
    iteration and the next two are prefilled together, so TTFT is two prompts' prefill (the seed's 450 ms
    at c=2 against 228 ms at c=1). Lengths drawn from a workload's distribution desynchronise them."""
    import dataclasses

    prof = load_profile("seed-pcie-8gpu")
    cfg = C.variant_configuration(prof, "baseline")
    fixed = P.prediction_plan(prof, concurrency_levels=[1, 2])
    spread = dataclasses.replace(
        fixed, output_lengths=tuple(range(128, 385, 16)), load=dataclasses.replace(fixed.load, max_new_tokens=384)
    )
    ttft = {}
    for name, plan in (("fixed", fixed), ("spread", spread)):
        for c in (1, 2):
            rows = P.simulate_level(prof, cfg, plan, c).rows
            ttft[name, c] = sum(r["ttft_ms"] for r in rows) / len(rows)
            if name == "spread":
                assert len({r["output_tokens"] for r in rows}) > 1
                assert all(128 <= r["output_tokens"] <= 384 for r in rows)
    assert ttft["fixed", 2] > 1.8 * ttft["fixed", 1]  # lockstep: two prompts prefilled together
    assert ttft["spread", 2] < 1.25 * ttft["spread", 1]  # desynchronised: about one prompt's prefill


def test_output_lengths_come_from_the_workload_and_bad_ones_are_refused(tmp_path) -> None:
    src = (load_profile("seed-pcie-8gpu").path).read_text()
    good = tmp_path / "spread.toml"
    good.write_text(src.replace("[workload]\n", "[workload]\noutput_tokens = [100, 200, 300]\n", 1))
    plan = P.prediction_plan(load_profile(good))
    assert plan.output_lengths == (100, 200, 300) and plan.max_new_tokens == 300
    assert set(plan.outputs(30)) <= {100, 200, 300} and plan.mean_output_tokens == 200
    assert P.prediction_plan(load_profile(good), max_new_tokens=64).outputs(5) == 64  # an explicit count wins
    bad = tmp_path / "bad.toml"
    bad.write_text(src.replace("[workload]\n", "[workload]\noutput_tokens = [0, 'x']\n", 1))
    with pytest.raises(ConfigError, match="output_tokens must be a list"):
        P.prediction_plan(load_profile(bad))
    seed = load_profile("seed-pcie-8gpu")
    engine = EngineCore(
        cost=seed.cost_for({}),
        acceptance=seed.acceptance,
        spec=SpecConfig(),
        max_running_requests=4,
        rng=random.Random(0),
    )
    with pytest.raises(ValueError, match="one per prompt"):
        simulate_closed_loop(engine, prompt_tokens=[10, 20], concurrency=1, max_new_tokens=[5])
