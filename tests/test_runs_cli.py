"""``workbench runs`` with imported runs beside measured ones: the listing's order, their request
counts and the delete prompt, through the command (typer's CliRunner) and the store it reads."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import workbench as wb
from workbench.cli import app
from workbench.errors import ConfigError
from workbench.store import new_run, save_imported_run

T0 = datetime(2026, 6, 1, 9, 0, 0, tzinfo=timezone.utc)
runner = CliRunner()


def _import(
    root: Path, variant: str, *, levels: dict, requests: int = 0, measured_at: str | None = None, imported: datetime
) -> Path:
    """An imported run: level rows (and ``requests`` request rows) from a tool's file."""
    rows = pd.DataFrame(
        {
            "level_index": [0, 1],
            "repeat": [0, 0],
            "concurrency": [1, 4],
            "output_throughput_tok_s": [80.0, 250.0],
            **levels,
        }
    )
    reqs = pd.DataFrame({"level_index": [0] * requests, "repeat": [0] * requests, "e2e_ms": [100.0] * requests})
    path, _ = save_imported_run(
        variant=variant,
        engine="vllm",
        simulated=False,
        tool="vllm bench serve",
        tool_version="0.11.0",
        source_file=f"/data/{variant}.json",
        source_sha256=variant * 4,
        levels=rows,
        requests=reqs,
        quarantine=pd.DataFrame(),
        measured_at=measured_at,
        root=root,
        now=imported,
    )
    return path


@pytest.fixture()
def mixed(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    """A measured run started at T0; an import measured an hour before it; an import whose file has no
    time, imported half an hour after it; one with the tool's request rows; a folder without a manifest."""
    root = tmp_path / "runs"
    measured = new_run("baseline", engine="sim", root=root, now=lambda: T0, rng=random.Random(1))
    measured.finish()
    made = {
        "measured": measured.path,
        "earlier": _import(
            root,
            "earlier",
            levels={"num_requests": [16, 32]},
            measured_at="2026-06-01T08:00:00+00:00",
            imported=T0 + timedelta(days=1),
        ),
        "untimed": _import(root, "untimed", levels={}, imported=T0 + timedelta(minutes=30)),
        "rows": _import(
            root, "rows", levels={}, requests=5, measured_at="2026-06-01T10:00:00Z", imported=T0 + timedelta(days=2)
        ),
    }
    broken = root / "20260101T000000Z-broken-abcdef"
    broken.mkdir()
    (broken / "levels.parquet").write_bytes(b"")
    made["broken"] = broken
    return root, made


def test_list_is_oldest_first_with_untimed_imports_by_their_import_time(mixed) -> None:
    root, made = mixed
    table = wb.list_runs(root)
    assert list(table["path"]) == [str(made[k]) for k in ("earlier", "measured", "untimed", "rows", "broken")]
    listed = runner.invoke(app, ["runs", "list", "--runs-dir", str(root)])
    assert listed.exit_code == 0, listed.output
    order = [line.split()[0] for line in listed.stdout.split("\n\n")[0].splitlines()[1:]]  # the table, legend after
    assert order == [made[k].name for k in ("earlier", "measured", "untimed", "rows", "broken")]
    helped = runner.invoke(app, ["runs", "list", "--help"]).stdout.replace("│", " ")
    assert "by the time it was imported" in " ".join(helped.split())


def test_imported_runs_count_their_requests_or_leave_them_unknown(mixed) -> None:
    root, made = mixed
    counts = wb.list_runs(root).set_index("path")["num_requests"]
    assert counts[str(made["earlier"])] == 48  # the tool's per-level counts, 16 + 32
    assert counts[str(made["rows"])] == 5  # its request rows
    assert pd.isna(counts[str(made["untimed"])])  # nobody said: unknown, not 0
    shown = runner.invoke(app, ["runs", "show", made["untimed"].name, "--runs-dir", str(root)])
    assert shown.exit_code == 0 and "num_requests" not in shown.stdout
    shown = runner.invoke(app, ["runs", "show", made["earlier"].name, "--runs-dir", str(root)])
    assert "num_requests: 48" in shown.stdout


def test_delete_prompt_says_where_an_import_came_from(mixed) -> None:
    root, made = mixed
    kept = runner.invoke(app, ["runs", "delete", made["untimed"].name, "--runs-dir", str(root)], input="n\n")
    assert kept.exit_code == 0 and made["untimed"].is_dir()
    assert (
        f"delete {made['untimed'].name}: untimed on vllm (measured, imported from vllm bench serve "
        f"/data/untimed.json), complete, 2 unit(s) (level x repeat) stored? [y/N]"
    ) in kept.stdout
    assert "host None" not in kept.stdout and "request(s)" not in kept.stdout
    measured = runner.invoke(app, ["runs", "delete", made["measured"].name, "--runs-dir", str(root)], input="n\n")
    assert f"delete {made['measured'].name}: baseline on sim (simulated, host local)" in measured.stdout


def test_export_writes_csv_without_a_format_flag(mixed, tmp_path: Path) -> None:
    root, made = mixed
    out = tmp_path / "levels.csv"
    result = runner.invoke(app, ["runs", "export", made["earlier"].name, "--out", str(out), "--runs-dir", str(root)])
    assert result.exit_code == 0, result.output
    assert "wrote 2 rows to" in result.stderr
    assert list(pd.read_csv(out)["output_throughput_tok_s"]) == [80.0, 250.0]


def test_export_out_creates_no_folder_the_user_did_not_name(mixed, tmp_path: Path) -> None:
    root, made = mixed
    for out, message in (
        (tmp_path / "no" / "such" / "tree" / "levels.csv", "does not exist (nothing is created)"),
        (tmp_path, "is a folder; name a CSV file in it"),
    ):
        result = runner.invoke(
            app, ["runs", "export", made["earlier"].name, "--out", str(out), "--runs-dir", str(root)]
        )
        assert result.exit_code == 2 and message in result.output, result.output
    assert not (tmp_path / "no").exists()


def test_compare_names_an_import_by_its_tool_and_file_not_a_host(mixed) -> None:
    root, made = mixed
    result = runner.invoke(app, ["runs", "compare", made["earlier"].name, made["rows"].name, "--runs-dir", str(root)])
    assert result.exit_code == 0, result.output
    assert (
        f"#1 {made['earlier'].name}: earlier on vllm (measured), imported from vllm bench serve "
        "/data/earlier.json, vllm bench serve 0.11.0"
    ) in " ".join(result.stdout.split())  # wrapped to 100 columns
    assert "host None" not in result.stdout and "None" not in result.stdout


def test_run_software_names_the_tool_or_says_the_version_is_unknown() -> None:
    from workbench.sweeps._catalogue import run_software

    assert run_software({"kind": "measure", "sglang_version": "0.5.9"}) == "SGLang 0.5.9"
    assert run_software({"kind": "measure", "sglang_version": None}) == "SGLang version unknown"
    assert run_software({"kind": "import", "tool": "sglang.bench_serving", "tool_version": None}) == (
        "sglang.bench_serving version unknown"
    )
    assert run_software({"kind": "import", "tool": "x", "sglang_version": "0.5.23"}) == "SGLang 0.5.23"


def test_load_study_takes_the_run_ids_and_prefixes_the_cli_takes(mixed, monkeypatch) -> None:
    root, made = mixed
    prefix = made["earlier"].name[:-3]  # a unique prefix, as `workbench runs show` accepts
    study = wb.load_study([prefix, made["rows"].name], runs_dir=root)
    assert {m["run_id"] for m in study.manifests} == {made["earlier"].name, made["rows"].name}
    monkeypatch.setenv("WORKBENCH_RUNS_DIR", str(root))  # the default runs folder, as for every command
    assert wb.load_study([prefix]).manifests[0]["run_id"] == made["earlier"].name
    with pytest.raises(ConfigError, match=r"matches \d runs"):
        wb.load_study(["2026"], runs_dir=root)


def test_compare_refuses_a_metric_no_run_records_with_the_closest_and_every_recorded_one(mixed) -> None:
    root, made = mixed
    pair = [made["earlier"].name, made["rows"].name, "--runs-dir", str(root)]
    typo = runner.invoke(app, ["runs", "compare", *pair, "-m", "output_throughput_toks"])
    assert typo.exit_code == 2, typo.output
    assert "Traceback" not in typo.output and "-" * 3 not in typo.output  # no table of dashes
    line = typo.output.strip().replace("\n", " ")
    assert line.startswith("error: --metric output_throughput_toks: no such metric in the levels of ")
    assert "Did you mean output_throughput_tok_s?" in line
    assert line.endswith("Metrics these runs record: num_requests, output_throughput_tok_s")
    descriptor = runner.invoke(app, ["runs", "compare", *pair, "-m", "output_throughput_tok_s", "-m", "mode"])
    assert descriptor.exit_code == 2 and "--metric mode: no such metric" in descriptor.output
    known = runner.invoke(app, ["runs", "compare", *pair, "-m", "num_requests"])  # recorded by one run of the two
    assert known.exit_code == 0, known.output
    assert "16.0" in known.stdout and "-" in known.stdout
