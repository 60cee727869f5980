"""``workbench variants check`` from a newcomer's side: which baseline each speculative variant is
compared with by default, grid points refused counting as bad input, and a misspelt name answered
the same way as by ``workbench bench`` (exit status 2, with the closest names)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from workbench.cli import app
from workbench.variants import default_baseline, load_variant

runner = CliRunner()


def test_each_speculative_variant_meets_a_baseline_of_its_own_model_and_tp_size() -> None:
    result = runner.invoke(app, ["variants", "check", "llama3-8b-eagle3", "qwen3-30b-a3b-eagle3-3x3-4"])
    assert result.exit_code == 0, result.output
    assert "llama3-8b-eagle3 vs llama3-8b-baseline " in result.output
    assert "qwen3-30b-a3b-eagle3-3x3-4 vs qwen3-30b-a3b-baseline " in result.output
    assert " vs baseline " not in result.output and "the target models differ" not in result.output
    assert "--tensor-parallel-size differs" not in result.output
    # a baseline named on the command line is every variant's, as asked
    named = runner.invoke(app, ["variants", "check", "llama3-8b-eagle3", "--baseline", "baseline"])
    assert "llama3-8b-eagle3 vs baseline  model_path: the target models differ" in named.output
    helped = " ".join(runner.invoke(app, ["variants", "check", "--help"]).output.replace("│", " ").split())
    assert "of its own model and TP size" in helped


def test_the_default_prefers_the_checked_plain_variant_then_a_shipped_baseline() -> None:
    spec, cap48, base = load_variant("eagle3-topk4"), load_variant("baseline-cap48"), load_variant("baseline")
    assert default_baseline(spec, [cap48, spec], [base]).name == "baseline-cap48"
    assert default_baseline(spec, [spec], [cap48, base]).name == "baseline"  # by name among the shipped
    assert default_baseline(load_variant("llama3-8b-eagle3"), [spec], [cap48, base]) is None


def test_a_variant_without_a_plain_sibling_is_named_not_compared(tmp_path: Path) -> None:
    path = tmp_path / "lonely.toml"
    path.write_text(
        'name = "lonely"\nsglang_version = "0.5.9"\nmodel_path = "org/Only-Model"\n'
        'draft_model_path = "org/Only-Draft"\n[flags]\ntp-size = 1\nspeculative-algorithm = "EAGLE3"\n'
        "speculative-num-steps = 3\nspeculative-eagle-topk = 1\nspeculative-num-draft-tokens = 4\n"
    )
    result = runner.invoke(app, ["variants", "check", str(path), "--show", "info"])
    assert result.exit_code == 0, result.output
    assert (
        "info    lonely  not compared with a baseline: no plain variant of org/Only-Model at TP 1 among those "
        "checked or shipped. Fix: write one (e.g. NAME-baseline.toml) or pass --baseline NAME"
    ) in result.output
    assert " vs " not in result.output


def test_refused_grid_points_count_and_exit_2(tmp_path: Path) -> None:
    grid = tmp_path / "small.toml"
    grid.write_text(
        'name = "small"\ntemplate = "eagle3-topk4"\ntopk = [2]\nnum_steps = [1]\nnum_draft_tokens = [2, 4]\n'
    )
    result = runner.invoke(app, ["variants", "check", "--grid", str(grid)])
    assert result.exit_code == 2, result.output
    assert "grid small: small-t2-s1-d2: ok" in result.output
    assert "grid small: small-t2-s1-d4: refused: " in result.output
    last = result.output.splitlines()[-1]
    assert "; grid small: 1 of 2 point(s) refused" in last and last.startswith("0 error(s)")
    as_json = runner.invoke(app, ["variants", "check", "--grid", str(grid), "--json"])
    assert as_json.exit_code == 2 and isinstance(json.loads(as_json.stdout), list)
    assert as_json.stderr.splitlines()[-1] == "grid small: 1 of 2 point(s) refused"
    assert "grid small: small-t2-s1-d4: refused: " in as_json.stderr
    clean = tmp_path / "clean.toml"
    clean.write_text('name = "clean"\ntemplate = "eagle3-topk4"\ntopk = [2]\nnum_steps = [1]\nnum_draft_tokens = [2]\n')
    ok = runner.invoke(app, ["variants", "check", "--grid", str(clean)])
    assert ok.exit_code == 0 and "refused" not in ok.output


def test_a_misspelt_name_exits_2_with_the_closest_names_in_both_commands(tmp_path: Path) -> None:
    checked = runner.invoke(app, ["variants", "check", "eagle3-topk5"])
    benched = runner.invoke(app, ["bench", "eagle3-topk5", "--runs-dir", str(tmp_path)])
    for result in (checked, benched):
        assert result.exit_code == 2, result.output
        assert "error: Unknown variant 'eagle3-topk5' (no eagle3-topk5.toml in " in result.output
        assert (
            "data/variants; a name is looked up there, or give a .toml file). Did you mean eagle3-topk4"
            in result.output
        )
        assert "Known variants: adaptive, baseline," in result.output and "Traceback" not in result.output
    assert checked.output == benched.output and not list(tmp_path.iterdir())
    baseline = runner.invoke(app, ["variants", "check", "llama3-8b-eagle3", "--baseline", "basline"])
    assert baseline.exit_code == 2 and "Did you mean baseline or baseline-cap48?" in baseline.output
    missing = runner.invoke(app, ["variants", "check", str(tmp_path / "nope.toml")])
    assert missing.exit_code == 2 and f"(no file {tmp_path / 'nope.toml'})" in missing.output


def test_an_sglang_that_is_not_a_release_is_bad_input_exit_2_as_the_help_says() -> None:
    for bad in ("abc", "latest", "0.5.9-final"):
        result = runner.invoke(app, ["variants", "check", "baseline", "--sglang", bad])
        assert result.exit_code == 2, (bad, result.output)
        assert f"--sglang: SGLang version {bad!r} is not a release version" in result.output
        assert "e.g. --sglang 0.5.9" in result.output and "0 error(s)" not in result.output
    helped = " ".join(runner.invoke(app, ["variants", "check", "--help"]).stdout.replace("│", " ").split())
    assert "Exit status 2 for bad input" in helped and "--sglang that is not a release version" in helped
