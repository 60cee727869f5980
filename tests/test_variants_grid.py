"""Variants as templates (model, draft, TP size, GPUs as parameters) and grids of speculative settings,
checked against real SGLang releases (the cached wheels) and launched on the simulated engine."""

from __future__ import annotations

import warnings

import pytest
from typer.testing import CliRunner

import workbench as wb
from workbench.sweeps._investigation import _options
from workbench.sweeps._sweep_prep import prepare_sweep
from workbench.cli import app
from workbench.errors import ConfigError
from workbench.store import load_run
from workbench.variants import apply_parameters, check_variants, expand_grid, grid_variants, load_grid, load_variant

SMALL = "meta-llama/Llama-3.1-8B-Instruct"


def test_parameters_replace_the_files_values() -> None:
    spec = apply_parameters(
        load_variant("eagle3-topk4"), model_path=SMALL, draft_model_path="d/8b", tp_size=1, gpus="2"
    )
    assert spec.name == "eagle3-topk4" and spec.model_path == SMALL and spec.draft_model_path == "d/8b"
    assert spec.flags["tp-size"] == 1 and spec.env["CUDA_VISIBLE_DEVICES"] == "2"
    assert spec.server_flags()[:4] == ["--model-path", SMALL, "--speculative-draft-model-path", "d/8b"]
    base = apply_parameters(load_variant("baseline"), draft_model_path="d/8b", tp_size=2, gpus=[0, 1])
    assert base.draft_model_path is None and base.env["CUDA_VISIBLE_DEVICES"] == "0,1"  # draft: speculative only
    alias = apply_parameters(
        wb.load_variant("baseline").__class__("v", "m", flags={"tensor-parallel-size": 8}), tp_size=2
    )
    assert alias.flags == {"tp-size": 2}
    with pytest.raises(ConfigError, match="8 GPUs, but gpus names 2"):
        apply_parameters(load_variant("baseline"), gpus="0,1")  # the file's TP 8
    for bad in (0, "2", True):
        with pytest.raises(ConfigError, match="tp_size must be a positive whole number"):
            apply_parameters(load_variant("baseline"), tp_size=bad)
    with pytest.raises(ConfigError, match="distinct GPU indices"):
        apply_parameters(load_variant("baseline"), tp_size=1, gpus="1,1")


def test_parameters_reach_the_sweep_identity_and_the_preflight() -> None:
    default = prepare_sweep(_options("eagle3-topk4", {}))
    small = prepare_sweep(_options("eagle3-topk4", {"model_path": SMALL, "tp_size": 1}))
    assert small.variant.flags["tp-size"] == 1 and small.variant.model_path == SMALL
    assert small.identity != default.identity  # a TP-1 sweep never resumes a TP-8 one
    with pytest.raises(ConfigError, match="unknown variant parameter"):
        check_variants(["baseline"], parameters={"tp": 1}, resources=False)
    # the pair check compares what would run: TP given to both, so no tp difference is reported
    found = check_variants(["baseline", "eagle3-topk4"], parameters={"tp_size": 2}, resources=False)
    assert not [f for f in found if f.check == "pair-flag" and "tp" in str(f.flag)]
    result = CliRunner().invoke(app, ["variants", "check", "baseline", "--tp-size", "0"])
    assert result.exit_code == 2 and "tp_size must be a positive whole number" in result.output


def test_grid_points_have_deterministic_names_in_grid_order() -> None:
    grid = {"name": "eagle3", "template": "eagle3-topk4", "topk": [4, 2], "num_steps": [3], "num_draft_tokens": [8, 4]}
    names = [v.name for v in grid_variants(grid)]
    assert names == ["eagle3-t4-s3-d8", "eagle3-t4-s3-d4", "eagle3-t2-s3-d8", "eagle3-t2-s3-d4"]
    v = grid_variants(grid, parameters={"tp_size": 1})[0]
    assert v.flags["speculative-eagle-topk"] == 4 and v.flags["speculative-num-steps"] == 3
    assert v.flags["speculative-num-draft-tokens"] == 8 and v.flags["tp-size"] == 1
    assert v.draft_model_path == load_variant("eagle3-topk4").draft_model_path
    shipped = load_grid("eagle3")
    assert shipped.template == "eagle3-topk4" and len(shipped.points()) == 24
    assert (
        load_grid({"template": "eagle3-topk4", "topk": 4, "num_steps": [2], "num_draft_tokens": [8]}).name
        == "eagle3-topk4"
    )  # the prefix defaults to the template's name


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"template": "eagle3-topk4", "topk": [4], "num_steps": [2]}, "needs num_draft_tokens"),
        ({"template": "eagle3-topk4", "topk": [4], "num_steps": [2], "num_draft_tokens": [8], "tp": 1}, "unknown keys"),
        (
            {"template": "eagle3-topk4", "topk": [0], "num_steps": [2], "num_draft_tokens": [8]},
            "positive whole numbers",
        ),
        ({"template": "eagle3-topk4", "topk": [4, 4], "num_steps": [2], "num_draft_tokens": [8]}, "twice"),
        ({"template": "baseline", "topk": [4], "num_steps": [2], "num_draft_tokens": [8]}, "not speculative"),
        ("no-such-grid", "shipped grids: eagle3"),
    ],
)
def test_bad_grids_are_refused_with_the_fix(bad, message) -> None:
    with pytest.raises(ConfigError, match=message):
        grid_variants(bad)


def test_expand_grid_refuses_what_sglang_would_not_run_as_asked() -> None:
    expansion = expand_grid("eagle3")
    table = expansion.table.set_index("variant")
    assert len(table) == 24 and (table["checked_against"] == "sglang==0.5.9").all()
    # the draft tree: topk 2, num_steps 2 gives 2 + 4 = 6 candidates, so at most 7 draft tokens
    assert (
        table.loc["eagle3-t2-s2-d8", "status"] == "refused"
        and "only 6 draft candidates" in table.loc["eagle3-t2-s2-d8", "reason"]
    )
    assert table.loc["eagle3-t2-s2-d4", "status"] == "ok" and table.loc["eagle3-t4-s3-d16", "status"] == "ok"
    # topk 1: SGLang forces num_draft_tokens = num_steps + 1, so only that point runs as its name says
    assert table.loc["eagle3-t1-s2-d3", "status"] == "ok" and table.loc["eagle3-t1-s2-d8", "status"] == "refused"
    assert "forces num_draft_tokens = num_steps + 1 = 3" in table.loc["eagle3-t1-s2-d8", "reason"]
    assert len(expansion.variants) == 2 + 5 + 8 and all("refused:" in line for line in expansion.refusal_lines())


def test_grid_rules_follow_the_sglang_version() -> None:
    # spec v2 with topk > 1: an error on 0.5.9 ('Spec v2 currently only supports topk = 1'), a fallback on 0.5.12
    grid = {"name": "v2", "template": "eagle3-topk1-v2", "topk": [1, 4], "num_steps": [2], "num_draft_tokens": [3]}
    on_059 = expand_grid(grid, sglang="0.5.9").table.set_index("variant")
    assert (
        on_059.loc["v2-t4-s2-d3", "status"] == "refused"
        and "only supports topk = 1" in on_059.loc["v2-t4-s2-d3", "reason"]
    )
    assert expand_grid(grid, sglang="0.5.12").table.set_index("variant").loc["v2-t4-s2-d3", "status"] == "ok"
    with pytest.raises(ConfigError, match="every point was refused"):
        expand_grid({**grid, "topk": [4]}, sglang="0.5.9")


def test_variants_check_and_bench_take_a_grid(tmp_path) -> None:
    result = CliRunner().invoke(app, ["variants", "check", "--grid", "eagle3"])
    assert result.exit_code == 2, result.output  # refused points: bad input, as for `bench`
    assert "; grid eagle3: 9 of 24 point(s) refused" in result.output
    assert "grid eagle3: eagle3-t4-s3-d16: ok" in result.output and "eagle3-t2-s2-d8: refused: " in result.output
    bad = CliRunner().invoke(app, ["bench", "--grid", "nope", "--runs-dir", str(tmp_path)])
    assert bad.exit_code == 2 and "No grid 'nope'" in bad.output
    none = CliRunner().invoke(app, ["bench", "--runs-dir", str(tmp_path)])
    assert none.exit_code == 2 and "--grid" in none.output


def test_grid_points_launch_with_the_parameters_on_the_simulated_engine(tmp_path) -> None:
    grid = {"name": "g", "template": "eagle3-topk4", "topk": [2], "num_steps": [1], "num_draft_tokens": [2, 4]}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runs = wb.benchmark_variants(
            [],
            grid=grid,
            tp_size=4,
            concurrency_levels=[2],
            requests_per_level=2,
            max_new_tokens=8,
            time_scale=8.0,
            runs_dir=str(tmp_path),
            progress=False,
        )
    refused = [str(w.message) for w in caught if "refused by the pre-flight" in str(w.message)]
    assert len(refused) == 1 and "g-t2-s1-d4" in refused[0] and "only 2 draft candidates" in refused[0]
    assert len(runs) == 1
    m = load_run(runs[0]).manifest
    command = " ".join(m["launch_command"])
    assert m["variant"] == "g-t2-s1-d2" and m["status"] == "complete"
    assert "--tp-size 4" in command and "--speculative-eagle-topk 2" in command
    assert "--speculative-num-draft-tokens 2" in command and "--tp-size 8" not in command
