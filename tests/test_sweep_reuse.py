"""A sweep extended by levels reuses what is stored (issue 33): against real simulated servers, through
benchmark_variants and through `workbench bench`, the levels a stored run measured are copied, not measured again."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from workbench import benchmark_variants
from workbench.cli import app
from workbench.store import load_run

FAST = dict(max_new_tokens=8, time_scale=20.0, progress=False, requests_per_level=4)
ROW = ["rid", "prompt_id", "output_hash", "start_epoch_s", "ttft_ms"]


def _rows(run, concurrency: int) -> list[list]:
    rows = run.requests[run.requests["concurrency"] == concurrency]
    return rows.sort_values("request_index")[ROW].astype(str).values.tolist()


def test_a_level_added_in_the_middle_is_the_only_one_measured(tmp_path: Path) -> None:
    [first] = benchmark_variants(["baseline"], concurrency_levels=[1, 4], runs_dir=tmp_path, **FAST)
    stored = load_run(first)
    opened = []
    [second] = benchmark_variants(
        ["baseline"], concurrency_levels=[1, 2, 4], runs_dir=tmp_path, on_resume=opened.append, **FAST
    )
    assert second != first
    [resume] = opened
    assert (resume.stored, resume.total, resume.reused_from) == (2, 3, first)
    assert (
        f"(run {second.name}, copied from run {first.name}: the same sweep at other levels), measuring 1"
        in resume.line()
    )
    run = load_run(second)
    assert run.manifest["status"] == "complete"
    assert sorted(map(tuple, run.manifest["units_completed"])) == [(0, 0), (0, 1), (0, 2)]
    # c=4 was level 1 of the stored run and is level 2 here; c=1 and c=4 are the stored rows, not new ones
    assert run.manifest["reused_levels"] == {"run_id": stored.run_id, "units": [[0, 0, 0], [0, 1, 2]]}
    for c in (1, 4):
        assert _rows(run, c) == _rows(stored, c)
    new_rows = run.requests[run.requests["concurrency"] == 2]
    assert len(new_rows) == 4 and new_rows["start_epoch_s"].min() > stored.requests["end_epoch_s"].max()
    assert sorted(zip(run.levels["concurrency"], run.levels["level_index"])) == [(1, 0), (2, 1), (4, 2)]
    # the stored run is left as it was
    again = load_run(first)
    assert again.manifest["identity"] == stored.manifest["identity"] and len(again.requests) == 8
    # another label is another sweep: nothing reused
    opened.clear()
    benchmark_variants(
        ["baseline"], concurrency_levels=[1, 2], label="other", runs_dir=tmp_path, on_resume=opened.append, **FAST
    )
    assert (opened[0].stored, opened[0].reused_from) == (0, None)


def test_bench_with_one_more_level_than_a_stored_run_measures_only_that_level(tmp_path: Path) -> None:
    args = [
        "bench",
        "baseline",
        "--requests",
        "4",
        "--max-new-tokens",
        "8",
        "--time-scale",
        "20",
        "--runs-dir",
        str(tmp_path),
    ]
    runner = CliRunner()
    first = runner.invoke(app, [*args, "--levels", "1,2"])
    assert first.exit_code == 0, first.output
    assert "levels: 2 measured now, 0 reused from disk" in first.stdout
    second = runner.invoke(app, [*args, "--levels", "1,2,4"])
    assert second.exit_code == 0, second.output
    assert "levels: 1 measured now, 2 reused from disk" in second.stdout
    runs = [load_run(m.parent) for m in sorted(tmp_path.glob("*/manifest.json"))]
    extended = next(r for r in runs if len(r.manifest["plan"]["concurrency_levels"]) == 3)
    assert [u for _, _, u in extended.manifest["reused_levels"]["units"]] == [0, 1]


def test_level_keys_tell_the_same_level_in_two_plans() -> None:
    from workbench.sweeps._sweep_reuse import level_keys

    two = {"concurrency_levels": [1, 4], "request_rates": None, "requests_per_level": [16, 16]}
    three = {"concurrency_levels": [1, 2, 4], "request_rates": None, "requests_per_level": [16, 16, 16]}
    assert level_keys(two)[1] == level_keys(three)[2] and level_keys(two)[0] == level_keys(three)[0]
    # another request count is another level; with unique prompts the tag holds the level's index
    assert level_keys({**two, "requests_per_level": [16, 8]})[1] not in level_keys(three)
    assert level_keys({**two, "unique_prompts": True})[1] not in level_keys({**three, "unique_prompts": True})
    # a swept dimension: the value is part of the key, levels laid out value by value
    swept = {**two, "sweep_values": [128, 2048], "requests_per_level": [16] * 4}
    assert [k[2] for k in level_keys(swept)] == [128, 128, 2048, 2048]
    rates = {"concurrency_levels": [], "request_rates": [2.0, 4.0], "requests_per_level": [8, 8]}
    assert level_keys(rates)[0] == ("request_rate", 2.0, None, 8)
