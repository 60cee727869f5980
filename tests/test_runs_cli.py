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
from workbench.store import new_run, save_imported_run

T0 = datetime(2026, 6, 1, 9, 0, 0, tzinfo=timezone.utc)
runner = CliRunner()


def _import(root: Path, variant: str, *, levels: dict, requests: int = 0, measured_at: str | None = None,
            imported: datetime) -> Path:
    """An imported run: level rows (and ``requests`` request rows) from a tool's file."""
    rows = pd.DataFrame({"level_index": [0, 1], "repeat": [0, 0], "concurrency": [1, 4],
                         "output_throughput_tok_s": [80.0, 250.0], **levels})
    reqs = pd.DataFrame({"level_index": [0] * requests, "repeat": [0] * requests, "e2e_ms": [100.0] * requests})
    path, _ = save_imported_run(variant=variant, engine="vllm", simulated=False, tool="vllm bench serve",
                                tool_version="0.11.0", source_file=f"/data/{variant}.json", source_sha256=variant * 4,
                                levels=rows, requests=reqs, quarantine=pd.DataFrame(), measured_at=measured_at,
                                root=root, now=imported)
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
        "earlier": _import(root, "earlier", levels={"num_requests": [16, 32]},
                           measured_at="2026-06-01T08:00:00+00:00", imported=T0 + timedelta(days=1)),
        "untimed": _import(root, "untimed", levels={}, imported=T0 + timedelta(minutes=30)),
        "rows": _import(root, "rows", levels={}, requests=5, measured_at="2026-06-01T10:00:00Z",
                        imported=T0 + timedelta(days=2)),
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
    order = [line.split()[0] for line in listed.stdout.splitlines()[1:]]
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
    assert (f"delete {made['untimed'].name}: untimed on vllm (measured, imported from vllm bench serve "
            f"/data/untimed.json), complete, 2 level(s)? [y/N]") in kept.stdout
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
    for out, message in ((tmp_path / "no" / "such" / "tree" / "levels.csv", "does not exist (nothing is created)"),
                         (tmp_path, "is a folder; name a CSV file in it")):
        result = runner.invoke(app, ["runs", "export", made["earlier"].name, "--out", str(out), "--runs-dir", str(root)])
        assert result.exit_code == 2 and message in result.output, result.output
    assert not (tmp_path / "no").exists()


def test_compare_names_an_import_by_its_tool_and_file_not_a_host(mixed) -> None:
    root, made = mixed
    result = runner.invoke(app, ["runs", "compare", made["earlier"].name, made["rows"].name, "--runs-dir", str(root)])
    assert result.exit_code == 0, result.output
    assert (f"#1 {made['earlier'].name}: earlier on vllm (measured), imported from vllm bench serve "
            "/data/earlier.json, SGLang None") in result.stdout
    assert "host None" not in result.stdout
