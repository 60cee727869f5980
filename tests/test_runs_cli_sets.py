"""``workbench runs list`` and ``runs compare`` over runs that are not like for like: a kind that says
simulated, units named for what they count, sets of runs sharing time scale, workload and requests per
level, a note where runs differ in any of them, and every line within a 100-column terminal. Real
simulated-engine sweeps through ``workbench bench``, small and at high time scales."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app

runner = CliRunner()
WIDTH = 100


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """Four runs: baseline and eagle3-topk4 of one sweep (time scale 20, 2 requests of 8 tokens), the baseline
    again at time scale 16, and again with 3 requests of 16 tokens."""
    root = tmp_path_factory.mktemp("runs")
    common = ["--levels", "1", "--no-progress", "--runs-dir", str(root)]
    for args in (
        ["baseline", "eagle3-topk4", "--time-scale", "20", "--requests", "2", "--max-new-tokens", "8"],
        ["baseline", "--time-scale", "16", "--requests", "2", "--max-new-tokens", "8"],
        ["baseline", "--time-scale", "20", "--requests", "3", "--max-new-tokens", "16"],
    ):
        result = runner.invoke(app, ["bench", *args, *common])
        assert result.exit_code == 0, result.output
    ids = {}
    for path in sorted(p.parent for p in root.glob("*/manifest.json")):
        text = (path / "manifest.json").read_text()
        scale = "16" if '"time_scale": 16.0' in text else "20"
        key = (
            ("eagle" if "eagle3" in path.name else "base") + scale + ("-long" if '"max_new_tokens": 16' in text else "")
        )
        ids[key] = path.name
    assert sorted(ids) == ["base16", "base20", "base20-long", "eagle20"]
    return root, ids


def test_list_fits_100_columns_says_simulated_and_sets_runs_apart(runs: tuple[Path, dict[str, str]]) -> None:
    root, ids = runs
    result = runner.invoke(app, ["runs", "list", "--runs-dir", str(root)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert all(len(line) <= WIDTH for line in lines), [line for line in lines if len(line) > WIDTH]
    assert lines[0].split() == ["run_id", "state", "kind", "units", "scale", "set"]
    rows = {line.split()[0]: line.split() for line in lines[1:5]}
    assert {r[2] for r in rows.values()} == {"simulated"}  # a simulated run is not "measured"
    assert {r[3] for r in rows.values()} == {"1/1"}  # (level, repeat) units stored / planned
    sets = {name: rows[run_id][5] for name, run_id in ids.items()}
    assert sets["base20"] == sets["eagle20"] and len(set(sets.values())) == 3  # one set per like-for-like group
    assert rows[ids["base16"]][4] == "16x" and rows[ids["base20"]][4] == "20x"
    legend = "\n".join(lines[5:])
    assert f"set {sets['base20']} (2 runs): time scale 20x, workload prompts=default out=8 " in legend
    assert "requests per level 2" in legend and "requests per level 3" in legend
    assert (
        "note: these runs are of 3 sets, which differ in time scale and workload and requests per level: "
        "figures of different sets are not like for like"
    ) in " ".join(legend.split())
    wide = runner.invoke(app, ["runs", "list", "--all-columns", "--runs-dir", str(root)])
    assert "units_stored" in wide.output and "levels_completed" not in wide.output


def test_compare_flags_runs_that_are_not_like_for_like(runs: tuple[Path, dict[str, str]]) -> None:
    root, ids = runs
    same = runner.invoke(app, ["runs", "compare", ids["base20"], ids["eagle20"], "--runs-dir", str(root)])
    assert same.exit_code == 0, same.output
    assert "not like for like" not in same.output and "(SIMULATED at 20x)" in same.output
    scales = runner.invoke(app, ["runs", "compare", ids["base20"], ids["base16"], "--runs-dir", str(root)])
    assert scales.exit_code == 0, scales.output
    flat = " ".join(scales.output.split())
    assert "note: not like for like, these runs differ in time scale (#1 20x, #2 16x):" in flat
    assert "workload" not in flat.split("note:")[1].split(":")[0]  # only what differs is named
    every = runner.invoke(app, ["runs", "compare", *ids.values(), "--runs-dir", str(root)])
    assert every.exit_code == 0, every.output
    flat = " ".join(every.output.split())
    assert "differ in time scale (" in flat and "; workload (" in flat and "; requests per level (" in flat
    assert all(len(line) <= WIDTH for line in every.output.splitlines())
