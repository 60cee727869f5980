"""The command line as a newcomer meets it (issue 33, "CLI friction"): a grid's refused points named with a
non-zero exit (and the rest measured only on request), a grid written inline as its own error suggests, one
option name per concept across verbs (the former names kept, hidden), help without ``<bool>`` placeholders or
lines broken where the source was, advice for the command line when a release does not exist, and
``variants check`` checking by default what the variants report checks. Through typer's CliRunner; the
sweeps are real simulated-engine sweeps, small and at a high time scale."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from workbench.cli import app
from workbench.report import notebook_parameters
from workbench.variants.cli import REPORT_BASELINE, REPORT_VARIANTS

runner = CliRunner()
NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
#: A grid of two points on eagle3-topk4: topk 2 x 1 step x 2 or 4 draft tokens; 4 is more than one step of a
#: topk-2 tree holds, so that point is refused (as in tests/test_variants_check_cli.py).
GRID_KEYS = 'template = "eagle3-topk4", topk = [2], num_steps = [1], num_draft_tokens = [2, 4]'
SMALL = ["--levels", "1", "--requests", "2", "--max-new-tokens", "8", "--time-scale", "20", "--no-progress"]


@pytest.fixture()
def grid_file(tmp_path: Path) -> Path:
    path = tmp_path / "small.toml"
    path.write_text(
        'name = "small"\ntemplate = "eagle3-topk4"\ntopk = [2]\nnum_steps = [1]\nnum_draft_tokens = [2, 4]\n'
    )
    return path


def test_refused_grid_points_are_named_and_nothing_is_launched_without_skip_refused(
    grid_file: Path, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    result = runner.invoke(app, ["bench", "baseline", "--grid", str(grid_file), *SMALL, "--runs-dir", str(runs)])
    assert result.exit_code == 2, result.output
    assert "grid small: small-t2-s1-d2: ok" in result.stderr
    assert "grid small: small-t2-s1-d4: refused: " in result.stderr  # named, with why
    assert "1 of 2 point(s) refused" in result.stderr and "--skip-refused" in result.stderr
    assert not runs.exists() or not list(runs.iterdir())  # nothing launched, no run opened
    alone = runner.invoke(app, ["bench", "baseline", "--skip-refused", *SMALL, "--runs-dir", str(runs)])
    assert alone.exit_code == 2 and "give --grid too" in alone.output


def test_skip_refused_measures_the_rest_and_keeps_the_crossovers(grid_file: Path, tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["bench", "baseline", "--grid", str(grid_file), "--skip-refused", *SMALL, "--runs-dir", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert "grid small: small-t2-s1-d4: refused: " in result.stderr
    assert "measuring the other 1 (--skip-refused)" in result.stderr
    assert [line.split()[0] for line in result.stdout.splitlines()[1:3]] == ["baseline", "small-t2-s1-d2"]
    assert "\ncrossovers against baseline:\n  small-t2-s1-d2, " in result.stdout  # a grid point counts as a variant
    assert len(list(tmp_path.glob("*/manifest.json"))) == 2


def test_a_grid_written_inline_is_the_same_grid(tmp_path: Path) -> None:
    for inline in (
        GRID_KEYS,
        "{" + GRID_KEYS + "}",
        '{"template": "eagle3-topk4", "topk": [2], "num_steps": [1], "num_draft_tokens": [2, 4]}',
    ):
        checked = runner.invoke(app, ["variants", "check", "--grid", inline])
        assert checked.exit_code == 2, checked.output  # its refused point, as with the file
        assert "grid eagle3-topk4: eagle3-topk4-t2-s1-d4: refused: " in checked.output
        benched = runner.invoke(app, ["bench", "baseline", "--grid", inline, *SMALL, "--runs-dir", str(tmp_path)])
        assert benched.exit_code == 2 and "eagle3-topk4-t2-s1-d2: ok" in benched.stderr, benched.output
    bad = runner.invoke(app, ["bench", "baseline", "--grid", "template = eagle3-topk4", "--runs-dir", str(tmp_path)])
    assert bad.exit_code == 2 and "write the keys of a grid file as TOML, e.g. --grid 'template = " in bad.output
    missing = runner.invoke(app, ["variants", "check", "--grid", "no-such-grid"])
    assert missing.exit_code == 2 and "shipped grids: eagle3" in missing.output
    assert 'on the command line, the mapping written inline: --grid \'template = "eagle3-topk4"' in missing.output
    assert not list(tmp_path.iterdir())


def _verbs() -> list[list[str]]:
    """Every command path of the CLI (the root, each group, each command)."""

    def walk(command: object, path: list[str]) -> list[list[str]]:
        return [path, *[p for name, sub in getattr(command, "commands", {}).items() for p in walk(sub, [*path, name])]]

    return walk(typer.main.get_command(app), [])


def _ragged(lines: list[str], width: int) -> list[str]:
    """Lines of a help description that end although the next line's first word would have fitted on them:
    a line break kept from the source, not made by wrapping (example lines, indented, are left alone)."""
    found = []
    for line, after in zip(lines, lines[1:]):
        if not line.strip() or not after.strip() or after.startswith("     ") or line.startswith("     "):
            continue
        if len(line.rstrip()) + 1 + len(after.split()[0]) < width - 2:
            found.append(f"{line.rstrip()!r} / {after.strip()!r}")
    return found


def test_help_of_every_verb_has_no_bool_placeholder_and_no_ragged_wrap() -> None:
    width, problems = 100, []
    for verb in _verbs():
        out = runner.invoke(app, [*verb, "--help"], terminal_width=width, env={"COLUMNS": str(width)}).output
        name = " ".join(verb) or "workbench"
        if "<bool>" in out:
            problems.append(f"{name}: <bool>")
        lines = out.splitlines()
        start = next(i for i, line in enumerate(lines) if "Usage:" in line)
        end = next((i for i, line in enumerate(lines) if line.startswith("╭")), len(lines))
        problems += [f"{name}: {r}" for r in _ragged(lines[start + 1 : end], width)]
        assert "]...]..." not in out and "...}..." not in out, name  # a list argument's metavar said once
    assert not problems, "\n".join(problems)


def test_one_option_name_per_concept_the_former_names_hidden_but_working() -> None:
    new = runner.invoke(
        app,
        [
            "sim",
            "predict",
            "baseline",
            "--sim-profile",
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
    old = runner.invoke(
        app,
        [
            "sim",
            "predict",
            "baseline",
            "--profile",
            "seed-pcie-8gpu",
            "--concurrency-levels",
            "1,2",
            "--requests",
            "4",
            "--max-new-tokens",
            "16",
            "--json",
        ],
    )
    assert new.exit_code == 0 and new.output == old.output, (new.output, old.output)
    both = runner.invoke(app, ["sim", "predict", "baseline", "--levels", "1", "--concurrency-levels", "1"])
    assert both.exit_code == 2 and "--concurrency-levels is the former name of --levels" in both.output
    helped = runner.invoke(app, ["sim", "predict", "--help"], terminal_width=200).output
    assert "--levels" in helped and "--sim-profile" in helped
    assert "--concurrency-levels" not in helped and "--profile " not in helped
    calibrate = runner.invoke(app, ["calibrate", "--help"], terminal_width=200).output
    assert "--tp-size" in calibrate and "--tp " not in calibrate
    for verb in (["bench"], ["variants", "check"], ["calibrate"]):  # the same concept, the same name
        assert "--tp-size" in runner.invoke(app, [*verb, "--help"], terminal_width=200).output, verb


def test_a_release_that_does_not_exist_gets_command_line_advice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    offered = tmp_path / "index"  # an index (pip's --find-links folder) that offers one release, nothing fetched
    offered.mkdir()
    (offered / "sglang-0.5.9-py3-none-any.whl").write_bytes(b"")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(offered))
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    result = runner.invoke(app, ["inspect", "get_alloc_len_per_decode", "--sglang", "0.9.99"])
    assert result.exit_code == 1, result.output
    assert "Versions the index offers near it: 0.5.9." in result.output
    assert "pip_args=" not in result.output and "find_definition(" not in result.output  # no Python-API names
    assert "workbench inspect NAME --tree PATH" in result.output
    assert f"sglang==0.9.99 -d {tmp_path / 'cache' / 'sglang' / 'wheels'}" in result.output


def test_variants_check_checks_what_the_variants_report_checks_by_default() -> None:
    declared = notebook_parameters(NOTEBOOKS / "variants.ipynb")
    assert list(REPORT_VARIANTS) == eval(declared["variants"].default)  # the notebook's literal list
    assert REPORT_BASELINE == eval(declared["baseline"].default)
    result = runner.invoke(app, ["variants", "check"])
    assert result.exit_code == 0, result.output
    assert (
        f"checking the variants report's 6 variants ({', '.join(REPORT_VARIANTS)}) against baseline-cap48"
        in result.stderr
    )
    findings = [line for line in result.stdout.splitlines() if line.startswith(("warning", "error"))]
    assert findings and all(" vs baseline-cap48 " in line for line in findings if " vs " in line)
    assert all(line.split()[1] in REPORT_VARIANTS for line in findings)
    both = runner.invoke(app, ["variants", "check", "baseline", "--all"])
    assert both.exit_code == 2 and "name variants or give --all, not both" in both.output


def test_one_time_scale_default_for_the_simulated_engine_everywhere() -> None:
    """The notebooks leave ``time_scale`` to the engine's default, as ``workbench bench`` does: no cell sets a
    number of its own, and the command's help states the one constant."""
    import ast

    import nbformat

    from workbench.engines import DEFAULT_SIM_TIME_SCALE

    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        for cell in nbformat.read(notebook, as_version=4).cells:
            if cell.cell_type != "code" or "time_scale" not in cell.source:
                continue
            for node in ast.walk(ast.parse(cell.source)):
                if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "time_scale" for t in node.targets):
                    assert isinstance(node.value, ast.Constant) and node.value.value is None, (
                        f"{notebook.name}: time_scale = {ast.unparse(node.value)} overrides the engine's default"
                    )
    helped = " ".join(runner.invoke(app, ["bench", "--help"], terminal_width=200).output.replace("│", " ").split())
    assert f"(default {DEFAULT_SIM_TIME_SCALE:g}, as in the notebooks" in helped
